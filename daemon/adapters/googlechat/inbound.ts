/**
 * Google Chat's interaction events (developers.google.com/workspace/chat/api/reference/rest/v1/Event)
 * as the core's `InboundMessage`s. Pure: no I/O. A direct message space is
 * the chat; in a space (or group chat) each thread is a conversation of its
 * own: `chatId` the space (`spaces/AAA`, whose settings apply), `threadId`
 * the thread's id, so its session, context and replies are its own (the one
 * thread rule, vocabulary/conversation.ts); a message at the space's top level
 * starts its thread (`startsThread`: its context is the space's). In a
 * space Chat sends an app only what @mentions it (or its slash commands);
 * `argumentText` is the text with the mention taken out.
 */
import { z } from "zod";
import type { InboundMessage } from "../../vocabulary/adapter.js";

const User = z.object({ name: z.string(), displayName: z.string().optional(), type: z.string().optional() });

const Space = z.object({
  name: z.string().regex(/^spaces\/[^/]+$/),
  /** Deprecated, still sent: "DM" or "ROOM". */
  type: z.string().optional(),
  /** "DIRECT_MESSAGE", "GROUP_CHAT" or "SPACE". */
  spaceType: z.string().optional(),
  singleUserBotDm: z.boolean().optional(),
});

export const ChatAttachment = z.object({
  name: z.string().optional(),
  contentName: z.string().optional(),
  contentType: z.string().optional(),
  attachmentDataRef: z.object({ resourceName: z.string().optional() }).optional(),
  driveDataRef: z.object({ driveFileId: z.string().optional() }).optional(),
  source: z.string().optional(),
});
export type ChatAttachment = z.output<typeof ChatAttachment>;

const Annotation = z.object({
  type: z.string(),
  userMention: z.object({ user: User.partial({ name: true }).optional(), type: z.string().optional() }).optional(),
});

export const ChatMessage = z.object({
  name: z.string().regex(/^spaces\/[^/]+\/messages\/[^/]+$/),
  sender: User.optional(),
  createTime: z.string().optional(),
  text: z.string().optional(),
  argumentText: z.string().optional(),
  thread: z.object({ name: z.string().optional() }).optional(),
  /** True for a reply in a thread; absent or false on a message in the space's top level (which starts its thread). */
  threadReply: z.boolean().optional(),
  annotations: z.array(Annotation).optional(),
  attachment: z.array(ChatAttachment).optional(),
  slashCommand: z.object({ commandId: z.union([z.string(), z.number()]) }).optional(),
});
export type ChatMessage = z.output<typeof ChatMessage>;

/** One event as Chat posts it to an HTTP endpoint app. */
export const ChatEvent = z.object({
  type: z.string(),
  eventTime: z.string().optional(),
  space: Space.optional(),
  message: ChatMessage.optional(),
  user: User.optional(),
  action: z.object({ actionMethodName: z.string().optional(), parameters: z.array(z.object({ key: z.string(), value: z.string() })).optional() }).optional(),
  common: z.object({ invokedFunction: z.string().optional(), parameters: z.record(z.string(), z.string()).optional() }).optional(),
});
export type ChatEvent = z.output<typeof ChatEvent>;

/** The function a question's buttons invoke (cards v2 `onClick.action.function`). */
export const ANSWER_FUNCTION = "agent-bridge-answer";

export type Translation =
  | { kind: "message"; message: InboundMessage; files: ChatAttachment[] }
  | { kind: "tap"; message: InboundMessage }
  | { kind: "ignore"; reason: string };

const isDirect = (space: z.output<typeof Space>): boolean => space.spaceType === "DIRECT_MESSAGE" || space.type === "DM" || space.singleUserBotDm === true;

/** `spaces/S/threads/T` → `T`. */
export const threadIdOf = (threadName: string | undefined): string | undefined => /^spaces\/[^/]+\/threads\/([^/]+)$/.exec(threadName ?? "")?.[1];
/** The thread's resource name from the target's chat and thread id. */
export const threadNameOf = (chatId: string, threadId: string): string => `${chatId}/threads/${threadId}`;

/** What an event means for the core: a message, a button tap, or nothing. */
export function translateMessage(event: ChatEvent, accountId: string, now: number): Translation {
  if (event.type === "CARD_CLICKED") return translateTap(event, accountId, now);
  // ADDED_TO_SPACE carries the message when the app was added by @mentioning it.
  if (event.type !== "MESSAGE" && !(event.type === "ADDED_TO_SPACE" && event.message)) return { kind: "ignore", reason: `event ${event.type}` };
  const { message, space } = event;
  if (!message || !space) return { kind: "ignore", reason: "no message" };
  const sender = message.sender ?? event.user;
  if (!sender) return { kind: "ignore", reason: "no sender" };
  if (sender.type === "BOT") return { kind: "ignore", reason: "from an app" };
  const direct = isDirect(space);
  const threadId = direct ? undefined : threadIdOf(message.thread?.name);
  // In a space the mention is in the text; argumentText is what follows it.
  const text = (direct ? message.text : (message.argumentText ?? message.text)) ?? "";
  const mentionsApp = (message.annotations ?? []).some((a) => a.type === "USER_MENTION" && a.userMention?.user?.type === "BOT");
  const inbound: InboundMessage = {
    platform: "googlechat",
    accountId,
    chatId: space.name,
    chatType: direct ? "direct" : "group",
    ...(threadId !== undefined ? { threadId, ...(message.threadReply ? {} : { startsThread: true }) } : {}),
    userId: sender.name,
    ...(sender.displayName ? { userName: sender.displayName } : {}),
    messageId: message.name,
    text: text.trim(),
    ...(direct ? {} : { mentioned: mentionsApp || message.slashCommand !== undefined }),
    sentAt: timeOf(message.createTime ?? event.eventTime, now),
  };
  return { kind: "message", message: inbound, files: message.attachment ?? [] };
}

function translateTap(event: ChatEvent, accountId: string, now: number): Translation {
  const fn = event.common?.invokedFunction ?? event.action?.actionMethodName;
  if (fn !== ANSWER_FUNCTION) return { kind: "ignore", reason: `card action ${fn ?? "unnamed"}` };
  const params = event.common?.parameters ?? Object.fromEntries((event.action?.parameters ?? []).map((p) => [p.key, p.value]));
  const questionId = params.q;
  const option = params.o;
  const { message, space, user } = event;
  if (!questionId || !option || !/^\d+$/.test(option) || !message || !space || !user) return { kind: "ignore", reason: "malformed tap" };
  const direct = isDirect(space);
  const threadId = direct ? undefined : threadIdOf(message.thread?.name);
  return {
    kind: "tap",
    message: {
      platform: "googlechat",
      accountId,
      chatId: space.name,
      chatType: direct ? "direct" : "group",
      ...(threadId !== undefined ? { threadId } : {}),
      userId: user.name,
      ...(user.displayName ? { userName: user.displayName } : {}),
      // The core keys a tap by its question: a second tap is one answer whatever this id.
      messageId: `${message.name}:tap:${user.name}:${event.eventTime ?? now}`,
      text: option,
      sentAt: timeOf(event.eventTime, now),
      answers: { questionId },
    },
  };
}

const timeOf = (iso: string | undefined, fallback: number): number => {
  const t = iso ? Date.parse(iso) : Number.NaN;
  return Number.isFinite(t) ? t : fallback;
};

/** A safe base name for an attachment (no folders). */
export function safeFileName(file: ChatAttachment, index: number): string {
  const base = (file.contentName ?? "").split(/[\\/]/).pop()?.trim() ?? "";
  return base && base !== "." && base !== ".." ? base.slice(0, 200) : `attachment-${index + 1}`;
}

/** The core's kind for a MIME type. */
export function attachmentKind(mimeType: string | undefined): "photo" | "audio" | "video" | "document" {
  if (mimeType?.startsWith("image/")) return "photo";
  if (mimeType?.startsWith("audio/")) return "audio";
  if (mimeType?.startsWith("video/")) return "video";
  return "document";
}
