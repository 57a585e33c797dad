/**
 * Where a Discord message's files come from: each attachment's CDN URL,
 * which needs no token.
 */
import type { Logger } from "pino";
import { downloadAttachment } from "../download.js";
import type { FileSource } from "../hand-over.js";
import { attachmentKind, safeFileName, type DiscordAttachmentView } from "./inbound.js";

/** One attachment as the hand-over sees it: its safe name, its declared size, and where it lies. */
export interface DiscordFile {
  fileName: string;
  size: number;
  view: DiscordAttachmentView;
}

export const discordFileOf = (view: DiscordAttachmentView): DiscordFile => ({ fileName: safeFileName(view.name, view.id), size: view.size, view });

export interface DiscordFilesDeps {
  log: Logger;
  /** Longest one attachment download may take, ms. */
  attachmentTimeoutMs: number;
}

/** The files of message `messageId` (named in the log when a download fails). */
export function discordFiles(deps: DiscordFilesDeps, messageId: string): FileSource<DiscordFile> {
  return {
    async fetch({ fileName, view }, maxBytes) {
      const result = await downloadAttachment(view.url, { maxBytes, reportedSize: view.size, timeoutMs: deps.attachmentTimeoutMs });
      if (result.ok) {
        const mimeType = view.contentType ?? result.contentType;
        const seconds = view.duration ?? undefined;
        return {
          kind: attachmentKind(view.contentType),
          fileName,
          data: result.data,
          ...(mimeType ? { mimeType } : {}),
          ...(seconds !== undefined ? { seconds } : {}),
        };
      }
      if (result.reason === "too_large") return { fileName, reason: "too_large" };
      deps.log.warn({ messageId, fileName, detail: result.detail }, "discord attachment download failed");
      return { fileName, reason: "unavailable" };
    },
  };
}
