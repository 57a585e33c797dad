/**
 * Pure translation of one Baileys message into the core's `InboundMessage`,
 * or nothing when it is not for the bot (own echo, status broadcast,
 * reaction...). No I/O here: downloading attachments happens in files.ts,
 * and the core applies the group's mention rule.
 */
import {
  isHostedLidUser,
  isHostedPnUser,
  isJidGroup,
  isLidUser,
  isPnUser,
  jidNormalizedUser,
  normalizeMessageContent,
  type proto,
  type WAMessage,
} from "@whiskeysockets/baileys";
import type { ChatType, InboundAttachment, InboundMessage } from "../../vocabulary/adapter.js";
import { extensionFor } from "../file-extensions.js";
import { chatIdFromJid, jidUser, userIdFromJid } from "./ids.js";
import { safeBaseName } from "../../../shared/util/names.js";

export const PLATFORM = "whatsapp";

/** A file a message carries, as the message describes it (nothing downloaded yet). */
export interface MediaInfo {
  kind: InboundAttachment["kind"];
  fileName: string;
  mimeType?: string;
  /** What the message claims; the download is bounded separately. */
  declaredBytes?: number;
  /** A voice note's or audio's length as WhatsApp reports it, seconds. */
  seconds?: number;
}

/** The bot's own JIDs (phone and `@lid`), any device suffix allowed. */
export type SelfJids = readonly string[];

/** What a translation needs besides the message. */
export interface TranslateContext {
  /** The bot's own JIDs: its messages are skipped, its mentions stripped. */
  self: SelfJids;
  /** The channel's id, copied into the message. */
  accountId: string;
  /** Epoch ms, for a message that carries no timestamp. */
  now: number;
  /** Told why a message was skipped (for a debug log). Default: nobody. */
  onSkip?: (reason: string) => void;
}

const isPersonJid = (jid: string): boolean => Boolean(isPnUser(jid) || isLidUser(jid) || isHostedPnUser(jid) || isHostedLidUser(jid));

/**
 * One Baileys message -> the core's message, text only (attachments are
 * fetched after the core admitted the sender; see `mediaOfMessage`).
 * Undefined when the message is not for the bot; `context.onSkip` hears why.
 */
export function translateMessage(msg: WAMessage, context: TranslateContext): InboundMessage | undefined {
  const read = readMessage(msg, context.self);
  if (!read.ok) {
    context.onSkip?.(read.reason);
    return undefined;
  }
  const { sentAt, ...message } = read.message;
  return { platform: PLATFORM, accountId: context.accountId, ...message, sentAt: sentAt ?? context.now };
}

/** The file a message carries, if any (document, photo, audio, video). */
export function mediaOfMessage(msg: WAMessage): MediaInfo | undefined {
  const content = normalizeMessageContent(msg.message);
  return content && msg.key.id ? mediaOf(content, msg.key.id) : undefined;
}

type Facts = Omit<InboundMessage, "platform" | "accountId" | "sentAt"> & { sentAt?: number };
type Reading = { ok: true; message: Facts } | { ok: false; reason: string };

const skip = (reason: string): Reading => ({ ok: false, reason });

function readMessage(msg: WAMessage, self: SelfJids): Reading {
  const key = msg.key;
  const remoteJid = key.remoteJid;
  if (!remoteJid || !key.id) return skip("no chat or message id");
  if (key.fromMe) return skip("own message");

  let chatType: ChatType;
  let senderJid: string | null | undefined;
  let senderAlt: string | null | undefined;
  if (isJidGroup(remoteJid)) {
    chatType = "group";
    senderJid = key.participant ?? msg.participant;
    senderAlt = key.participantAlt;
  } else if (isPersonJid(remoteJid)) {
    chatType = "direct";
    senderJid = remoteJid;
    senderAlt = key.remoteJidAlt;
  } else {
    return skip("not a person or group chat");
  }
  if (senderJid && isSelf(senderJid, self)) return skip("own message");

  const userId = userIdFromJid(senderJid);
  if (!userId) return skip("no sender id");
  // Older Baileys 7 release candidates carried the other identity as senderPn / senderLid.
  const legacy = key as Record<string, unknown>;
  const aliases = [senderAlt, str(legacy.senderPn), str(legacy.senderLid)].map(userIdFromJid).filter((id): id is string => Boolean(id) && id !== userId);

  const content = normalizeMessageContent(msg.message);
  if (!content) return skip("no content");

  const media = mediaOf(content, key.id);
  const text =
    content.conversation ??
    content.extendedTextMessage?.text ??
    content.imageMessage?.caption ??
    content.videoMessage?.caption ??
    content.documentMessage?.caption ??
    "";
  if (!text.trim() && !media) return skip("no text or supported media");

  const context = contextOf(content);
  const mentioned =
    (context?.mentionedJid ?? []).some((jid) => isSelf(jid, self)) || Boolean(context?.participant && context.stanzaId && isSelf(context.participant, self));

  const sentAt = toNumber(msg.messageTimestamp);
  const aliasList = [...new Set(aliases)];
  return {
    ok: true,
    message: {
      chatId: chatIdFromJid(remoteJid),
      chatType,
      userId,
      ...(aliasList.length ? { userAliases: aliasList } : {}),
      ...(msg.pushName ? { userName: msg.pushName } : {}),
      messageId: key.id,
      text: stripLeadingMentions(text, self).trim(),
      ...(sentAt !== undefined ? { sentAt: sentAt * 1000 } : {}),
      // The core applies the group's mention rule.
      ...(chatType === "group" ? { mentioned } : {}),
    },
  };
}

export function isSelf(jid: string, self: SelfJids): boolean {
  const normal = jidNormalizedUser(jid);
  return Boolean(normal) && self.some((own) => jidNormalizedUser(own) === normal);
}

/** "@4915123 hello" -> "hello" when 4915123 is the bot (by phone or lid). */
export function stripLeadingMentions(text: string, self: SelfJids): string {
  const users = self.map(jidUser).filter((u): u is string => Boolean(u));
  let out = text;
  for (let changed = true; changed; ) {
    changed = false;
    for (const user of users) {
      const match = new RegExp(`^\\s*@${user}(?![0-9])[\\s,:]*`).exec(out);
      if (match) {
        out = out.slice(match[0].length);
        changed = true;
      }
    }
  }
  return out;
}

function contextOf(content: proto.IMessage): proto.IContextInfo | null | undefined {
  return (
    content.extendedTextMessage?.contextInfo ??
    content.imageMessage?.contextInfo ??
    content.documentMessage?.contextInfo ??
    content.videoMessage?.contextInfo ??
    content.audioMessage?.contextInfo ??
    undefined
  );
}

function mediaOf(content: proto.IMessage, messageId: string): MediaInfo | undefined {
  const pick = ():
    | { kind: MediaInfo["kind"]; m: proto.Message.IDocumentMessage | proto.Message.IImageMessage | proto.Message.IAudioMessage | proto.Message.IVideoMessage }
    | undefined => {
    if (content.documentMessage) return { kind: "document", m: content.documentMessage };
    if (content.imageMessage) return { kind: "photo", m: content.imageMessage };
    if (content.audioMessage) return { kind: "audio", m: content.audioMessage };
    if (content.videoMessage) return { kind: "video", m: content.videoMessage };
    return undefined;
  };
  const found = pick();
  if (!found) return undefined;
  const mimeType = found.m.mimetype ?? undefined;
  const named = "fileName" in found.m ? safeBaseName(found.m.fileName, { max: 120 }) : undefined;
  const declared = toNumber(found.m.fileLength);
  const seconds = "seconds" in found.m && typeof found.m.seconds === "number" ? found.m.seconds : undefined;
  return {
    kind: found.kind,
    fileName: named ?? `${found.kind}-${safeBaseName(messageId, { max: 120 }) ?? "file"}.${extensionFor(mimeType)}`,
    ...(mimeType ? { mimeType } : {}),
    ...(declared !== undefined ? { declaredBytes: declared } : {}),
    ...(seconds !== undefined ? { seconds } : {}),
  };
}

/** Protobuf numbers arrive as number or Long. */
function toNumber(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (value && typeof value === "object" && "toNumber" in value && typeof value.toNumber === "function") {
    const n: unknown = value.toNumber();
    return typeof n === "number" && Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
