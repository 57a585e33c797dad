/**
 * signal-cli's `receive` events as the core's InboundMessages: PURE
 * translation, no I/O. The event's data is `{envelope, account}`
 * (JsonMessageEnvelope); only a `dataMessage` with text or files becomes a
 * message (receipts, typing, sync messages from the account's other devices,
 * reactions, stories and people's edits do not).
 *
 * Ids: a person is their ACI (`sourceUuid`), their number an alias; a
 * direct chat is the person's id, a group chat its base64 `groupId`. A
 * message is `<timestamp>:<author>`: Signal names a message by its sender and
 * send timestamp (quotes, reactions and edits all name it that way), and the
 * pair is what makes it unique in a group.
 */
import { z } from "zod";
import type { InboundMessage } from "../../vocabulary/adapter.js";
import { extensionFor } from "../file-extensions.js";

const Mention = z.object({ number: z.string().nullish(), uuid: z.string().nullish(), start: z.number(), length: z.number() });
const Attachment = z.object({
  contentType: z.string().nullish(),
  filename: z.string().nullish(),
  id: z.string().nullish(),
  size: z.number().nullish(),
});
const DataMessage = z.object({
  timestamp: z.number(),
  message: z.string().nullish(),
  mentions: z.array(Mention).nullish(),
  attachments: z.array(Attachment).nullish(),
  quote: z.object({ id: z.number(), authorNumber: z.string().nullish(), authorUuid: z.string().nullish() }).nullish(),
  groupInfo: z.object({ groupId: z.string(), groupName: z.string().nullish() }).nullish(),
  reaction: z.unknown().nullish(),
  remoteDelete: z.unknown().nullish(),
});
export const Envelope = z.object({
  source: z.string().nullish(),
  sourceNumber: z.string().nullish(),
  sourceUuid: z.string().nullish(),
  sourceName: z.string().nullish(),
  timestamp: z.number(),
  dataMessage: DataMessage.nullish(),
});
/** One `receive` event's data. */
export const ReceiveEvent = z.object({ envelope: Envelope, account: z.string().nullish() });
export type ReceiveEvent = z.output<typeof ReceiveEvent>;

/** A file a message brings, as signal-cli declares it (fetched with `getAttachment`). */
export interface SignalFileRef {
  id: string;
  fileName: string;
  size?: number;
  mimeType?: string;
  kind: "photo" | "audio" | "video" | "document";
  /** Where `getAttachment` finds it: the group, or the sender. */
  groupId?: string;
  sender: string;
}

/** Who the bot is: its number (the config's `account`) and, once known, its ACI. */
export interface SignalSelf {
  account: string;
  uuid?: string;
}

/** Signal puts this character where a mention is in the text (the mention's start). */
const MENTION_MARK = "\uFFFC";

export const messageIdOf = (timestamp: number, author: string): string => `${timestamp}:${author}`;

/** The timestamp and author a message id names; undefined for one this adapter did not make. */
export function parseMessageId(id: string): { timestamp: number; author: string } | undefined {
  const at = id.indexOf(":");
  if (at <= 0) return undefined;
  const timestamp = Number(id.slice(0, at));
  const author = id.slice(at + 1);
  if (!Number.isSafeInteger(timestamp) || timestamp <= 0 || !author) return undefined;
  return { timestamp, author };
}

const isSelf = (self: SignalSelf, number?: string | null, uuid?: string | null): boolean =>
  (!!number && number === self.account) || (!!uuid && !!self.uuid && uuid === self.uuid);

function kindOf(contentType: string | undefined): SignalFileRef["kind"] {
  if (!contentType) return "document";
  if (contentType.startsWith("image/")) return "photo";
  if (contentType.startsWith("audio/")) return "audio";
  if (contentType.startsWith("video/")) return "video";
  return "document";
}

/** A safe base name: signal-cli gives the sender's file name only when they sent one (voice notes and photos come without). */
function fileNameOf(name: string | null | undefined, id: string, contentType: string | undefined): string {
  const base = (name ?? "")
    .split(/[\\/]/)
    .pop()
    ?.replace(/[^\w.\- ]/g, "_")
    .trim();
  if (base && base !== "." && base !== "..") return base;
  const ext = extensionFor(contentType);
  return `signal-${id.replace(/[^\w-]/g, "").slice(0, 24) || "file"}.${ext}`;
}

/** The text with every mention of the bot taken out (Signal's mark character stands where each mention is). */
function textWithoutSelfMentions(text: string, mentions: z.output<typeof Mention>[], self: SignalSelf): string {
  const ours = mentions.filter((m) => isSelf(self, m.number, m.uuid)).sort((a, b) => b.start - a.start);
  let out = text;
  for (const m of ours) out = out.slice(0, m.start) + out.slice(m.start + m.length);
  // Other people's mentions keep a readable mark.
  return out
    .replaceAll(MENTION_MARK, "@")
    .replace(/\s{2,}/g, " ")
    .trim();
}

export interface Translated {
  message: InboundMessage;
  files: SignalFileRef[];
}

/** The message an event carries for the core, or undefined when it carries none (see the module comment). */
export function translateMessage(event: ReceiveEvent, self: SignalSelf, accountId: string): Translated | undefined {
  const { envelope } = event;
  const data = envelope.dataMessage;
  if (!data || data.reaction || data.remoteDelete) return undefined;
  const number = envelope.sourceNumber ?? (envelope.source?.startsWith("+") ? envelope.source : undefined);
  const userId = envelope.sourceUuid ?? number ?? envelope.source;
  if (!userId) return undefined;
  // The account's own messages (a note to self, a sync from another device) are not for the agent.
  if (isSelf(self, number, envelope.sourceUuid)) return undefined;
  const group = data.groupInfo?.groupId;
  const mentions = data.mentions ?? [];
  const files: SignalFileRef[] = (data.attachments ?? []).flatMap((a) => {
    if (!a.id) return [];
    const mimeType = a.contentType ?? undefined;
    return [
      {
        id: a.id,
        fileName: fileNameOf(a.filename, a.id, mimeType),
        ...(a.size != null ? { size: a.size } : {}),
        ...(mimeType ? { mimeType } : {}),
        kind: kindOf(mimeType),
        ...(group ? { groupId: group } : {}),
        sender: userId,
      },
    ];
  });
  const text = textWithoutSelfMentions(data.message ?? "", mentions, self);
  if (!text && files.length === 0) return undefined;
  const mentioned = mentions.some((m) => isSelf(self, m.number, m.uuid)) || (!!data.quote && isSelf(self, data.quote.authorNumber, data.quote.authorUuid));
  const aliases = [number, envelope.sourceUuid].filter((x): x is string => !!x && x !== userId);
  const message: InboundMessage = {
    platform: "signal",
    accountId,
    chatId: group ?? userId,
    chatType: group ? "group" : "direct",
    userId,
    ...(aliases.length ? { userAliases: aliases } : {}),
    ...(envelope.sourceName ? { userName: envelope.sourceName } : {}),
    // The envelope's timestamp is the message's send timestamp, the one quotes and reactions name.
    messageId: messageIdOf(envelope.timestamp, userId),
    text,
    ...(group ? { mentioned } : {}),
    sentAt: envelope.timestamp,
  };
  return { message, files };
}
