/**
 * Where a Matrix message's files come from: the authenticated media endpoint
 * (`GET /_matrix/client/v1/media/download/{serverName}/{mediaId}`, spec v1.11), with the
 * bot's token in the Authorization header; the old unauthenticated `/_matrix/media/v3/download`
 * is frozen on current homeservers. Never more than the core's bound is held.
 */
import type { Logger } from "pino";
import type { InboundAttachment } from "../../vocabulary/adapter.js";
import { downloadAttachment } from "../download.js";
import type { FileSource } from "../hand-over.js";
import type { Scrub } from "./errors.js";
import type { MatrixFileRef } from "./inbound.js";

export interface MatrixFilesDeps {
  homeserver: string;
  accessToken: string;
  log: Logger;
  scrub: Scrub;
  /** Per attachment download, ms. */
  attachmentTimeoutMs: number;
}

/** The download URL of an `mxc://server/id` URI; undefined for a malformed one. */
export function downloadUrl(homeserver: string, mxc: string): string | undefined {
  const m = /^mxc:\/\/([^/]+)\/([A-Za-z0-9_-]+)$/.exec(mxc);
  if (!m?.[1] || !m[2]) return undefined;
  return `${homeserver}/_matrix/client/v1/media/download/${encodeURIComponent(m[1])}/${encodeURIComponent(m[2])}`;
}

/** The files of one event; `signal` aborts when the adapter stops (the event must then come again). */
export function matrixFiles(deps: MatrixFilesDeps, signal: AbortSignal): FileSource<MatrixFileRef> {
  const authed: typeof fetch = (input, init) => fetch(input, { ...init, headers: { authorization: `Bearer ${deps.accessToken}` } });
  return {
    async fetch(ref, maxBytes) {
      const url = downloadUrl(deps.homeserver, ref.mxc);
      if (!url) return { fileName: ref.fileName, reason: "unavailable" };
      const result = await downloadAttachment(url, {
        maxBytes,
        ...(ref.size !== undefined ? { reportedSize: ref.size } : {}),
        timeoutMs: deps.attachmentTimeoutMs,
        fetchImpl: authed,
      });
      if (result.ok) {
        return {
          kind: ref.kind,
          fileName: ref.fileName,
          ...((ref.mimeType ?? result.contentType) ? { mimeType: ref.mimeType ?? result.contentType } : {}),
          ...(ref.seconds !== undefined ? { seconds: ref.seconds } : {}),
          data: result.data,
        } satisfies InboundAttachment;
      }
      if (result.reason === "too_large") return { fileName: ref.fileName, reason: "too_large" };
      // Stopping mid-download: the event must come again, not go through without its file.
      if (signal.aborted) throw new Error("stopped");
      deps.log.warn({ fileName: ref.fileName, err: deps.scrub(result.detail) }, "matrix attachment download failed");
      return { fileName: ref.fileName, reason: "unavailable" };
    },
  };
}
