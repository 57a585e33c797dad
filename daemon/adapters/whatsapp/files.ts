/**
 * Where a WhatsApp message's one file comes from: Baileys downloads it
 * through the socket, bounded by the smaller of the core's and the daemon's
 * limit. A file not passed on also leaves a note in the message's text (the
 * agent reads the note; the core tells the sender).
 */
import type { Logger } from "pino";
import type { DroppedAttachment, InboundAttachment } from "../../vocabulary/adapter.js";
import { formatBytes } from "../../../shared/util/format-bytes.js";
import type { DroppedFile, FileSource } from "../hand-over.js";
import { describeError } from "./errors.js";
import type { MediaInfo } from "./inbound.js";
import type { MediaDownloader, WAMessage, WhatsAppSocket } from "./socket.js";

/** The message's file as the hand-over sees it: its name and declared size. */
export interface WhatsAppFile {
  fileName: string;
  size: number | undefined;
  media: MediaInfo;
}

export const whatsappFileOf = (media: MediaInfo): WhatsAppFile => ({ fileName: media.fileName, size: media.declaredBytes, media });

export interface MediaFetchDeps {
  /** Fetches a message's bytes (Baileys' `downloadMediaMessage`, or a test fake). */
  downloader: MediaDownloader;
  /** The daemon's own ceiling for one attachment, bytes. */
  maxAttachmentBytes: number;
  /** The channel's logger. */
  log: Logger;
  /** Handed to the downloader (Baileys logs a re-upload request there). */
  baileysLog: Logger;
}

/** The file of `msg`, downloaded through `socket`. Never throws: a failure becomes a note. */
export function whatsappFiles(deps: MediaFetchDeps, socket: WhatsAppSocket, msg: WAMessage): FileSource<WhatsAppFile> {
  const note = (media: MediaInfo, why: string) => `[Attachment "${media.fileName}" not delivered: ${why}]`;
  const refuse = (media: MediaInfo, why: string, reason: DroppedAttachment["reason"]): DroppedFile => ({
    fileName: media.fileName,
    reason,
    note: note(media, why),
  });
  const overLimit = (media: MediaInfo, limit: number) => `${formatBytes(media.declaredBytes ?? limit + 1)} is over the ${formatBytes(limit)} limit`;
  return {
    refusedNote: ({ media }, reason) => note(media, reason === "disabled" ? "attachments are off here" : overLimit(media, deps.maxAttachmentBytes)),
    async fetch({ media }, maxBytes) {
      const limit = Math.min(maxBytes, deps.maxAttachmentBytes);
      if (media.declaredBytes !== undefined && media.declaredBytes > limit) return refuse(media, overLimit(media, limit), "too_large");
      try {
        const source = await deps.downloader(msg, { socket, logger: deps.baileysLog });
        const data = await readBounded(source, limit);
        if (!data) return refuse(media, `it is over the ${formatBytes(limit)} limit`, "too_large");
        return {
          kind: media.kind,
          fileName: media.fileName,
          ...(media.mimeType ? { mimeType: media.mimeType } : {}),
          ...(media.seconds !== undefined ? { seconds: media.seconds } : {}),
          data,
        } satisfies InboundAttachment;
      } catch (err) {
        deps.log.warn({ err: describeError(err), messageId: msg.key.id }, "downloading WhatsApp media failed");
        return refuse(media, "it could not be downloaded", "unavailable");
      }
    },
  };
}

/** Reads at most `limit` bytes; undefined when there are more. */
async function readBounded(source: Uint8Array | AsyncIterable<Uint8Array>, limit: number): Promise<Buffer | undefined> {
  if (source instanceof Uint8Array) return source.length > limit ? undefined : Buffer.from(source);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    size += chunk.length;
    // Leaving the loop early destroys a Node stream, which stops the download.
    if (size > limit) return undefined;
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}
