/**
 * Fetching the one file a WhatsApp message carries, after the core admitted
 * the sender: bounded by the smaller of the core's and the daemon's limit,
 * and turned into a note plus a dropped-attachment record when it cannot be
 * passed on (the agent reads the note; the core tells the sender).
 */
import type { Logger } from "pino";
import type { AdmissionAnswer, DroppedAttachment, InboundAttachment } from "../../core/adapter.js";
import { formatBytes } from "../../../shared/util/format-bytes.js";
import { describeError } from "./errors.js";
import type { MediaInfo } from "./inbound.js";
import type { MediaDownloader, WAMessage, WhatsAppSocket } from "./socket.js";

/** What a message's file became: passed on, or a note and a record of why not. */
export interface FetchedMedia {
  attachments: InboundAttachment[];
  notes: string[];
  dropped: DroppedAttachment[];
}

export const NO_MEDIA: FetchedMedia = { attachments: [], notes: [], dropped: [] };

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

/** Downloads `media` of `msg` within the admission's verdict. Never throws: a failure becomes a note. */
export async function fetchMedia(
  deps: MediaFetchDeps,
  socket: WhatsAppSocket,
  msg: WAMessage,
  media: MediaInfo,
  verdict: AdmissionAnswer["attachments"][number] | undefined,
): Promise<FetchedMedia> {
  const limit = verdict?.fetch ? Math.min(verdict.maxBytes, deps.maxAttachmentBytes) : deps.maxAttachmentBytes;
  const refuse = (why: string, reason: DroppedAttachment["reason"]): FetchedMedia => ({
    attachments: [],
    notes: [`[Attachment "${media.fileName}" not delivered: ${why}]`],
    dropped: [{ fileName: media.fileName, reason }],
  });
  if (!verdict?.fetch && verdict?.reason === "disabled") return refuse("attachments are off here", "disabled");
  if (!verdict?.fetch || (media.declaredBytes !== undefined && media.declaredBytes > limit)) {
    return refuse(`${formatBytes(media.declaredBytes ?? limit + 1)} is over the ${formatBytes(limit)} limit`, "too_large");
  }
  try {
    const source = await deps.downloader(msg, { socket, logger: deps.baileysLog });
    const data = await readBounded(source, limit);
    if (!data) return refuse(`it is over the ${formatBytes(limit)} limit`, "too_large");
    const attachment: InboundAttachment = {
      kind: media.kind,
      fileName: media.fileName,
      ...(media.mimeType ? { mimeType: media.mimeType } : {}),
      ...(media.seconds !== undefined ? { seconds: media.seconds } : {}),
      data,
    };
    return { attachments: [attachment], notes: [], dropped: [] };
  } catch (err) {
    deps.log.warn({ err: describeError(err), messageId: msg.key.id }, "downloading WhatsApp media failed");
    return refuse("it could not be downloaded", "unavailable");
  }
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
