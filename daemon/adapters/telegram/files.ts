/**
 * Where a Telegram message's files come from: `getFile` names the file's
 * path, and the Bot API serves it under `${apiRoot}/file/bot${token}/`.
 */
import type { Api } from "grammy";
import type { Logger } from "pino";
import type { DroppedAttachment, InboundAttachment } from "../../vocabulary/adapter.js";
import { downloadAttachment } from "../download.js";
import type { FileSource } from "../hand-over.js";
import { describe, isFileTooBig, type Scrub } from "./errors.js";
import { toApiSignal } from "./fetch.js";
import type { FileRef } from "./inbound.js";

export interface TelegramFilesDeps {
  api: Api;
  /** The channel's token and Bot API root. */
  channel: { token: string; apiRoot: string };
  log: Logger;
  scrub: Scrub;
  /** Per attachment download, ms. */
  attachmentTimeoutMs: number;
}

/** The files of one update; `signal` aborts when the adapter stops, and a download under way then throws (the update must come again). */
export function telegramFiles(deps: TelegramFilesDeps, signal: AbortSignal): FileSource<FileRef> {
  const { api, channel, log, scrub } = deps;
  return {
    async fetch(ref, maxBytes) {
      const tooLarge: DroppedAttachment = { fileName: ref.fileName, reason: "too_large" };
      const unavailable: DroppedAttachment = { fileName: ref.fileName, reason: "unavailable" };
      try {
        const file = await api.getFile(ref.fileId, toApiSignal(signal));
        if (!file.file_path) return unavailable;
        const path = file.file_path.split("/").map(encodeURIComponent).join("/");
        const result = await downloadAttachment(`${channel.apiRoot}/file/bot${channel.token}/${path}`, {
          maxBytes,
          ...(file.file_size !== undefined ? { reportedSize: file.file_size } : {}),
          timeoutMs: deps.attachmentTimeoutMs,
        });
        if (result.ok)
          return {
            kind: ref.kind,
            fileName: ref.fileName,
            ...(ref.mimeType ? { mimeType: ref.mimeType } : {}),
            ...(ref.seconds !== undefined ? { seconds: ref.seconds } : {}),
            data: result.data,
          } satisfies InboundAttachment;
        if (result.reason === "too_large") return tooLarge;
        if (signal.aborted) throw new Error("stopped");
        log.warn({ fileName: ref.fileName, err: scrub(result.detail) }, "telegram attachment download failed");
      } catch (error) {
        // Stopping mid-download: the update must come again, not go through without its file.
        if (signal.aborted) throw error;
        if (isFileTooBig(error)) return tooLarge;
        log.warn({ fileName: ref.fileName, err: describe(error, scrub) }, "telegram attachment download failed");
      }
      return unavailable;
    },
  };
}
