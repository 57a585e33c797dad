/**
 * Pure translation of one Discord message into the core's terms
 * (`translateMessage`): whether the bot should see it at all (bots, system
 * messages, webhooks, empty mentions) and with what text, chat type, group
 * aliases and mention flag. No discord.js objects here, only a plain view of
 * the message (message-view.ts reads it off discord.js), so every rule is
 * testable without a gateway.
 *
 * Threads, by the one thread rule (vocabulary/conversation.ts): a thread's
 * chat is its parent channel and the thread channel its `threadId` (Discord
 * addresses a thread as a channel of its own: the reply goes to the thread's
 * id, outbound.ts); the guild is the group alias. Before the one rule the
 * thread was the chat (`formerly`, so its stored session moves).
 */
import { safeBaseName } from "../../../shared/util/names.js";
import type { ChatType, InboundAttachment, InboundMessage } from "../../vocabulary/adapter.js";
import type { DiscordChannelConfig } from "./config.js";

export interface DiscordAttachmentView {
  id: string;
  name: string | null;
  url: string;
  /** Bytes, as Discord reports them. */
  size: number;
  contentType: string | null;
  /** A voice message's length, seconds (Discord's `duration_secs`); null for other files. */
  duration?: number | null;
}

/** The parts of a discord.js `Message` the adapter reads. */
export interface DiscordMessageView {
  id: string;
  channelId: string;
  /** Null in DMs. */
  guildId: string | null;
  /** A thread's parent channel, so a thread inherits its channel's settings. */
  parentChannelId: string | null;
  authorId: string;
  authorIsBot: boolean;
  authorName: string;
  /** Joins, pins, boosts and other messages Discord writes itself. */
  isSystem: boolean;
  fromWebhook: boolean;
  content: string;
  createdTimestamp: number;
  mentionedUserIds: readonly string[];
  mentionedRoleIds: readonly string[];
  /** Author of the message this one replies to, if any. */
  repliedUserId: string | null;
  attachments: readonly DiscordAttachmentView[];
}

export interface BotIdentity {
  id: string;
  name: string;
  /** The bot's managed role in this guild: people often @mention that instead of the bot. */
  roleIds: readonly string[];
}

export type InboundDecision =
  | { kind: "ignore"; reason: "own message" | "bot author" | "system message" | "webhook" | "empty" }
  /** `mentioned` (groups only): whether it addresses the bot; the core applies the group's mention rule. */
  | { kind: "accept"; chatType: ChatType; text: string; mentioned?: boolean };

type MentionConfig = Pick<DiscordChannelConfig, "access" | "requireMention">;

/**
 * Group settings may be keyed by the channel, a thread's parent channel or the
 * guild: the most specific listed one wins.
 */
export function groupSettingsKey(config: MentionConfig, view: Pick<DiscordMessageView, "channelId" | "parentChannelId" | "guildId">): string {
  const candidates = [view.channelId, view.parentChannelId, view.guildId].filter((id): id is string => Boolean(id));
  return candidates.find((id) => Object.hasOwn(config.access.groups, id)) ?? view.channelId;
}

export function mentionsBot(view: DiscordMessageView, bot: BotIdentity): boolean {
  if (view.mentionedUserIds.includes(bot.id)) return true;
  if (view.repliedUserId === bot.id) return true;
  if (view.mentionedRoleIds.some((id) => bot.roleIds.includes(id))) return true;
  // `mentions` is authoritative, but the raw tag in the text is proof enough.
  return mentionTags(bot).some((tag) => view.content.includes(tag));
}

function mentionTags(bot: BotIdentity): string[] {
  return [`<@${bot.id}>`, `<@!${bot.id}>`, ...bot.roleIds.map((id) => `<@&${id}>`)];
}

/**
 * Removes the leading bot mention(s) ("<@123> hi", "<@!123>, hi"); a mention
 * later in the sentence becomes a readable "@name" instead of vanishing.
 */
export function stripBotMention(content: string, bot: BotIdentity): string {
  const tags = mentionTags(bot);
  let text = content.trim();
  for (;;) {
    const tag = tags.find((t) => text.startsWith(t));
    if (!tag) break;
    text = text.slice(tag.length).replace(/^[\s,:;]+/, "");
  }
  for (const tag of tags) text = text.split(tag).join(`@${bot.name}`);
  return text.trim();
}

export function classifyMessage(view: DiscordMessageView, bot: BotIdentity): InboundDecision {
  if (view.authorId === bot.id) return { kind: "ignore", reason: "own message" };
  if (view.authorIsBot) return { kind: "ignore", reason: "bot author" };
  if (view.fromWebhook) return { kind: "ignore", reason: "webhook" };
  if (view.isSystem) return { kind: "ignore", reason: "system message" };

  const chatType: ChatType = view.guildId ? "group" : "direct";
  const text = stripBotMention(view.content, bot);
  if (!text && view.attachments.length === 0) return { kind: "ignore", reason: "empty" };
  return chatType === "group" ? { kind: "accept", chatType, text, mentioned: mentionsBot(view, bot) } : { kind: "accept", chatType, text };
}

/** What `translateMessage` needs besides the message. */
export interface TranslateContext {
  /** The bot as this guild knows it (its id, name and managed role). */
  bot: BotIdentity;
  /** The channel's account id, copied into the message. */
  accountId: string;
  /** Told why a message is not for the core (for a debug line); default: nobody. */
  onIgnored?(reason: IgnoreReason): void;
}

export type IgnoreReason = Extract<InboundDecision, { kind: "ignore" }>["reason"];

/**
 * Where a Discord message becomes the core's `InboundMessage`, or undefined
 * when the bot should not see it. Attachments are not here: they are fetched
 * only once the core admits the message (hand-over.ts).
 */
export function translateMessage(view: DiscordMessageView, context: TranslateContext): InboundMessage | undefined {
  const decision = classifyMessage(view, context.bot);
  if (decision.kind === "ignore") {
    context.onIgnored?.(decision.reason);
    return undefined;
  }
  return {
    platform: "discord",
    accountId: context.accountId,
    ...placeOf(view),
    chatType: decision.chatType,
    userId: view.authorId,
    userName: view.authorName,
    messageId: view.id,
    text: decision.text,
    sentAt: view.createdTimestamp,
    ...(decision.mentioned !== undefined ? { mentioned: decision.mentioned } : {}),
  };
}

/**
 * A Discord channel as the core's chat and thread: a thread is its parent's `threadId`, the guild the
 * group alias (its settings apply where neither the thread nor the channel is listed). Messages, taps
 * and commands all name their place through this.
 */
export function placeOf(
  view: Pick<DiscordMessageView, "channelId" | "parentChannelId" | "guildId">,
): Pick<InboundMessage, "chatId" | "threadId" | "groupAliases" | "formerly"> {
  const aliases = view.guildId ? { groupAliases: [view.guildId] } : {};
  if (!view.parentChannelId) return { chatId: view.channelId, ...aliases };
  return { chatId: view.parentChannelId, threadId: view.channelId, ...aliases, formerly: { chatId: view.channelId } };
}

export function attachmentKind(contentType: string | null): InboundAttachment["kind"] {
  const type = (contentType ?? "").toLowerCase();
  if (type.startsWith("image/")) return "photo";
  if (type.startsWith("audio/")) return "audio";
  if (type.startsWith("video/")) return "video";
  if (type.startsWith("application/") || type.startsWith("text/")) return "document";
  return "other";
}

/** A base name with no folders or control characters; invented when Discord gives none. */
export const safeFileName = (name: string | null, fallbackId: string): string => safeBaseName(name) ?? `attachment-${fallbackId}`;
