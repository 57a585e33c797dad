/**
 * One file of a reply, made ready for the chat: downloaded from the instance
 * (`files/download` through the typed client) within the platform's limit for
 * its kind, or the line to say instead (too big, the key lacks `files`, no
 * such file, the chat takes no files). Sending it, and journaling it as sent,
 * is delivery's (delivery.ts), so a file goes out at most once across a
 * restart, like a chunk.
 */
import { posix } from "node:path";
import type { Readable } from "node:stream";
import { ServiceError, type ServiceClient } from "../../shared/client/index.js";
import { formatBytes } from "../../shared/util/format-bytes.js";
import { safeBaseName } from "../../shared/util/names.js";
import type { ChatAdapter, FileCapability, OutboundFile } from "../vocabulary/adapter.js";
import { noticeText } from "./notices.js";
import { fileKindOf } from "./reply-files.js";

/** A file ready to send, or the line that says why not. */
export type PreparedFile =
  /** `files`: the adapter's file capability, which sends it. */
  | { ok: true; file: OutboundFile; files: FileCapability }
  | { ok: false; notice: string; reason: "too_large" | "refused" | "missing" | "unavailable" | "unsupported" };

export interface FileFetchDeps {
  client: ServiceClient;
  /** Ends a download when the daemon halts. */
  signal: AbortSignal;
}

/** Downloads workspace `path` of `instanceId` for `adapter`, within its limit for the file's kind. Never throws but on the halt. */
export async function prepareFile(deps: FileFetchDeps, instanceId: string, path: string, adapter: ChatAdapter): Promise<PreparedFile> {
  const { kind, mimeType } = fileKindOf(path);
  const files = adapter.files;
  const limit = files?.limits[kind];
  if (files === undefined || limit === undefined) return { ok: false, notice: noticeText.fileNotSupported(path), reason: "unsupported" };
  const tooBig = (size: number): PreparedFile => ({
    ok: false,
    notice: noticeText.fileTooBig(path, formatBytes(size), formatBytes(limit)),
    reason: "too_large",
  });
  let download: Awaited<ReturnType<ServiceClient["downloadFile"]>>;
  try {
    download = await deps.client.downloadFile({ instance_id: instanceId, query: { path }, signal: deps.signal });
  } catch (error) {
    if (deps.signal.aborted) throw error;
    return failedDownload(error, path);
  }
  // The size the service declares, before reading a byte of a file that cannot be sent anyway.
  if (download.size !== undefined && download.size > limit) {
    download.body.destroy();
    return tooBig(download.size);
  }
  const data = await readAtMost(download.body, limit);
  if (data === "too_large") return tooBig(limit + 1);
  const fileName = safeBaseName(posix.basename(path)) || "file";
  return { ok: true, file: { path, fileName, mimeType, kind, data }, files };
}

function failedDownload(error: unknown, path: string): PreparedFile {
  if (error instanceof ServiceError && error.kind === "service") {
    if (error.status === 401 || error.status === 403) return { ok: false, notice: noticeText.fileRefused(path), reason: "refused" };
    if (error.status === 404 || error.status === 400) return { ok: false, notice: noticeText.fileMissing(path), reason: "missing" };
  }
  return { ok: false, notice: noticeText.fileUnavailable(path), reason: "unavailable" };
}

/** The body's bytes, or "too_large" as soon as it passes `limit` (the rest is not read). */
async function readAtMost(body: Readable, limit: number): Promise<Buffer | "too_large"> {
  const parts: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const part = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    total += part.length;
    if (total > limit) {
      body.destroy();
      return "too_large";
    }
    parts.push(part);
  }
  return Buffer.concat(parts);
}
