/**
 * Where a Telegram message becomes the core's `InboundMessage`:
 * `translateMessage`, pure (no I/O), with the helpers it needs: which chats
 * are ours, whether a group message addresses the bot, what the text reads
 * without the mention, which files the message carries (fetched later, by
 * files.ts, only if the core admits them).
 */
import type { Message, Update, UserFromGetMe } from "grammy/types";
import type { ChatType, InboundAttachment, InboundMessage } from "../../vocabulary/adapter.js";
import { safeBaseName } from "../../../shared/util/names.js";

/** What `translateMessage` needs to know about the bot: its id and @username. */
export type BotIdentity = Pick<UserFromGetMe, "id" | "username">;

/**
 * The core's view of a Telegram message, or undefined when it is not for the
 * core: a channel post (or any chat that is neither private nor a group), a
 * message without a sender, or one sent by a bot. Attachments are added by the
 * caller once downloaded; the core applies the group's mention rule.
 */
export function translateMessage(message: Message, bot: BotIdentity, accountId: string): InboundMessage | undefined {
  const chatType = chatTypeOf(message);
  const from = message.from;
  if (!chatType || !from || from.is_bot) return undefined;
  return {
    platform: "telegram",
    accountId,
    chatId: String(message.chat.id),
    chatType,
    ...topicOf(message),
    userId: String(from.id),
    userName: from.username ?? [from.first_name, from.last_name].filter(Boolean).join(" "),
    messageId: String(message.message_id),
    text: stripMention(message.text ?? message.caption ?? "", bot.username),
    sentAt: message.date * 1000,
    ...(chatType === "group" ? { mentioned: addressesBot(message, bot) } : {}),
  };
}

/**
 * The chat an update belongs to, as the key that keeps one chat's updates in
 * order (polling batches, webhook chains); "other" for updates without a message.
 */
export const chatIdOfUpdate = (update: Update): string => String(update.message?.chat.id ?? "other");

/**
 * The forum topic a message is in, as its own conversation. Only a message
 * Telegram marks `is_topic_message` is in a topic: in a supergroup without
 * topics `message_thread_id` names a reply thread, not a conversation, and a
 * message in a forum's General topic (id 1) comes without either, so General
 * stays the group's own conversation (the key it had before topics) and its
 * replies go without a thread id, which Telegram refuses for General.
 */
export function topicOf(message: Message): { threadId?: string } {
  const id = message.message_thread_id;
  if (message.is_topic_message !== true || id === undefined || id === GENERAL_TOPIC_ID) return {};
  return { threadId: String(id) };
}

/** The General topic's id in every forum; `message_thread_id: 1` is refused on sends ("message thread not found"). */
export const GENERAL_TOPIC_ID = 1;

/** Private chat -> direct, group/supergroup -> group; channels (and anything else) are not ours. */
export function chatTypeOf(message: Message): ChatType | undefined {
  const type = message.chat.type;
  if (type === "private") return "direct";
  if (type === "group" || type === "supergroup") return "group";
  return undefined;
}

/** Mentioned by @username or a text mention, a command addressed to the bot, or a reply to one of its messages. */
export function addressesBot(message: Message, me: BotIdentity): boolean {
  // In a topic, a message that quotes nothing carries the topic's creation as its
  // `reply_to_message`: a topic the bot opened is no reply to the bot.
  const replied = message.reply_to_message;
  if (replied?.from?.id === me.id && !replied.forum_topic_created) return true;
  const text = message.text ?? message.caption ?? "";
  const entities = message.entities ?? message.caption_entities ?? [];
  const name = `@${me.username}`.toLowerCase();
  for (const entity of entities) {
    const part = text.slice(entity.offset, entity.offset + entity.length).toLowerCase();
    if (entity.type === "mention" && part === name) return true;
    if (entity.type === "text_mention" && entity.user?.id === me.id) return true;
    if (entity.type === "bot_command" && part.endsWith(name)) return true;
  }
  return false;
}

/** Removes a leading `@bot` and the `@bot` suffix of a command, so `/new@bot` reads `/new`. */
export function stripMention(text: string, username: string): string {
  const escaped = username.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return text
    .replace(new RegExp(`^\\s*@${escaped}\\b[\\s,:]*`, "i"), "")
    .replace(new RegExp(`^(/\\w+)@${escaped}\\b`, "i"), "$1")
    .trim();
}

/** A file the message carries, before download. */
export interface FileRef {
  fileId: string;
  /** What Telegram says the size is (a claim; the download is counted too). */
  size?: number;
  fileName: string;
  kind: InboundAttachment["kind"];
  mimeType?: string;
  /** Audio and voice: the length Telegram reports, seconds. */
  seconds?: number;
}

/** Documents, the largest photo size, audio, voice and video; names made safe, invented when missing. */
export function fileRefsOf(message: Message): FileRef[] {
  const id = message.message_id;
  const refs: FileRef[] = [];
  const add = (ref: Omit<FileRef, "size" | "mimeType">, size: number | undefined, mimeType: string | undefined) =>
    refs.push({ ...ref, ...(size === undefined ? {} : { size }), ...(mimeType ? { mimeType } : {}) });
  if (message.document) {
    const d = message.document;
    add({ fileId: d.file_id, fileName: safeFileName(d.file_name, `document-${id}`), kind: "document" }, d.file_size, d.mime_type);
  }
  if (message.photo?.length) {
    // Telegram lists the sizes smallest first; pick by area rather than trust the order.
    const largest = message.photo.reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
    add({ fileId: largest.file_id, fileName: `photo-${id}.jpg`, kind: "photo" }, largest.file_size, "image/jpeg");
  }
  if (message.audio) {
    const a = message.audio;
    add({ fileId: a.file_id, fileName: safeFileName(a.file_name, `audio-${id}`), kind: "audio", seconds: a.duration }, a.file_size, a.mime_type);
  }
  if (message.voice) {
    const v = message.voice;
    add({ fileId: v.file_id, fileName: `voice-${id}.ogg`, kind: "audio", seconds: v.duration }, v.file_size, v.mime_type ?? "audio/ogg");
  }
  if (message.video) {
    const v = message.video;
    add({ fileId: v.file_id, fileName: safeFileName(v.file_name, `video-${id}.mp4`), kind: "video" }, v.file_size, v.mime_type);
  }
  return refs;
}

/** A base name without folders, control characters or a leading dot; `fallback` when nothing is left. */
const safeFileName = (name: string | undefined, fallback: string): string => safeBaseName(name) ?? fallback;
