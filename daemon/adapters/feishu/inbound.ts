/**
 * Pure translation of Feishu's events into the core's terms: an
 * `im.message.receive_v1` event into an `InboundMessage` with the files to
 * fetch once admitted (`translateMessage`), and a tap on a question's card
 * button (`card.action.trigger`) into the answer it gives (`translateTap`).
 * No I/O: the event comes parsed (events.ts), the files are fetched later
 * (files.ts, through hand-over.ts).
 *
 * Chats: a chat is Feishu's `chat_id` (oc_...), in a direct chat (`p2p`) as
 * in a group. A message in a thread (topic) carries `thread_id` (omt_...):
 * the thread is a conversation of its own inside the chat, the `threadId`
 * beside the chat (its own session and group context, the group's settings),
 * and replies go into it (reply with `reply_in_thread`). In a group, the bot
 * is addressed when `mentions` names its open id; the `@_user_1`
 * placeholders in the text become names (the bot's own leading one goes).
 */
import { z } from "zod";
import { safeBaseName } from "../../../shared/util/names.js";
import type { InboundAttachment, InboundMessage } from "../../vocabulary/adapter.js";

const UserId = z.looseObject({ open_id: z.string().optional(), user_id: z.string().nullish(), union_id: z.string().nullish() });

export const FeishuMention = z.looseObject({ key: z.string(), id: UserId, name: z.string().optional() });

/** `im.message.receive_v1`'s `event`: only what the bridge reads, the rest kept as is. */
export const FeishuMessageEvent = z.looseObject({
  sender: z.looseObject({ sender_id: UserId.optional(), sender_type: z.string().optional() }),
  message: z.looseObject({
    message_id: z.string().min(1),
    root_id: z.string().nullish(),
    parent_id: z.string().nullish(),
    thread_id: z.string().nullish(),
    create_time: z.string().optional(),
    chat_id: z.string().min(1),
    chat_type: z.string(),
    message_type: z.string(),
    content: z.string(),
    mentions: z.array(FeishuMention).nullish(),
  }),
});
export type FeishuMessageEvent = z.infer<typeof FeishuMessageEvent>;

/** The v2 event envelope (`schema: "2.0"`), once decrypted. */
export const FeishuEnvelope = z.looseObject({
  schema: z.literal("2.0"),
  header: z.looseObject({ event_id: z.string().min(1), event_type: z.string(), token: z.string().optional(), create_time: z.string().optional() }),
  event: z.unknown(),
});
export type FeishuEnvelope = z.infer<typeof FeishuEnvelope>;

/** `card.action.trigger`'s `event`: who tapped, what the button carried, where. */
export const FeishuCardAction = z.looseObject({
  operator: z.looseObject({ open_id: z.string().min(1), user_id: z.string().nullish() }),
  action: z.looseObject({ value: z.unknown(), tag: z.string().optional() }),
  context: z.looseObject({ open_message_id: z.string().min(1), open_chat_id: z.string().min(1) }),
});
export type FeishuCardAction = z.infer<typeof FeishuCardAction>;

/** A file a message brings: its resource key and how `messageResource.get` names its type. */
export interface FeishuFileRef {
  messageId: string;
  key: string;
  /** `image` for images (an image in a rich-text post too), `file` for files, audio and video. */
  resource: "image" | "file";
  fileName: string;
  kind: InboundAttachment["kind"];
  /** Audio and video: seconds, from the content's `duration` (ms). */
  seconds?: number;
}

export type IgnoreReason = "not a person" | "no sender" | "unreadable" | "empty";

export type InboundDecision = { kind: "ignore"; reason: IgnoreReason } | { kind: "accept"; message: InboundMessage; files: readonly FeishuFileRef[] };

export interface TranslateContext {
  /** The bot's open id (bot/v3/info): a mention of it addresses the bot. */
  botOpenId: string;
  accountId: string;
}

const TextContent = z.looseObject({ text: z.string() });
const ImageContent = z.looseObject({ image_key: z.string().min(1) });
const FileContent = z.looseObject({ file_key: z.string().min(1), file_name: z.string().optional(), duration: z.number().optional() });
const PostElement = z.looseObject({
  tag: z.string(),
  text: z.string().optional(),
  user_id: z.string().optional(),
  image_key: z.string().optional(),
  href: z.string().optional(),
});
const PostContent = z.looseObject({ title: z.string().nullish(), content: z.array(z.array(PostElement)) });

/** The content's text and files, by message type; undefined when it cannot be read. */
function readContent(type: string, raw: string, messageId: string): { text: string; files: FeishuFileRef[] } | undefined {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const file = (key: string, resource: "image" | "file", fileName: string, kind: InboundAttachment["kind"], durationMs?: number): FeishuFileRef => ({
    messageId,
    key,
    resource,
    fileName,
    kind,
    ...(durationMs !== undefined ? { seconds: durationMs / 1000 } : {}),
  });
  switch (type) {
    case "text": {
      const c = TextContent.safeParse(json);
      return c.success ? { text: c.data.text, files: [] } : undefined;
    }
    case "post": {
      const c = PostContent.safeParse(json);
      if (!c.success) return undefined;
      const files: FeishuFileRef[] = [];
      const lines = c.data.content.map((line) =>
        line
          .map((el) => {
            if (el.tag === "img" && el.image_key) files.push(file(el.image_key, "image", `${el.image_key}.png`, "photo"));
            if (el.tag === "at") return el.user_id ?? "";
            if (el.tag === "a" && el.href) return el.text ? `${el.text} (${el.href})` : el.href;
            return el.text ?? "";
          })
          .join(""),
      );
      return { text: [c.data.title ?? "", ...lines].filter((l) => l.trim() !== "").join("\n"), files };
    }
    case "image": {
      const c = ImageContent.safeParse(json);
      return c.success ? { text: "", files: [file(c.data.image_key, "image", `${c.data.image_key}.png`, "photo")] } : undefined;
    }
    case "file":
    case "audio":
    case "media": {
      const c = FileContent.safeParse(json);
      if (!c.success) return undefined;
      const kind = type === "audio" ? "audio" : type === "media" ? "video" : "document";
      // Feishu's voice messages are Opus in an Ogg container and come without a name.
      const fallback = type === "audio" ? `${c.data.file_key}.opus` : type === "media" ? `${c.data.file_key}.mp4` : c.data.file_key;
      const name = safeBaseName(c.data.file_name ?? null) ?? fallback;
      return { text: "", files: [file(c.data.file_key, "file", name, kind, kind === "document" ? undefined : c.data.duration)] };
    }
    default:
      return undefined;
  }
}

/** The text with mention placeholders resolved: the bot's leading mention removed, the others as `@name`. */
export function resolveMentions(text: string, mentions: readonly z.infer<typeof FeishuMention>[], botOpenId: string): string {
  let out = text;
  const bot = mentions.find((m) => m.id.open_id === botOpenId);
  if (bot) out = out.replace(new RegExp(`^(\\s*${escapeRegExp(bot.key)}[\\s,:;]*)+`), "");
  for (const m of mentions) out = out.split(m.key).join(m.id.open_id === botOpenId ? `@${m.name ?? "bot"}` : `@${m.name ?? m.key}`);
  return out.trim();
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Where a Feishu message event becomes the core's `InboundMessage`, with the files to fetch once admitted, or why it is not a turn. */
export function translateMessage(event: FeishuMessageEvent, context: TranslateContext): InboundDecision {
  // Other apps' messages (sender_type "app") are not turns; the bot's own never come.
  if (event.sender.sender_type !== undefined && event.sender.sender_type !== "user") return { kind: "ignore", reason: "not a person" };
  const userId = event.sender.sender_id?.open_id;
  if (!userId) return { kind: "ignore", reason: "no sender" };
  const m = event.message;
  const content = readContent(m.message_type, m.content, m.message_id);
  if (!content) return { kind: "ignore", reason: "unreadable" };
  const mentions = m.mentions ?? [];
  const text = resolveMentions(content.text, mentions, context.botOpenId);
  if (!text && content.files.length === 0) return { kind: "ignore", reason: "empty" };
  const direct = m.chat_type === "p2p";
  const sentAt = Number(m.create_time);
  const message: InboundMessage = {
    platform: "feishu",
    accountId: context.accountId,
    chatId: m.chat_id,
    chatType: direct ? "direct" : "group",
    userId,
    messageId: m.message_id,
    text,
    sentAt: Number.isFinite(sentAt) ? sentAt : 0,
  };
  if (m.thread_id) message.threadId = m.thread_id;
  if (!direct) message.mentioned = mentions.some((x) => x.id.open_id === context.botOpenId);
  return { kind: "accept", message, files: content.files };
}

/** What a question's button carries (`action.value`): the question, the option, and where it was asked. */
export const ButtonValue = z.strictObject({
  q: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  o: z.number().int().min(1).max(99),
  /** "d": a direct chat; "g": a group. */
  t: z.enum(["d", "g"]),
  th: z.string().optional(),
});
export type ButtonValue = z.infer<typeof ButtonValue>;

/** Whether `id` is a Feishu message's (om_...): the core also names ids of its own (a tap's answer), which no reply can quote. */
export const isFeishuMessageId = (id: string): boolean => id.startsWith("om_");

/** A tap as the answer it gives, or undefined when the button is not one of the bridge's questions. */
export function translateTap(action: FeishuCardAction, context: { accountId: string; eventId: string; nowMs: number }): InboundMessage | undefined {
  const value = ButtonValue.safeParse(action.action.value);
  if (!value.success) return undefined;
  const { q, o, t, th } = value.data;
  return {
    platform: "feishu",
    accountId: context.accountId,
    chatId: action.context.open_chat_id,
    chatType: t === "d" ? "direct" : "group",
    ...(th ? { threadId: th } : {}),
    ...(t === "g" ? { mentioned: true } : {}),
    userId: action.operator.open_id,
    // The callback's event id: Feishu's redelivery of this tap carries the same one.
    messageId: `tap-${context.eventId}`,
    text: String(o),
    sentAt: context.nowMs,
    answers: { questionId: q },
  };
}
