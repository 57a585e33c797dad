/**
 * LINE's webhook events as this bridge reads them (zod: parsed, never cast),
 * and the pure translation of one event into an `InboundMessage`: no I/O.
 * A one-to-one chat is the user's id (U...), a group its group id (C...), a
 * multi-person chat ("room") its room id (R...): the ids a push goes `to`.
 * In groups and rooms `mentioned` says whether a mentionee `isSelf` (the
 * bot), and the bot's mention is cut from the text.
 */
import { z } from "zod";
import type { InboundMessage } from "../../vocabulary/adapter.js";

const Source = z.discriminatedUnion("type", [
  z.object({ type: z.literal("user"), userId: z.string() }),
  z.object({ type: z.literal("group"), groupId: z.string(), userId: z.string().optional() }),
  z.object({ type: z.literal("room"), roomId: z.string(), userId: z.string().optional() }),
]);
export type LineSource = z.infer<typeof Source>;

const Mentionee = z.object({ index: z.number().int().min(0), length: z.number().int().min(0), type: z.string().optional(), isSelf: z.boolean().optional() });
const ContentProvider = z.object({ type: z.enum(["line", "external"]), originalContentUrl: z.string().optional() });

export const LineMessage = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("text"),
    id: z.string(),
    text: z.string(),
    quoteToken: z.string().optional(),
    mention: z.object({ mentionees: z.array(Mentionee) }).optional(),
  }),
  z.object({ type: z.literal("image"), id: z.string(), quoteToken: z.string().optional(), contentProvider: ContentProvider.optional() }),
  z.object({
    type: z.literal("video"),
    id: z.string(),
    quoteToken: z.string().optional(),
    duration: z.number().optional(),
    contentProvider: ContentProvider.optional(),
  }),
  z.object({ type: z.literal("audio"), id: z.string(), duration: z.number().optional(), contentProvider: ContentProvider.optional() }),
  z.object({ type: z.literal("file"), id: z.string(), fileName: z.string(), fileSize: z.number().optional() }),
  z.object({ type: z.literal("sticker"), id: z.string(), quoteToken: z.string().optional() }),
  z.object({ type: z.literal("location"), id: z.string(), title: z.string().optional(), address: z.string().optional() }),
]);
export type LineMessage = z.infer<typeof LineMessage>;

/** One event of a webhook body; fields this bridge does not read are let through unread. */
export const LineEvent = z.object({
  type: z.string(),
  mode: z.string().optional(),
  timestamp: z.number(),
  source: Source.optional(),
  webhookEventId: z.string(),
  deliveryContext: z.object({ isRedelivery: z.boolean() }).optional(),
  replyToken: z.string().optional(),
  message: z.unknown().optional(),
  postback: z.object({ data: z.string() }).optional(),
});
export type LineEvent = z.infer<typeof LineEvent>;

export const LineWebhookBody = z.object({ destination: z.string().optional(), events: z.array(z.unknown()) });

/** A file a message brings, as declared before anything is fetched. */
export interface LineFile {
  messageId: string;
  fileName: string;
  size: number | undefined;
  kind: "photo" | "video" | "audio" | "document";
  /** Audio and video: the length LINE reports, ms. */
  durationMs: number | undefined;
  /** `external`: where the sender's app put it (LINE does not keep it). */
  externalUrl: string | undefined;
}

export type Translation =
  | { kind: "message"; message: InboundMessage; files: LineFile[]; replyToken: string | undefined; quoteToken: string | undefined }
  | { kind: "postback"; data: string; chat: LineChat; userId: string; replyToken: string | undefined; sentAt: number }
  | { kind: "ignore"; reason: string };

export interface LineChat {
  chatId: string;
  chatType: "direct" | "group";
}

export const chatOf = (source: LineSource): LineChat =>
  source.type === "user"
    ? { chatId: source.userId, chatType: "direct" }
    : { chatId: source.type === "group" ? source.groupId : source.roomId, chatType: "group" };

/** One parsed event as a turn for the core, or why it is not one. Pure. */
export function translateMessage(event: LineEvent, context: { accountId: string }): Translation {
  if (event.mode === "standby") return { kind: "ignore", reason: "standby mode (another channel answers)" };
  if (!event.source) return { kind: "ignore", reason: "no source" };
  const chat = chatOf(event.source);
  const userId = event.source.userId;
  // A group member who has not agreed to share their profile comes without a user id: nobody the access rules can name.
  if (!userId) return { kind: "ignore", reason: "sender without a user id" };
  if (event.type === "postback" && event.postback) {
    return { kind: "postback", data: event.postback.data, chat, userId, replyToken: event.replyToken, sentAt: event.timestamp };
  }
  if (event.type !== "message") return { kind: "ignore", reason: `event ${event.type}` };
  const parsed = LineMessage.safeParse(event.message);
  if (!parsed.success) return { kind: "ignore", reason: "a message type this bridge does not read" };
  const message = parsed.data;
  const { text, mentioned } = message.type === "text" ? withoutSelfMention(message) : { text: "", mentioned: false };
  const files = filesOf(message);
  if (message.type === "sticker") return { kind: "ignore", reason: "sticker" };
  const inbound: InboundMessage = {
    platform: "line",
    accountId: context.accountId,
    chatId: chat.chatId,
    chatType: chat.chatType,
    userId,
    messageId: message.id,
    text: message.type === "location" ? [message.title, message.address].filter(Boolean).join("\n") : text,
    sentAt: event.timestamp,
    ...(chat.chatType === "group" ? { mentioned } : {}),
  };
  const quoteToken = "quoteToken" in message ? message.quoteToken : undefined;
  return { kind: "message", message: inbound, files, replyToken: event.replyToken, quoteToken };
}

/** The text with the bot's own mentions cut out, and whether there was one. */
export function withoutSelfMention(message: { text: string; mention?: { mentionees: z.infer<typeof Mentionee>[] } | undefined }): {
  text: string;
  mentioned: boolean;
} {
  const own = (message.mention?.mentionees ?? []).filter((m) => m.isSelf === true).sort((a, b) => b.index - a.index);
  let text = message.text;
  for (const m of own) text = text.slice(0, m.index) + text.slice(m.index + m.length);
  return { text: text.replace(/\s{2,}/g, " ").trim(), mentioned: own.length > 0 };
}

const EXTENSIONS: Record<LineFile["kind"], string> = { photo: "jpg", video: "mp4", audio: "m4a", document: "bin" };

function filesOf(message: LineMessage): LineFile[] {
  const base = { messageId: message.id, size: undefined, durationMs: undefined, externalUrl: undefined };
  const external = (m: { contentProvider?: { type: string; originalContentUrl?: string | undefined } | undefined }) =>
    m.contentProvider?.type === "external" ? m.contentProvider.originalContentUrl : undefined;
  switch (message.type) {
    case "image":
      return [{ ...base, kind: "photo", fileName: `image-${message.id}.${EXTENSIONS.photo}`, externalUrl: external(message) }];
    case "video":
      return [{ ...base, kind: "video", fileName: `video-${message.id}.${EXTENSIONS.video}`, durationMs: message.duration, externalUrl: external(message) }];
    case "audio":
      return [{ ...base, kind: "audio", fileName: `audio-${message.id}.${EXTENSIONS.audio}`, durationMs: message.duration, externalUrl: external(message) }];
    case "file":
      return [{ ...base, kind: "document", fileName: safeFileName(message.fileName, message.id), size: message.fileSize }];
    default:
      return [];
  }
}

/** A base name without folders or control characters (the sender chose it). */
export function safeFileName(name: string, id: string): string {
  const base =
    name
      .split(/[\\/]/)
      .pop()
      ?.replace(/[\u0000-\u001f]/g, "")
      .trim() ?? "";
  return base === "" || base === "." || base === ".." ? `file-${id}` : base.slice(0, 200);
}
