/**
 * Files the agent names in its reply, to be sent to the chat: a `MEDIA:
 * <path>` line, a Markdown image `![alt](path)` or a Markdown link
 * `[label](path)` to a path in the instance's workspace. Pure: the reply's
 * text without those references (an image's alt text and a link's label
 * stay), and the paths, in order, each once.
 *
 * A path is the files API's (relative to the instance's root): no scheme
 * (`https:`, `mailto:` stay links), no `..` part, no absolute path, no
 * fragment-only anchor; `./` and a leading `/workspace`-style slash are not
 * accepted either, so what is sent is exactly what the agent wrote.
 */
import { posix } from "node:path";

export interface ReplyFiles {
  /** The reply without the file references (trimmed; "" when nothing else was said). */
  text: string;
  /** Workspace paths, in the order named, without repeats. */
  files: string[];
}

/** The most files one reply sends (more are named in the text and left alone). */
export const MAX_REPLY_FILES = 10;

/** A `MEDIA: <path>` line (groups 1), or a Markdown image or link (groups 2-3), in one pass so files keep the order they were named in. */
const REFERENCE = /^[ \t]*MEDIA:[ \t]*(\S(?:.*\S)?)[ \t]*$|!?\[([^\]\n]*)\]\(\s*<?([^()\s<>]+)>?\s*\)/gm;

/** Whether `path` names a file in the workspace (not a URL, not outside the tree). */
export function isWorkspacePath(path: string): boolean {
  if (!path || path.length > 1024 || /^[a-z][a-z0-9+.-]*:/i.test(path) || path.startsWith("/") || path.startsWith("#")) return false;
  if (path.includes("\\") || /[\0-\x1f]/.test(path)) return false;
  const parts = path.split("/");
  if (parts.some((p) => p === ".." || p === "." || p === "")) return false;
  return posix.normalize(path) === path;
}

/** The reply's text and the workspace files it names. */
export function extractReplyFiles(reply: string): ReplyFiles {
  const files: string[] = [];
  const add = (path: string): boolean => {
    if (!isWorkspacePath(path) || (!files.includes(path) && files.length >= MAX_REPLY_FILES)) return false;
    if (!files.includes(path)) files.push(path);
    return true;
  };
  // Code blocks are the agent showing text, not naming files: left as they are.
  const parts = reply.split(/(```[\s\S]*?(?:```|$))/);
  const text = parts
    .map((part, i) => {
      if (i % 2 === 1) return part;
      return part.replace(REFERENCE, (ref, media: string | undefined, label: string | undefined, target: string | undefined) => {
        if (media !== undefined) return add(media) ? "" : ref;
        return target !== undefined && add(target) ? (label ?? "") : ref;
      });
    })
    .join("");
  return { text: text.replace(/\n{3,}/g, "\n\n").trim(), files };
}

/** How a file is shown: a photo, a voice note, or a document (anything else). */
export type OutboundFileKind = "photo" | "voice" | "document";

const PHOTO = new Set(["png", "jpg", "jpeg", "gif", "webp"]);
const VOICE = new Set(["ogg", "oga", "opus", "mp3", "m4a"]);
const MIME: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  ogg: "audio/ogg",
  oga: "audio/ogg",
  opus: "audio/ogg",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  pdf: "application/pdf",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
};

/** The kind and media type of a file, by its extension. */
export function fileKindOf(path: string): { kind: OutboundFileKind; mimeType: string } {
  const ext = posix.extname(path).slice(1).toLowerCase();
  const kind: OutboundFileKind = PHOTO.has(ext) ? "photo" : VOICE.has(ext) ? "voice" : "document";
  return { kind, mimeType: MIME[ext] ?? "application/octet-stream" };
}
