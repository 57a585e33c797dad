/**
 * Workspace file operations on paths the resolver already vetted
 * (`paths.ts`). Asynchronous only: nothing here blocks the event loop. File
 * system errors become the contract's statuses: a missing path 404, a path
 * in the way 409, a path of the wrong kind 400.
 */
import { constants, type Stats } from "node:fs";
import { lstat, mkdir, open, readdir, rename, rm, stat, writeFile, type FileHandle } from "node:fs/promises";
import { dirname, posix } from "node:path";
import type { ReadStream } from "node:fs";
import { ApiError, badRequest, conflict, notFound, tooLarge } from "../errors.js";
import { shown, type WorkspacePath } from "./paths.js";

/** `GET files/content` reads text up to this size; bigger files go through download. */
export const TEXT_READ_LIMIT = 1024 * 1024;

export interface DirectoryEntryView {
  name: string;
  path: string;
  is_dir: boolean;
  size: number;
  mod_time: string;
  permissions: string;
}

const codeOf = (error: unknown): string | undefined =>
  error && typeof error === "object" && "code" in error && typeof error.code === "string" ? error.code : undefined;

/** Maps what the file system said to a status; anything unexpected is rethrown (500). */
function fsError(error: unknown, path: WorkspacePath, creating: boolean): unknown {
  switch (codeOf(error)) {
    case "ENOENT":
      return notFound(`Path not found: ${shown(path)}.`);
    case "ENOTDIR":
      return creating ? conflict(`A file is in the way of ${shown(path)}.`) : notFound(`Path not found: ${shown(path)}.`);
    case "EEXIST":
      return conflict(`Path already exists: ${shown(path)}.`);
    case "EISDIR":
      return badRequest(`Path is a directory: ${shown(path)}.`);
    case "ENAMETOOLONG":
      return badRequest("Path is too long for the file system.");
    case "ENOTEMPTY":
      return conflict(`Path already exists: ${shown(path)}.`);
    default:
      return error;
  }
}

/** `drwxr-xr-x` style, from a mode. */
export function permissionString(mode: number): string {
  const type = mode & constants.S_IFMT;
  let out = type === constants.S_IFDIR ? "d" : type === constants.S_IFLNK ? "l" : "-";
  const letters = "rwxrwxrwx";
  for (let i = 0; i < 9; i++) out += mode & (1 << (8 - i)) ? letters[i] : "-";
  return out;
}

function entryOf(name: string, rel: string, stats: Stats): DirectoryEntryView {
  const isDir = stats.isDirectory();
  return {
    name,
    path: rel === "." ? name : `${rel}/${name}`,
    is_dir: isDir,
    size: isDir ? 0 : stats.size,
    mod_time: stats.mtime.toISOString(),
    permissions: permissionString(stats.mode),
  };
}

async function statOf(path: WorkspacePath): Promise<Stats> {
  try {
    return await stat(path.abs);
  } catch (error) {
    throw fsError(error, path, false);
  }
}

async function lstatOrNull(abs: string): Promise<Stats | null> {
  try {
    return await lstat(abs);
  } catch (error) {
    const code = codeOf(error);
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw error;
  }
}

export async function listDirectory(path: WorkspacePath): Promise<{ path: string; entries: DirectoryEntryView[] }> {
  const stats = await statOf(path);
  if (!stats.isDirectory()) throw badRequest(`Path is not a directory: ${shown(path)}.`);
  let names: string[];
  try {
    names = await readdir(path.abs);
  } catch (error) {
    throw fsError(error, path, false);
  }
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const entries = await Promise.all(
    names.map(async (name) => {
      // lstat: a link is shown as the link, never followed out of the tree.
      const entry = await lstatOrNull(`${path.abs}/${name}`);
      return entry && entryOf(name, path.rel, entry);
    }),
  );
  return { path: path.rel, entries: entries.filter((e): e is DirectoryEntryView => e !== null) };
}

/** Opens a regular file (not a directory) and stats it; the caller owns the handle. */
async function openFile(path: WorkspacePath): Promise<{ handle: FileHandle; size: number }> {
  let handle: FileHandle;
  try {
    handle = await open(path.abs, "r");
  } catch (error) {
    throw fsError(error, path, false);
  }
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) throw badRequest(`Path is a directory: ${shown(path)}.`);
    return { handle, size: stats.size };
  } catch (error) {
    await handle.close();
    throw error instanceof ApiError ? error : fsError(error, path, false);
  }
}

export async function readText(path: WorkspacePath, limit = TEXT_READ_LIMIT): Promise<string> {
  const { handle, size } = await openFile(path);
  try {
    if (size > limit) {
      throw tooLarge(`File is ${size} bytes; files/content reads text files up to ${limit} bytes. Use files/download for it.`);
    }
    const bytes = await handle.readFile();
    if (bytes.length > limit) throw tooLarge(`File is over ${limit} bytes; use files/download for it.`);
    if (bytes.includes(0)) throw badRequest(`File is binary, not UTF-8 text: ${shown(path)}. Use files/download for it.`);
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      throw badRequest(`File is not valid UTF-8 text: ${shown(path)}. Use files/download for it.`);
    }
  } catch (error) {
    throw error instanceof ApiError ? error : fsError(error, path, false);
  } finally {
    await handle.close();
  }
}

/** Creates the parent directories of `path`; a file in the way is a 409. */
async function ensureParent(path: WorkspacePath): Promise<void> {
  try {
    await mkdir(dirname(path.abs), { recursive: true });
  } catch (error) {
    const code = codeOf(error);
    if (code === "EEXIST" || code === "ENOTDIR") throw conflict(`A file is in the way of ${shown(path)}.`);
    throw fsError(error, path, true);
  }
}

/**
 * Puts a finished temporary file in place of `path` (creating parents,
 * replacing a file, refusing to replace a directory). The rename is atomic:
 * readers see the old file or the new one, never half of it.
 */
export async function placeFile(tempPath: string, path: WorkspacePath): Promise<void> {
  if (path.isRoot) throw conflict("Path is the instance root, a directory.");
  const existing = await lstatOrNull(path.abs);
  if (existing?.isDirectory()) throw conflict(`Path is a directory: ${shown(path)}.`);
  await ensureParent(path);
  try {
    await rename(tempPath, path.abs);
  } catch (error) {
    const code = codeOf(error);
    if (code === "EISDIR" || code === "ENOTEMPTY" || code === "EEXIST") throw conflict(`Path is a directory: ${shown(path)}.`);
    throw fsError(error, path, true);
  }
}

/** Writes text through a temporary file and an atomic rename. */
export async function writeText(path: WorkspacePath, content: string, tempPath: string): Promise<void> {
  await writeFile(tempPath, content, "utf8");
  try {
    await placeFile(tempPath, path);
  } catch (error) {
    await rm(tempPath, { force: true });
    throw error;
  }
}

/** `mkdir -p`: an existing directory is fine, a file anywhere on the way is a 409. */
export async function makeDirectory(path: WorkspacePath): Promise<void> {
  try {
    await mkdir(path.abs, { recursive: true });
  } catch (error) {
    const code = codeOf(error);
    if (code === "EEXIST" || code === "ENOTDIR") throw conflict(`A file is in the way of ${shown(path)}.`);
    throw fsError(error, path, true);
  }
  const stats = await statOf(path);
  if (!stats.isDirectory()) throw conflict(`A file is in the way of ${shown(path)}.`);
}

export async function movePath(source: WorkspacePath, destination: WorkspacePath): Promise<void> {
  if (source.isRoot) throw badRequest("The instance root cannot be moved.");
  if (destination.isRoot) throw conflict("Destination already exists: the instance root.");
  // A missing source is 404 whatever the destination, onto itself included.
  if (!(await lstatOrNull(source.abs))) throw notFound(`Path not found: ${shown(source)}.`);
  if (destination.rel === source.rel || destination.rel.startsWith(`${source.rel}/`)) {
    throw badRequest("A directory cannot be moved into itself.");
  }
  if (await lstatOrNull(destination.abs)) throw conflict(`Destination already exists: ${shown(destination)}.`);
  await ensureParent(destination);
  try {
    await rename(source.abs, destination.abs);
  } catch (error) {
    throw fsError(error, destination, true);
  }
}

export async function removePath(path: WorkspacePath): Promise<void> {
  if (path.isRoot) throw badRequest("The instance root cannot be deleted.");
  if (!(await lstatOrNull(path.abs))) throw notFound(`Path not found: ${shown(path)}.`);
  // rm removes a link itself, never what it points to.
  await rm(path.abs, { recursive: true, force: true });
}

/**
 * `attachment; filename="..."`, plus RFC 5987 `filename*` when the name is
 * not plain printable ASCII; the quoted fallback replaces what it cannot say.
 */
export function attachmentDisposition(name: string): string {
  const ascii = /^[\x20-\x7e]*$/.test(name);
  const fallback = name.replace(/[^\x20-\x7e]/gu, "_").replace(/["\\]/g, "\\$&");
  if (ascii) return `attachment; filename="${fallback}"`;
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

export interface OpenedFile {
  stream: ReadStream;
  size: number;
  name: string;
}

/** Opens a file for streaming; the descriptor is held, so a concurrent move cannot swap it. */
export async function openForDownload(path: WorkspacePath): Promise<OpenedFile> {
  if (path.isRoot) throw badRequest("Path is a directory: the instance root.");
  const { handle, size } = await openFile(path);
  return { stream: handle.createReadStream(), size, name: posix.basename(path.rel) };
}
