/**
 * Where a Teams message's files come from: a personal chat's file arrives as
 * a pre-authorised `downloadUrl` (fetched as it is); an inline image's
 * `contentUrl` is served only with the bot's token (none in the anonymous
 * mode). Bounded by the core's limit like every platform's. An audio file's
 * length (`seconds`, which transcription's limit is checked against) is read
 * from its container, as Teams does not say it.
 */
import type { Logger } from "pino";
import { audioSeconds } from "../../helpers/audio-duration.js";
import { downloadAttachment } from "../download.js";
import type { FileSource } from "../hand-over.js";
import { attachmentKind, type TeamsFile } from "./inbound.js";
import type { TokenSource } from "./token.js";

export interface TeamsFilesDeps {
  log: Logger;
  tokens: TokenSource | undefined;
  attachmentTimeoutMs: number;
}

export function teamsFiles(deps: TeamsFilesDeps, messageId: string): FileSource<TeamsFile> {
  return {
    async fetch(file, maxBytes) {
      const { fileName } = file;
      let fetchImpl: typeof fetch = fetch;
      if (file.withToken && deps.tokens) {
        const authorization = `Bearer ${await deps.tokens.token().catch(() => "")}`;
        fetchImpl = (input, init) => fetch(input, { ...init, headers: { authorization } });
      }
      const result = await downloadAttachment(file.url, { maxBytes, timeoutMs: deps.attachmentTimeoutMs, fetchImpl });
      if (result.ok) {
        const mimeType = file.mimeType ?? result.contentType;
        const kind = attachmentKind(mimeType);
        // Teams does not say a voice note's length: it is read from the file itself.
        const seconds = kind === "audio" ? audioSeconds(result.data) : undefined;
        return { kind, fileName, data: result.data, ...(mimeType ? { mimeType } : {}), ...(seconds !== undefined ? { seconds } : {}) };
      }
      if (result.reason === "too_large") return { fileName, reason: "too_large" };
      // The URL may carry a pre-authorised token: only the file's name is logged.
      deps.log.warn({ messageId, fileName, detail: result.detail.replace(/https?:\/\/\S+/g, "<url>") }, "teams file download failed");
      return { fileName, reason: "unavailable" };
    },
  };
}
