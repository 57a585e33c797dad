/**
 * Where a LINE message's content comes from: `GET {data_api}/v2/bot/message/{id}/content`
 * with the channel access token (developers.line.biz, "Get content"), or the
 * sender app's own URL when `contentProvider.type` is "external". Bounded by
 * the core's admission (download.ts counts the bytes). Audio is marked
 * `audio` with its length, so transcription needs nothing else.
 */
import type { Logger } from "pino";
import { downloadAttachment } from "../download.js";
import type { FileSource } from "../hand-over.js";
import type { LineFile } from "./inbound.js";

export interface LineFilesDeps {
  log: Logger;
  redact(text: string): string;
  channelAccessToken: string;
  dataApi: string;
  attachmentTimeoutMs: number;
}

const MIME_BY_KIND: Record<LineFile["kind"], string | undefined> = { photo: "image/jpeg", video: "video/mp4", audio: "audio/m4a", document: undefined };

export function lineFiles(deps: LineFilesDeps): FileSource<LineFile> {
  const authorization = `Bearer ${deps.channelAccessToken}`;
  const withToken: typeof fetch = (input, init) => fetch(input, { ...init, headers: { authorization } });
  return {
    async fetch(file, maxBytes) {
      const url = file.externalUrl ?? `${deps.dataApi}/v2/bot/message/${encodeURIComponent(file.messageId)}/content`;
      const result = await downloadAttachment(url, {
        maxBytes,
        ...(file.size !== undefined ? { reportedSize: file.size } : {}),
        timeoutMs: deps.attachmentTimeoutMs,
        // The token goes only to LINE, never to a sender's external URL.
        ...(file.externalUrl ? {} : { fetchImpl: withToken }),
      });
      if (result.ok) {
        const mimeType = result.contentType?.split(";")[0]?.trim() || MIME_BY_KIND[file.kind];
        const kind = file.kind === "audio" ? "audio" : file.kind === "photo" ? "photo" : file.kind === "video" ? "video" : "document";
        const seconds = file.kind === "audio" && file.durationMs !== undefined ? Math.ceil(file.durationMs / 1000) : undefined;
        return { kind, fileName: file.fileName, data: result.data, ...(mimeType ? { mimeType } : {}), ...(seconds !== undefined ? { seconds } : {}) };
      }
      if (result.reason === "too_large") return { fileName: file.fileName, reason: "too_large" };
      deps.log.warn({ messageId: file.messageId, fileName: file.fileName, detail: deps.redact(result.detail) }, "line content download failed");
      return { fileName: file.fileName, reason: "unavailable" };
    },
  };
}
