/**
 * The one resolver every workspace route goes through: a client's path,
 * relative to the instance root, to an absolute path that is certainly inside
 * it. Lexical checks first (no I/O), then the symbolic links along the way.
 *
 * The path is used exactly as received: express decoded the query once, so a
 * double-encoded `%252e%252e` arrives as the literal name `%2e%2e` and stays
 * that name; nothing here decodes again.
 */
import { lstat, realpath } from "node:fs/promises";
import { join, sep } from "node:path";
import { badRequest, notFound } from "../errors.js";

/** Most filesystems refuse longer names (bytes, not characters). */
export const MAX_COMPONENT_BYTES = 255;

export interface WorkspacePath {
  /** Normalised, relative to the instance root, `/`-separated; `.` is the root itself. */
  rel: string;
  /** Absolute path on disk (lexically inside the root; links along it point inside). */
  abs: string;
  /** The normalised components (empty for the root). */
  parts: string[];
  isRoot: boolean;
}

// C0 and C1 controls, DEL, zero-width and bidirectional formatting characters, BOM,
// interlinear annotation marks, and the replacement character a broken encoding
// leaves behind (an overlong `%c0%ae` "dot" arrives as U+FFFD).
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffd]/u;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const codePoint = (ch: string) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;

/**
 * Splits and normalises a client path without touching the disk. Refuses (400)
 * NUL and other invisible characters, backslashes, absolute paths, a `..` that
 * leaves the root, overlong components, and compatibility characters that read
 * as `.`, `/` or `\` (fullwidth dots, the two-dot leader...).
 */
export function parseRelativePath(input: string): string[] {
  if (input.includes("\u0000")) throw badRequest("Path must not contain NUL bytes.");
  if (LONE_SURROGATE.test(input)) throw badRequest("Path is not valid Unicode (a lone surrogate).");
  const invisible = INVISIBLE.exec(input);
  if (invisible) throw badRequest(`Path must not contain control or invisible formatting characters (found ${codePoint(invisible[0])}).`);
  if (input.includes("\\")) throw badRequest("Path must use '/' as the separator; backslashes are not allowed.");
  if (input.startsWith("/")) throw badRequest("Path must be relative to the instance root, not absolute.");
  const parts: string[] = [];
  for (const part of input.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length === 0) throw badRequest("Path escapes the instance root.");
      parts.pop();
      continue;
    }
    if (Buffer.byteLength(part, "utf8") > MAX_COMPONENT_BYTES) {
      throw badRequest(`A path component is longer than ${MAX_COMPONENT_BYTES} bytes.`);
    }
    const compat = part.normalize("NFKC");
    if (compat !== part && (compat === "." || compat === ".." || /[/\\]/.test(compat))) {
      throw badRequest("Path contains characters that read as '.', '/' or '\\' (such as fullwidth dots); use plain ASCII for those.");
    }
    parts.push(part);
  }
  return parts;
}

const inside = (rootReal: string, real: string) => real === rootReal || real.startsWith(rootReal + sep);

const codeOf = (error: unknown): string | undefined =>
  error && typeof error === "object" && "code" in error && typeof error.code === "string" ? error.code : undefined;

/**
 * Resolves `input` inside `root`. Each existing component is looked at with
 * `lstat`; a symbolic link must resolve (realpath) to somewhere inside the
 * root, else 400. The walk stops at the first component that does not exist.
 */
export async function resolveInRoot(root: string, input: string): Promise<WorkspacePath> {
  const parts = parseRelativePath(input);
  let rootReal: string;
  try {
    rootReal = await realpath(root);
  } catch {
    // Only when something outside the API removed the tree.
    throw notFound("The instance's workspace does not exist.");
  }
  let current = rootReal;
  for (const part of parts) {
    const next = join(current, part);
    let stats: Awaited<ReturnType<typeof lstat>>;
    try {
      stats = await lstat(next);
    } catch (error) {
      const code = codeOf(error);
      if (code === "ENOENT" || code === "ENOTDIR") break;
      throw error;
    }
    if (stats.isSymbolicLink()) {
      let real: string;
      try {
        real = await realpath(next);
      } catch {
        throw badRequest("Path goes through a symbolic link that cannot be resolved.");
      }
      if (!inside(rootReal, real)) throw badRequest("Path goes through a symbolic link that points outside the instance root.");
      current = real;
    } else {
      current = next;
    }
  }
  return { rel: parts.length ? parts.join("/") : ".", abs: join(root, ...parts), parts, isRoot: parts.length === 0 };
}

/** A path safe to quote in a message: normalised already; long ones shortened. */
export function shown(path: WorkspacePath | string): string {
  const rel = typeof path === "string" ? path : path.rel;
  return rel.length > 120 ? `${rel.slice(0, 117)}...` : rel;
}
