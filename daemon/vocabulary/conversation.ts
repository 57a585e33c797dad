/**
 * The one thread rule, for every platform. A message names
 *
 * - `chatId`: the chat the platform addresses (a group, channel, room, space
 *   or direct chat), whose settings apply;
 * - `threadId`: a conversation within that chat (a Telegram forum topic, a
 *   Discord thread, a Slack thread, a Matrix `m.thread`, a Mattermost root
 *   post, a Teams reply chain, a Google Chat or Feishu thread), absent at the
 *   chat's top level;
 * - `startsThread`: posted at the chat's top level, its reply opening the
 *   thread `threadId` under it (Slack): the thread is its conversation, the
 *   chat's top level its group context.
 *
 * Everything the core keys by a conversation comes from here and from
 * `chatKeyOf` (keys.ts: the thread's own bookkeeping key): its session base's chat part, its group-context key, the ids its group
 * settings are looked up by, and where its replies go. A platform only fills
 * those three fields; it never decides a key.
 */
import type { ChatTarget, InboundMessage } from "./adapter.js";
import { type ChatKey, chatKeyOf, encodeId } from "./keys.js";

/** A conversation's fields as a message or a journaled one has them. */
type Conversation = Pick<InboundMessage, "platform" | "accountId" | "chatId" | "chatType"> & {
  threadId?: string | undefined;
  startsThread?: boolean | undefined;
  groupAliases?: string[] | undefined;
};

/** Where the conversation's unaddressed group messages are kept and read: the thread's, or the chat's top level for a message that starts one. */
export const contextKeyOf = (m: Omit<Conversation, "chatType">): ChatKey =>
  chatKeyOf(m.startsThread ? { platform: m.platform, accountId: m.accountId, chatId: m.chatId } : m);

/**
 * The session base's part naming a group conversation: `group.<chat>` and
 * `.topic.<thread>` within it (the word every stored Telegram topic session has).
 */
export const groupPartOf = (m: Pick<Conversation, "chatId" | "threadId">): string =>
  `group.${encodeId(m.chatId)}${m.threadId === undefined ? "" : `.topic.${encodeId(m.threadId)}`}`;

/** A direct chat's thread (an assistant thread) within the person's conversation: `.topic.<thread>`, else nothing. */
export const directPartOf = (m: Pick<Conversation, "threadId">): string => (m.threadId === undefined ? "" : `.topic.${encodeId(m.threadId)}`);

/**
 * A thread's own key in `access.groups`: `<chat>:<thread>` (the Chat and
 * Thread `/whoami` shows there). Never the thread id alone: a Telegram topic's
 * id is a message id, unique only in its chat (topic 7 is in many forums), a
 * Slack ts only in its channel, so a bare one would carry one chat's thread
 * settings, access included, into every other chat with that thread id.
 */
export const threadSettingsIdOf = (m: Pick<Conversation, "chatId"> & { threadId: string }): string => `${m.chatId}:${m.threadId}`;

/**
 * The ids a group's settings (access, mention rule, context) are looked up
 * by, most specific first: the thread's own (`threadSettingsIdOf`), the id it
 * had before the one thread rule (`formerly`: what /whoami showed then, a
 * Discord thread's own channel, a Slack `C123:<ts>`, a Teams chain, each
 * unique to it, so a thread listed by it keeps its settings), the chat, then
 * what the chat belongs to (`groupAliases`: a guild, a team).
 */
export const settingsIdsOf = (m: Pick<Conversation, "chatId" | "threadId" | "groupAliases"> & Pick<InboundMessage, "formerly">): string[] => [
  ...new Set([
    ...(m.threadId !== undefined ? [threadSettingsIdOf({ chatId: m.chatId, threadId: m.threadId })] : []),
    ...(m.formerly !== undefined && m.formerly.chatId !== m.chatId ? [m.formerly.chatId] : []),
    m.chatId,
    ...(m.groupAliases ?? []),
  ]),
];

/** The first of `settingsIdsOf` that `groups` lists, or undefined. */
export const listedSettingsId = (
  m: Pick<Conversation, "chatId" | "threadId" | "groupAliases"> & Pick<InboundMessage, "formerly">,
  groups: Readonly<Record<string, unknown>>,
): string | undefined => settingsIdsOf(m).find((id) => Object.hasOwn(groups, id));

/**
 * The chat keys a conversation's own choices (`/queue <mode>`) are looked up
 * by, most specific first: its thread's, then its chat's top level, so a
 * choice made for a chat holds in its threads unless a thread made its own
 * (as its settings do; Slack takes no slash command in a thread).
 */
export const choiceKeysOf = (m: Pick<Conversation, "platform" | "accountId" | "chatId" | "threadId">): ChatKey[] =>
  m.threadId === undefined ? [chatKeyOf(m)] : [chatKeyOf(m), chatKeyOf({ platform: m.platform, accountId: m.accountId, chatId: m.chatId })];

/** Where a reply to `m` goes: its chat and, within it, its thread. */
export const replyPlaceOf = (m: Pick<Conversation, "platform" | "accountId" | "chatId" | "chatType" | "threadId">): Omit<ChatTarget, "replyToMessageId"> => ({
  platform: m.platform,
  accountId: m.accountId,
  chatId: m.chatId,
  chatType: m.chatType,
  ...(m.threadId !== undefined ? { threadId: m.threadId } : {}),
});

/**
 * The same conversation as it was named before the one thread rule
 * (`InboundMessage.formerly`), for the lazy move of its stored session:
 * undefined when nothing changed.
 */
export function formerConversationOf<M extends Pick<InboundMessage, "chatId" | "threadId" | "formerly">>(
  m: M,
): (Omit<M, "chatId" | "threadId"> & { chatId: string; threadId?: string }) | undefined {
  const before = m.formerly;
  if (!before) return undefined;
  if (before.chatId === m.chatId && before.threadId === m.threadId) return undefined;
  const { threadId: _now, chatId: _chat, ...rest } = m;
  return { ...rest, chatId: before.chatId, ...(before.threadId !== undefined ? { threadId: before.threadId } : {}) };
}
