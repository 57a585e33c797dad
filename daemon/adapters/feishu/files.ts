/**
 * Where a Feishu message's files come from: `im.v1.messageResource.get`
 * (the message's id and the file's key; `type` "image" for images, "file"
 * for files, audio and video), with the tenant token. Feishu declares no
 * size before the download, so the stream is counted and cut off at the
 * core's limit.
 */
import type { Readable } from "node:stream";
import type { Logger } from "pino";
import type * as lark from "@larksuiteoapi/node-sdk";
import type { FileSource } from "../hand-over.js";
import type { FeishuFileRef } from "./inbound.js";

export interface FeishuFilesDeps {
  client: lark.Client;
  log: Logger;
  redact(text: string): string;
  /** Longest one download may take, ms. */
  attachmentTimeoutMs: number;
}

/** Reads `stream` up to `maxBytes`: the bytes, or "too_large" once it goes over (the rest is not read). */
export async function readBounded(stream: Readable, maxBytes: number, signal: AbortSignal): Promise<Buffer | "too_large"> {
  const chunks: Buffer[] = [];
  let total = 0;
  const onAbort = () => stream.destroy(new Error("download timed out"));
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const chunk of stream) {
      const piece = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      total += piece.length;
      if (total > maxBytes) {
        stream.destroy();
        return "too_large";
      }
      chunks.push(piece);
    }
    return Buffer.concat(chunks);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

export function feishuFiles(deps: FeishuFilesDeps): FileSource<FeishuFileRef & { size?: undefined }> {
  return {
    async fetch(file, maxBytes) {
      const signal = AbortSignal.timeout(deps.attachmentTimeoutMs);
      try {
        const resource = await deps.client.im.messageResource.get({
          path: { message_id: file.messageId, file_key: file.key },
          params: { type: file.resource },
        });
        const read = await readBounded(resource.getReadableStream(), maxBytes, signal);
        if (read === "too_large") return { fileName: file.fileName, reason: "too_large" };
        const headerType = (resource.headers as Record<string, unknown> | undefined)?.["content-type"];
        const mimeType = typeof headerType === "string" ? headerType.split(";")[0]!.trim() : mimeOf(file);
        return {
          kind: file.kind,
          fileName: file.fileName,
          data: read,
          ...(mimeType ? { mimeType } : {}),
          ...(file.seconds !== undefined ? { seconds: file.seconds } : {}),
        };
      } catch (error) {
        deps.log.warn(
          { messageId: file.messageId, fileName: file.fileName, err: deps.redact(error instanceof Error ? error.message : String(error)) },
          "feishu file download failed",
        );
        return { fileName: file.fileName, reason: "unavailable" };
      }
    },
  };
}

/** When Feishu names no type: what its message types hold. */
function mimeOf(file: FeishuFileRef): string | undefined {
  if (file.kind === "audio") return "audio/ogg";
  if (file.kind === "photo") return "image/png";
  if (file.kind === "video") return "video/mp4";
  return undefined;
}
