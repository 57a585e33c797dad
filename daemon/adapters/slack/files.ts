/**
 * Where a Slack message's files come from: `url_private_download` (else
 * `url_private`), served only with the bot token in `Authorization` (anyone
 * else gets Slack's sign-in page, which is recognised and dropped).
 */
import type { Logger } from "pino";
import { downloadAttachment } from "../download.js";
import type { FileSource } from "../hand-over.js";
import { attachmentKind, isAudio, safeFileName, secondsOf, type SlackFile as SlackFileView } from "./inbound.js";

/** One file as the hand-over sees it: its safe name, its declared size, and Slack's description. */
export interface SlackFile {
  fileName: string;
  size: number | undefined;
  view: SlackFileView;
}

export const slackFileOf = (view: SlackFileView): SlackFile => ({ fileName: safeFileName(view), size: view.size ?? undefined, view });

export interface SlackFilesDeps {
  log: Logger;
  /** Removes tokens from any text before it reaches a log. */
  redact(text: string): string;
  /** The bot token: Slack serves `url_private` files only to it. */
  botToken: string;
  /** Longest one file download may take, ms. */
  attachmentTimeoutMs: number;
}

/** The files of message `messageId` (named in the log when a download fails). */
export function slackFiles(deps: SlackFilesDeps, messageId: string): FileSource<SlackFile> {
  const authorization = `Bearer ${deps.botToken}`;
  const withToken: typeof fetch = (input, init) => fetch(input, { ...init, headers: { authorization } });
  return {
    async fetch({ fileName, view }, maxBytes) {
      const url = view.url_private_download ?? view.url_private;
      if (!url) return { fileName, reason: "unavailable" };
      const result = await downloadAttachment(url, {
        maxBytes,
        ...(typeof view.size === "number" ? { reportedSize: view.size } : {}),
        timeoutMs: deps.attachmentTimeoutMs,
        fetchImpl: withToken,
      });
      if (result.ok && result.contentType?.startsWith("text/html") && !view.mimetype?.startsWith("text/html")) {
        // The sign-in page instead of the file: the token was not accepted for it.
        deps.log.warn({ messageId, fileName }, "slack file download answered with a sign-in page (files:read scope?)");
        return { fileName, reason: "unavailable" };
      }
      if (result.ok) {
        const mimeType = view.mimetype ?? result.contentType;
        const kind = isAudio(view) ? "audio" : attachmentKind(mimeType);
        const seconds = kind === "audio" ? secondsOf(view) : undefined;
        return { kind, fileName, data: result.data, ...(mimeType ? { mimeType } : {}), ...(seconds !== undefined ? { seconds } : {}) };
      }
      if (result.reason === "too_large") return { fileName, reason: "too_large" };
      deps.log.warn({ messageId, fileName, detail: deps.redact(result.detail) }, "slack file download failed");
      return { fileName, reason: "unavailable" };
    },
  };
}
