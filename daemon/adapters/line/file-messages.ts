/**
 * A reply file as LINE messages. LINE takes media only by HTTPS URL
 * (developers.line.biz, "Image message", "Audio message"), fetched by its own
 * servers, and has no message type for other files. So:
 *
 * - a JPEG or PNG image of at most 1 MB goes as an image message, the same URL
 *   as its preview (LINE: original at most 10 MB, preview at most 1 MB; the
 *   bridge makes no thumbnails, so a larger image goes as a link);
 * - an M4A audio file goes as an audio message with its `duration` (ms, which
 *   LINE requires), read from the file's own header (`mvhd`); one whose length
 *   cannot be read goes as a link;
 * - an MP4 video of at most 200 MB goes as a video message; its required
 *   preview image is the same small play sign for every video
 *   (video-preview.ts: the bridge makes no thumbnails), served like a file;
 * - anything else (documents, other audio and video) goes as a text message
 *   with the link, the file's name and size, and until when the link works.
 * `lineFileMessages` is pure.
 */
import { createHash } from "node:crypto";
import type { messagingApi } from "@line/bot-sdk";
import { formatBytes } from "../../../shared/util/format-bytes.js";
import type { FileCapability, OutboundFile } from "../../vocabulary/adapter.js";
import { type FileLinks, purposeOf } from "../file-links/index.js";
import type { LineOutbound } from "./outbound.js";
import { videoPreviewPng } from "./video-preview.js";

/** LINE's limit on a preview image, which an image sent whole must also meet. */
export const PREVIEW_MAX_BYTES = 1024 * 1024;
/** LINE's limits on an audio and a video file. */
export const AUDIO_MAX_BYTES = 200 * 1024 * 1024;
export const VIDEO_MAX_BYTES = 200 * 1024 * 1024;

/** Files out on LINE: each kept behind its link, then sent as the messages below (by reply token or push, like text). */
export function lineFiles(links: FileLinks, outbound: LineOutbound, accountId: string): FileCapability {
  return {
    limits: links.limits,
    async send(target, given) {
      const purpose = purposeOf(accountId, target.chatId, target.replyToMessageId, given.path);
      const video = isMp4Video(given);
      // Served as what LINE plays: the core types a file by a list of extensions that has no mp4.
      const file = video ? { ...given, mimeType: "video/mp4" } : given;
      const { url, expiresAt } = await links.publish(purpose, file);
      const preview = video ? (await links.publish(`${purpose}\u0000preview`, previewFile(given.path))).url : undefined;
      // The push's retry key is made of what is sent: the file's path and bytes, not its link's end.
      const digest = createHash("sha256").update(file.data).digest("hex");
      return outbound.sendMessages(target, lineFileMessages(file, url, expiresAt, preview), `file\u0000${file.path}\u0000${digest}`);
    },
  };
}

/** An MP4 video LINE plays (by its name or type; at most 200 MB). */
export const isMp4Video = (file: Pick<OutboundFile, "fileName" | "mimeType" | "data">): boolean =>
  (/\.mp4$/i.test(file.fileName) || file.mimeType.toLowerCase() === "video/mp4") && file.data.length <= VIDEO_MAX_BYTES;

const previewFile = (path: string): OutboundFile => ({
  path: `${path}.preview.png`,
  fileName: "preview.png",
  mimeType: "image/png",
  kind: "photo",
  data: videoPreviewPng(),
});

/** `previewUrl`: for an MP4 video, its preview image's link. */
export function lineFileMessages(file: OutboundFile, url: string, expiresAt: number, previewUrl?: string): messagingApi.Message[] {
  const type = file.mimeType.toLowerCase();
  if (previewUrl !== undefined && isMp4Video(file)) return [{ type: "video", originalContentUrl: url, previewImageUrl: previewUrl }];
  if (file.kind === "photo" && (type === "image/jpeg" || type === "image/png") && file.data.length <= PREVIEW_MAX_BYTES) {
    return [{ type: "image", originalContentUrl: url, previewImageUrl: url }];
  }
  if ((type === "audio/mp4" || type === "audio/x-m4a" || type === "audio/m4a") && file.data.length <= AUDIO_MAX_BYTES) {
    const duration = mp4DurationMs(file.data);
    if (duration !== undefined && duration > 0) return [{ type: "audio", originalContentUrl: url, duration }];
  }
  return [{ type: "text", text: linkText(file, url, expiresAt) }];
}

/** The text that carries a file LINE cannot show: its name, size, link and the link's end. */
export function linkText(file: Pick<OutboundFile, "fileName" | "data">, url: string, expiresAt: number): string {
  const until = new Date(expiresAt)
    .toISOString()
    .replace(/:\d\d\.\d{3}Z$/, " UTC")
    .replace("T", " ");
  return `📎 ${file.fileName} (${formatBytes(file.data.length)})\n${url}\n(The link works until ${until}.)`;
}

/**
 * An MP4/M4A file's length in ms from its movie header (`moov` → `mvhd`:
 * duration / timescale), or undefined when the file has none that reads.
 */
export function mp4DurationMs(data: Buffer): number | undefined {
  const moov = findBox(data, 0, data.length, "moov");
  if (!moov) return undefined;
  const mvhd = findBox(data, moov.start, moov.end, "mvhd");
  if (!mvhd || mvhd.end - mvhd.start < 20) return undefined;
  const version = data.readUInt8(mvhd.start);
  let timescale: number;
  let duration: number;
  if (version === 1) {
    if (mvhd.end - mvhd.start < 32) return undefined;
    timescale = data.readUInt32BE(mvhd.start + 20);
    duration = Number(data.readBigUInt64BE(mvhd.start + 24));
  } else {
    timescale = data.readUInt32BE(mvhd.start + 12);
    duration = data.readUInt32BE(mvhd.start + 16);
  }
  if (timescale === 0 || !Number.isFinite(duration)) return undefined;
  return Math.round((duration / timescale) * 1000);
}

/** The payload bounds of the first box of `type` among the boxes in [from, to). */
function findBox(data: Buffer, from: number, to: number, type: string): { start: number; end: number } | undefined {
  let at = from;
  while (at + 8 <= to) {
    let size = data.readUInt32BE(at);
    const name = data.toString("latin1", at + 4, at + 8);
    let header = 8;
    if (size === 1) {
      if (at + 16 > to) return undefined;
      size = Number(data.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) size = to - at;
    if (size < header || at + size > to) return undefined;
    if (name === type) return { start: at + header, end: at + size };
    at += size;
  }
  return undefined;
}
