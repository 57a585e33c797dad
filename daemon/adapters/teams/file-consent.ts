/**
 * Files to a personal chat through Teams' file consent flow (learn.microsoft.com,
 * "Send and receive files using bot", Graph-less): the bot sends a file
 * consent card; when the person accepts, Teams posts a `fileConsent/invoke`
 * with an upload URL in their OneDrive; the bot PUTs the bytes there and
 * sends a file info card. Images go inline instead (a data URL), in any chat.
 * The bytes wait in memory for the person's answer: a restart before it
 * loses the offer (the card then says nothing happens on accept).
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { type ChatTarget, type FileLimits, type OutboundFile, SendError } from "../../vocabulary/adapter.js";

export const FILE_CONSENT_CARD = "application/vnd.microsoft.teams.card.file.consent";
export const FILE_INFO_CARD = "application/vnd.microsoft.teams.card.file.info";

/** Inline images stay small (Teams renders data URLs up to about 1 MB); files through OneDrive can be large. */
export const TEAMS_FILE_LIMITS: FileLimits = { photo: 1024 * 1024, voice: 100 * 1024 * 1024, document: 100 * 1024 * 1024 };

export const FileConsentValue = z.looseObject({
  type: z.literal("fileUpload"),
  action: z.enum(["accept", "decline"]),
  context: z.looseObject({ bridgeFile: z.string() }).optional(),
  uploadInfo: z
    .looseObject({ uploadUrl: z.string(), contentUrl: z.string(), name: z.string(), uniqueId: z.string().optional(), fileType: z.string().optional() })
    .optional(),
});
export type FileConsentValue = z.output<typeof FileConsentValue>;

interface Offer {
  target: ChatTarget;
  file: OutboundFile;
}

export class FileOffers {
  readonly #offers = new Map<string, Offer>();

  /** The consent card for `file` (kept until the person answers). */
  offer(target: ChatTarget, file: OutboundFile) {
    const id = randomUUID();
    this.#offers.set(id, { target, file });
    return {
      contentType: FILE_CONSENT_CARD,
      name: file.fileName,
      content: { description: file.fileName, sizeInBytes: file.data.length, acceptContext: { bridgeFile: id }, declineContext: { bridgeFile: id } },
    };
  }

  /** The offer an answer names, forgotten once taken; undefined when unknown (answered already, or offered before a restart). */
  take(value: FileConsentValue): Offer | undefined {
    const id = value.context?.bridgeFile;
    if (!id) return undefined;
    const offer = this.#offers.get(id);
    this.#offers.delete(id);
    return offer;
  }
}

/** Puts the bytes at the upload URL Teams gave (one range, the whole file). */
export async function upload(url: string, data: Buffer): Promise<void> {
  const response = await fetch(url, {
    method: "PUT",
    headers: { "content-range": `bytes 0-${data.length - 1}/${data.length}` },
    body: data,
    signal: AbortSignal.timeout(120_000),
  });
  await response.arrayBuffer().catch(() => undefined);
  if (!response.ok)
    throw new SendError(`the upload to the person's OneDrive failed (HTTP ${response.status})`, { permanent: response.status < 500, status: response.status });
}

/** An image as an inline attachment. */
export const inlineImage = (file: OutboundFile) => ({
  contentType: file.mimeType,
  contentUrl: `data:${file.mimeType};base64,${file.data.toString("base64")}`,
  name: file.fileName,
});
