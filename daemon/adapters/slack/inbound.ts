/**
 * Pure translation of one Slack event into the core's terms
 * (`translateMessage`): whether it is a turn at all (the bot's own and other
 * bots' messages, edits, joins and other subtypes are not), which chat it
 * belongs to, its text and whether it addresses the bot. No I/O: the event
 * comes parsed (events.ts), the files are fetched later, once admitted
 * (files.ts, through hand-over.ts).
 *
 * Chats, by the one thread rule (vocabulary/conversation.ts): the chat is
 * the conversation Slack addresses (`C123`, `D123`), the thread its root's ts
 * (`threadId`). A direct message's chat is its `im` channel (one session per
 * person); a direct message inside a thread (`thread_ts`: how Slack's
 * assistant pane and AI apps talk to a bot, which @slack/bolt's `Assistant`
 * treats as an assistant-thread message) has the thread as its `threadId` (a
 * session of its own), answered and shown "is thinking" in the thread. In a
 * channel every message is in a thread: a reply in its thread, a top-level
 * message in the one it roots (`startsThread`: its group context is the
 * channel's top-level talk), so a thread is a session. Group settings keyed
 * by the channel id apply to all its threads. Before the one rule a thread
 * was a chat of its own, `C123:<ts>` (`formerly`, so stored sessions move).
 */
import { z } from "zod";
import { safeBaseName } from "../../../shared/util/names.js";
import type { ChatTarget, InboundAttachment, InboundMessage } from "../../vocabulary/adapter.js";

/** A file on a Slack message, as Slack describes it. */
export const SlackFile = z.looseObject({
  id: z.string(),
  name: z.string().nullish(),
  mimetype: z.string().nullish(),
  size: z.number().nullish(),
  url_private: z.string().nullish(),
  url_private_download: z.string().nullish(),
  /** An audio or video clip recorded in Slack: `slack_audio` / `slack_video`. */
  subtype: z.string().nullish(),
  /** How Slack shows it: `audio` for an audio clip or audio file. */
  media_display_type: z.string().nullish(),
  /** A clip's length, ms. */
  duration_ms: z.number().nonnegative().nullish(),
});
export type SlackFile = z.infer<typeof SlackFile>;

/** The `event` of an `event_callback`: only what the bridge reads, the rest kept as is. */
export const SlackMessageEvent = z.looseObject({
  type: z.string(),
  subtype: z.string().optional(),
  user: z.string().optional(),
  bot_id: z.string().nullish(),
  text: z.string().optional(),
  ts: z.string().optional(),
  thread_ts: z.string().optional(),
  channel: z.string().optional(),
  channel_type: z.string().optional(),
  files: z.array(SlackFile).optional(),
  user_profile: z.looseObject({ display_name: z.string().optional(), real_name: z.string().optional() }).optional(),
});
export type SlackMessageEvent = z.infer<typeof SlackMessageEvent>;

/** What Slack posts (HTTP) or wraps in an `events_api` envelope (Socket Mode). */
export const SlackEventCallback = z.looseObject({
  type: z.literal("event_callback"),
  event_id: z.string(),
  event_time: z.number().optional(),
  team_id: z.string().optional(),
  event: SlackMessageEvent,
});
export type SlackEventCallback = z.infer<typeof SlackEventCallback>;

/** A slash command's payload (`/agent new`): form fields over HTTP, the envelope's payload in Socket Mode. */
export const SlackSlashCommand = z.looseObject({
  command: z.string().regex(/^\//),
  text: z.string().default(""),
  user_id: z.string().min(1),
  user_name: z.string().optional(),
  channel_id: z.string().min(1),
  trigger_id: z.string().min(1),
});
export type SlackSlashCommand = z.infer<typeof SlackSlashCommand>;

/** The bot as `auth.test` named it. */
export interface BotIdentity {
  userId: string;
  /** The bot's `bot_id` (its own messages carry it). */
  botId?: string | undefined;
  name: string;
}

/** Subtypes that are still a person's message: a file shared with text, a thread reply also sent to the channel. */
const TURN_SUBTYPES = new Set(["file_share", "thread_broadcast"]);

export type IgnoreReason = "not a message" | "own message" | "bot author" | "subtype" | "no sender" | "empty";

export type InboundDecision = { kind: "ignore"; reason: IgnoreReason } | { kind: "accept"; message: InboundMessage; files: readonly SlackFile[] };

export interface TranslateContext {
  bot: BotIdentity;
  accountId: string;
  /** Whether the bot already answers in this thread chat (a follow-up there needs no mention). Default: never. */
  inActiveThread?(chatId: string): boolean;
}

/**
 * `C123:1700000000.000100`, a thread as one id: the adapter's own memory of the threads it answers in, and
 * a thread's chat id before the one thread rule (`formerly`; entries journaled then still name it).
 */
export const threadChatId = (channel: string, threadTs: string): string => `${channel}:${threadTs}`;

/** Where a chat id points on Slack: the conversation, and the thread (a former `C123:<ts>` chat id holds one). */
export function conversationOf(chatId: string): { channel: string; threadTs?: string } {
  const at = chatId.indexOf(":");
  return at < 0 ? { channel: chatId } : { channel: chatId.slice(0, at), threadTs: chatId.slice(at + 1) };
}

/** The Slack place a reply to `target` goes: its conversation and thread. */
export function placeOf(target: Pick<ChatTarget, "chatId" | "threadId">): { channel: string; threadTs?: string } {
  const { channel, threadTs } = conversationOf(target.chatId);
  const thread = target.threadId ?? threadTs;
  return thread === undefined ? { channel } : { channel, threadTs: thread };
}

/** One thread (or a chat's top level) as one key: the adapter's per-thread order and memory. */
export const placeKeyOf = (m: Pick<InboundMessage, "chatId" | "threadId">): string =>
  m.threadId === undefined ? m.chatId : threadChatId(m.chatId, m.threadId);

/**
 * A Slack message's chat and thread by the one thread rule (vocabulary/conversation.ts), and how the
 * shape before it named them (`formerly`). `ts`: the message's own (a top-level channel message roots a thread).
 */
export function threadOf(
  channel: string,
  direct: boolean,
  threadTs: string | undefined,
  ts: string,
): Pick<InboundMessage, "chatId" | "threadId" | "startsThread" | "formerly"> {
  if (direct)
    return threadTs === undefined
      ? { chatId: channel }
      : { chatId: channel, threadId: threadTs, formerly: { chatId: threadChatId(channel, threadTs), threadId: threadTs } };
  const root = threadTs ?? ts;
  return { chatId: channel, threadId: root, ...(root === ts ? { startsThread: true } : {}), formerly: { chatId: threadChatId(channel, root) } };
}

const isDirect = (event: SlackMessageEvent): boolean => event.channel_type === "im" || (event.channel?.startsWith("D") ?? false);

/** Slack escapes `&`, `<`, `>` in message text; links and mentions come as `<...>`. */
export function plainText(text: string, bot: BotIdentity): string {
  const botTag = new RegExp(`^(\\s*<@${bot.userId}(\\|[^>]*)?>[\\s,:;]*)+`);
  return text
    .replace(botTag, "")
    .replace(new RegExp(`<@${bot.userId}(\\|[^>]*)?>`, "g"), `@${bot.name}`)
    .replace(/<(https?:[^|>]+)\|([^>]+)>/g, "$2 ($1)")
    .replace(/<(https?:[^|>]+)>/g, "$1")
    .replace(/<([@#!][^|>]*)\|([^>]+)>/g, "$2")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
    .trim();
}

export function mentionsBot(event: SlackMessageEvent, bot: BotIdentity): boolean {
  return event.type === "app_mention" || (event.text ?? "").includes(`<@${bot.userId}`);
}

export function classify(event: SlackMessageEvent, bot: BotIdentity): IgnoreReason | undefined {
  if (event.type !== "message" && event.type !== "app_mention") return "not a message";
  if (event.user === bot.userId || (bot.botId !== undefined && event.bot_id === bot.botId)) return "own message";
  if (event.bot_id) return "bot author";
  if (event.subtype !== undefined && !TURN_SUBTYPES.has(event.subtype)) return "subtype";
  if (!event.user || !event.channel || !event.ts) return "no sender";
  if (!plainText(event.text ?? "", bot) && !event.files?.length) return "empty";
  return undefined;
}

/**
 * Where a Slack event becomes the core's `InboundMessage`, with the files to
 * fetch once admitted, or why it is not a turn.
 */
export function translateMessage(event: SlackMessageEvent, context: TranslateContext): InboundDecision {
  const reason = classify(event, context.bot);
  if (reason !== undefined) return { kind: "ignore", reason };
  // classify made sure these are there.
  const channel = event.channel ?? "";
  const ts = event.ts ?? "";
  const direct = isDirect(event);
  const thread = threadOf(channel, direct, event.thread_ts, ts);
  const name = event.user_profile?.display_name || event.user_profile?.real_name;
  const message: InboundMessage = {
    platform: "slack",
    accountId: context.accountId,
    ...thread,
    chatType: direct ? "direct" : "group",
    userId: event.user ?? "",
    ...(name ? { userName: name } : {}),
    messageId: ts,
    text: plainText(event.text ?? "", context.bot),
    sentAt: Math.round(Number(ts) * 1000),
  };
  if (!direct) message.mentioned = mentionsBot(event, context.bot) || (context.inActiveThread?.(placeKeyOf(message)) ?? false);
  return { kind: "accept", message, files: event.files ?? [] };
}

/**
 * A slash command (`/agent new`, `/agent approve CODE`) as the message
 * `/new`, `/approve CODE`: Slack's composer takes a leading "/" for its own
 * commands, so the bridge's commands come through one slash command of the
 * app. In a DM it is that DM's chat; in a channel the channel itself (a
 * command has no thread), answered there. Its trigger id is its message id
 * (Slack does not retry a slash command).
 */
export function translateSlashCommand(command: SlackSlashCommand, context: Pick<TranslateContext, "accountId">, nowMs: number): InboundMessage {
  const direct = command.channel_id.startsWith("D");
  const words = command.text.trim();
  return {
    platform: "slack",
    accountId: context.accountId,
    chatId: command.channel_id,
    chatType: direct ? "direct" : "group",
    ...(direct ? {} : { mentioned: true }),
    userId: command.user_id,
    ...(command.user_name ? { userName: command.user_name } : {}),
    messageId: `cmd-${command.trigger_id}`,
    text: words ? `/${words.replace(/^\//, "")}` : "/help",
    sentAt: nowMs,
  };
}

/** An audio clip Slack recorded (its mimetype may be a container's, `video/mp4` or `audio/webm`), or any audio file. */
export const isAudio = (file: SlackFile): boolean => file.subtype === "slack_audio" || file.media_display_type === "audio";

/** Its length in seconds, where Slack says it (transcription's `maxSeconds` is checked against it). */
export const secondsOf = (file: SlackFile): number | undefined => (typeof file.duration_ms === "number" ? file.duration_ms / 1000 : undefined);

export function attachmentKind(mimeType: string | null | undefined): InboundAttachment["kind"] {
  const type = (mimeType ?? "").toLowerCase();
  if (type.startsWith("image/")) return "photo";
  if (type.startsWith("audio/")) return "audio";
  if (type.startsWith("video/")) return "video";
  if (type.startsWith("application/") || type.startsWith("text/")) return "document";
  return "other";
}

/** A base name with no folders or control characters; invented when Slack gives none. */
export const safeFileName = (file: SlackFile): string => safeBaseName(file.name ?? null) ?? `file-${file.id}`;
