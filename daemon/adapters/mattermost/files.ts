/**
 * Where a Mattermost post's files come from: GET /api/v4/files/{id}, with the
 * bot's token (files are not public), within the core's size bound.
 */
import type { Logger } from "pino";
import { downloadAttachment } from "../download.js";
import type { FileSource } from "../hand-over.js";
import { attachmentKind, type MattermostFileInfo, safeFileName } from "./inbound.js";

export interface MattermostFile {
  fileName: string;
  size?: number | undefined;
  info: MattermostFileInfo;
}

export const mattermostFileOf = (info: MattermostFileInfo): MattermostFile => ({ fileName: safeFileName(info.name, info.id), size: info.size, info });

export interface MattermostFilesDeps {
  log: Logger;
  /** GET /api/v4/files/{id} of the server. */
  fileUrl(fileId: string): string;
  /** The request's headers (the bearer token). */
  authHeaders(): Record<string, string>;
  attachmentTimeoutMs: number;
}

export function mattermostFiles(deps: MattermostFilesDeps, messageId: string): FileSource<MattermostFile> {
  const fetchImpl: typeof fetch = (url, init) => fetch(url, { ...init, headers: deps.authHeaders() });
  return {
    async fetch({ fileName, info }, maxBytes) {
      const result = await downloadAttachment(deps.fileUrl(info.id), {
        maxBytes,
        timeoutMs: deps.attachmentTimeoutMs,
        fetchImpl,
        ...(info.size !== undefined ? { reportedSize: info.size } : {}),
      });
      if (result.ok) {
        const mimeType = info.mime_type || result.contentType;
        return { kind: attachmentKind(mimeType), fileName, data: result.data, ...(mimeType ? { mimeType } : {}) };
      }
      if (result.reason === "too_large") return { fileName, reason: "too_large" };
      deps.log.warn({ messageId, fileName, detail: result.detail }, "mattermost file download failed");
      return { fileName, reason: "unavailable" };
    },
  };
}
