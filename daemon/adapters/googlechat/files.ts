/**
 * Where a Google Chat message's files come from: an uploaded attachment's
 * `attachmentDataRef.resourceName`, fetched with `media.download`
 * (`GET {api}/v1/media/{resourceName}?alt=media`) as the app (its service
 * account's token); Chat does not say a size, so the download is counted and
 * cut at the core's limit. A Google Drive file is not the app's to read: it is
 * dropped as unavailable (the person is told).
 */
import type { Logger } from "pino";
import { downloadAttachment } from "../download.js";
import type { FileSource } from "../hand-over.js";
import { attachmentKind, type ChatAttachment, safeFileName } from "./inbound.js";

export interface ChatFile {
  fileName: string;
  size: undefined;
  view: ChatAttachment;
}

export const chatFilesOf = (views: readonly ChatAttachment[]): ChatFile[] =>
  views.map((view, i) => ({ fileName: safeFileName(view, i), size: undefined, view }));

export interface ChatFilesDeps {
  api: string;
  /** The service account's headers for a request to `url` (Authorization). */
  headers(url: string): Promise<Headers>;
  log: Logger;
  redact(text: string): string;
  attachmentTimeoutMs: number;
}

export function chatFiles(deps: ChatFilesDeps, messageId: string): FileSource<ChatFile> {
  return {
    async fetch({ fileName, view }, maxBytes) {
      const resource = view.attachmentDataRef?.resourceName;
      if (!resource) return { fileName, reason: "unavailable" };
      const url = `${deps.api}/v1/media/${resource.split("/").map(encodeURIComponent).join("/")}?alt=media`;
      const withToken: typeof fetch = async (input, init) => fetch(input, { ...init, headers: await deps.headers(url) });
      const result = await downloadAttachment(url, { maxBytes, timeoutMs: deps.attachmentTimeoutMs, fetchImpl: withToken }).catch(
        (error: unknown) => ({ ok: false, reason: "failed", detail: error instanceof Error ? error.message : String(error) }) as const,
      );
      if (result.ok) {
        const mimeType = view.contentType ?? result.contentType;
        return { kind: attachmentKind(mimeType), fileName, data: result.data, ...(mimeType ? { mimeType } : {}) };
      }
      if (result.reason === "too_large") return { fileName, reason: "too_large" };
      deps.log.warn({ messageId, fileName, detail: deps.redact(result.detail) }, "google chat attachment download failed");
      return { fileName, reason: "unavailable" };
    },
  };
}
