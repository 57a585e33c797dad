/**
 * Instance trees in control-plane snapshots: every directory, file (base64)
 * and link with its mode and modification time, so importing a snapshot
 * gives back the same listings, contents and times it was taken with.
 */
import type { Stats } from "node:fs";
import { chmod, lstat, lutimes, mkdir, readdir, readFile, readlink, symlink, utimes, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { z } from "zod";
import { ApiError } from "../errors.js";
import { ID_PATTERN } from "../store/schema.js";
import { parseRelativePath } from "./paths.js";

export type TreeEntry =
  | { path: string; type: "dir"; mode: number; mtime: string }
  | { path: string; type: "file"; mode: number; mtime: string; data: string }
  | { path: string; type: "symlink"; target: string; mtime: string };

const codeOf = (error: unknown): string | undefined =>
  error && typeof error === "object" && "code" in error && typeof error.code === "string" ? error.code : undefined;

/** Every entry under `root` (not the root itself), parents before children, names in byte order. */
export async function exportTree(root: string): Promise<TreeEntry[]> {
  const out: TreeEntry[] = [];
  async function walk(dir: string, rel: string): Promise<void> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (codeOf(error) === "ENOENT" && rel === "") return;
      throw error;
    }
    names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const name of names) {
      const abs = join(dir, name);
      const path = rel ? `${rel}/${name}` : name;
      const stats: Stats = await lstat(abs);
      const mtime = stats.mtime.toISOString();
      const mode = stats.mode & 0o7777;
      if (stats.isSymbolicLink()) out.push({ path, type: "symlink", target: await readlink(abs), mtime });
      else if (stats.isDirectory()) {
        out.push({ path, type: "dir", mode, mtime });
        await walk(abs, path);
      } else if (stats.isFile()) out.push({ path, type: "file", mode, mtime, data: (await readFile(abs)).toString("base64") });
      // Sockets, fifos and devices cannot come from the API: left out.
    }
  }
  await walk(root, "");
  return out;
}

const Mode = z.number().int().min(0).max(0o7777);
const Mtime = z.iso.datetime();
const TreePath = z
  .string()
  .min(1)
  .superRefine((path, ctx) => {
    try {
      if (parseRelativePath(path).join("/") !== path) ctx.addIssue({ code: "custom", message: "Path must be normalised (no '.', '..' or empty components)" });
    } catch (error) {
      ctx.addIssue({ code: "custom", message: error instanceof Error ? error.message : "Invalid path" });
    }
  });
const Entry = z.discriminatedUnion("type", [
  z.strictObject({ path: TreePath, type: z.literal("dir"), mode: Mode, mtime: Mtime }),
  z.strictObject({ path: TreePath, type: z.literal("file"), mode: Mode, mtime: Mtime, data: z.base64() }),
  z.strictObject({ path: TreePath, type: z.literal("symlink"), target: z.string().min(1).max(4096), mtime: Mtime }),
]);
const Trees = z.record(z.string().regex(ID_PATTERN, "Must be an instance id in the form the API mints"), z.array(Entry));

/**
 * Where a link's target may point: relative, inside the root. Leading `..`
 * only (climbing real directories, since tree paths never go through a link),
 * then plain names; a `..` after a name could climb out of another link's
 * target, so it is refused. Returns why not, or undefined.
 */
export function linkTargetProblem(linkPath: string, target: string): string | undefined {
  if (target.startsWith("/")) return "Link target must be relative to the link, not absolute";
  const parts = target.split("/");
  let up = 0;
  let i = 0;
  for (; i < parts.length && (parts[i] === ".." || parts[i] === "." || parts[i] === ""); i++) if (parts[i] === "..") up++;
  const names = parts.slice(i);
  if (names.includes("..")) return "Link target must not go up ('..') after a name";
  try {
    if (names.length) parseRelativePath(names.join("/"));
  } catch (error) {
    return `Link target: ${error instanceof Error ? error.message : "invalid"}`;
  }
  if (up > linkPath.split("/").length - 1) return "Link target points outside the instance root";
  return undefined;
}

/** Checks a snapshot's `workspaces` member; 422 in the contract's form when it is wrong. */
export function parseTrees(value: unknown): Record<string, TreeEntry[]> {
  const parsed = Trees.safeParse(value);
  if (!parsed.success) {
    throw new ApiError(
      422,
      parsed.error.issues.map((issue) => ({
        loc: ["body", "workspaces", ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))],
        msg: issue.message,
        type: issue.code,
      })),
    );
  }
  for (const [instanceId, entries] of Object.entries(parsed.data)) {
    const kinds = new Map<string, TreeEntry["type"]>();
    entries.forEach((entry, index) => {
      const problem = (msg: string) => new ApiError(422, [{ loc: ["body", "workspaces", instanceId, index, "path"], msg, type: "value_error" }]);
      if (kinds.has(entry.path)) throw problem("Path appears twice in the tree");
      kinds.set(entry.path, entry.type);
      const link = entry.type === "symlink" ? linkTargetProblem(entry.path, entry.target) : undefined;
      if (link) throw new ApiError(422, [{ loc: ["body", "workspaces", instanceId, index, "target"], msg: link, type: "value_error" }]);
    });
    entries.forEach((entry, index) => {
      const parts = entry.path.split("/");
      for (let i = 1; i < parts.length; i++) {
        const kind = kinds.get(parts.slice(0, i).join("/"));
        if (kind !== undefined && kind !== "dir") {
          throw new ApiError(422, [
            { loc: ["body", "workspaces", instanceId, index, "path"], msg: "A parent of this path is not a directory", type: "value_error" },
          ]);
        }
      }
    });
  }
  return parsed.data;
}

/** Rebuilds a tree under `root` (which should be empty): contents, then modes, then times. */
export async function importTree(root: string, entries: TreeEntry[]): Promise<void> {
  await mkdir(root, { recursive: true });
  const depth = (e: TreeEntry) => e.path.split("/").length;
  const ordered = [...entries].sort((a, b) => depth(a) - depth(b) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const entry of ordered) {
    const abs = join(root, ...entry.path.split("/"));
    // Parents a tree leaves out are created; the checks in parseTrees keep files off the way.
    await mkdir(entry.type === "dir" ? abs : dirname(abs), { recursive: true });
    if (entry.type === "file") await writeFile(abs, Buffer.from(entry.data, "base64"));
    else if (entry.type === "symlink") await symlink(entry.target, abs);
  }
  // Modes after every child exists (a read-only folder would refuse them); times last,
  // since creating a child changes its folder's time and chmod does not.
  for (const entry of ordered) {
    if (entry.type !== "symlink") await chmod(join(root, ...entry.path.split("/")), entry.mode);
  }
  for (const entry of ordered) {
    const abs = join(root, ...entry.path.split("/"));
    const at = new Date(entry.mtime);
    if (entry.type === "symlink") await lutimes(abs, at, at);
    else await utimes(abs, at, at);
  }
}
