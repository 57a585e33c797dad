/**
 * Mattermost posts as the daemon's InboundMessages: PURE translation, no I/O.
 * A post comes from the WebSocket's `posted` event (which says the channel's
 * type and whom the post mentions) or from the channel's history after a
 * reconnect (the channel's type then comes from GET /channels/{id}).
 *
 * Chats: channel type "D" is a direct message, "G" (group message), "O" (public)
 * and "P" (private) are groups. A post with a `root_id` belongs to that
 * thread: `threadId` beside the channel's `chatId`, its own session.
 */
import { z } from "zod";
import type { InboundAttachment, InboundMessage } from "../../vocabulary/adapter.js";
import { safeBaseName } from "../../../shared/util/names.js";

/** FileInfo, as a post's `metadata.files` carries it. */
export const fileInfoSchema = z.object({
  id: z.string(),
  name: z.string().default(""),
  size: z.number().optional(),
  mime_type: z.string().optional(),
});
export type MattermostFileInfo = z.output<typeof fileInfoSchema>;

export const postSchema = z.object({
  id: z.string(),
  create_at: z.number(),
  update_at: z.number().default(0),
  delete_at: z.number().default(0),
  user_id: z.string(),
  channel_id: z.string(),
  root_id: z.string().default(""),
  message: z.string().default(""),
  /** "" for a person's post; "system_join_channel" and the like for the server's own. */
  type: z.string().default(""),
  file_ids: z.array(z.string()).nullish(),
  metadata: z
    .object({ files: z.array(fileInfoSchema).nullish() })
    .partial()
    .nullish(),
  props: z.record(z.string(), z.unknown()).nullish(),
});
export type MattermostPost = z.output<typeof postSchema>;

/** The channel facts a post needs: its type letter and team. */
export interface ChannelFacts {
  type: string;
  teamId: string;
}

/** The bot, as GET /users/me names it. */
export interface BotIdentity {
  id: string;
  username: string;
}

/** A post as translation reads it: the post and what the event (or the channel) says around it. */
export interface PostView {
  post: MattermostPost;
  channel: ChannelFacts;
  /** User ids the server says the post mentions (the `posted` event's `mentions`); absent from history. */
  mentions?: readonly string[];
  /** The sender's username (the event's `sender_name`, without "@"). */
  senderName?: string;
}

export interface TranslateContext {
  bot: BotIdentity;
  accountId: string;
  onIgnored?: (reason: string) => void;
}

/** `post` as an InboundMessage, or undefined for what the bot does not take (its own posts, system posts, deleted ones). */
export function translateMessage(view: PostView, ctx: TranslateContext): InboundMessage | undefined {
  const { post, channel } = view;
  const ignore = (reason: string): undefined => {
    ctx.onIgnored?.(reason);
    return undefined;
  };
  if (post.user_id === ctx.bot.id) return ignore("own post");
  if (post.type !== "") return ignore(`system post ${post.type}`);
  if (post.delete_at > 0) return ignore("deleted");
  if (post.props?.from_bot === "true" || post.props?.from_webhook === "true") return ignore("from a bot or webhook");
  const direct = channel.type === "D";
  const mentioned = direct ? undefined : mentionsBot(view, ctx.bot);
  const text = direct ? post.message.trim() : stripMention(post.message, ctx.bot.username);
  return {
    platform: "mattermost",
    accountId: ctx.accountId,
    chatId: post.channel_id,
    chatType: direct ? "direct" : "group",
    ...(post.root_id ? { threadId: post.root_id } : {}),
    ...(!direct && channel.teamId ? { groupAliases: [channel.teamId] } : {}),
    userId: post.user_id,
    ...(view.senderName ? { userName: view.senderName.replace(/^@/, "") } : {}),
    messageId: post.id,
    text,
    ...(mentioned !== undefined ? { mentioned } : {}),
    sentAt: post.create_at,
  };
}

/** The post's files, as its metadata declares them (ids only when the server sent no metadata). */
export function filesOf(post: MattermostPost): MattermostFileInfo[] {
  const declared = post.metadata?.files ?? [];
  if (declared.length > 0) return declared;
  return (post.file_ids ?? []).map((id) => ({ id, name: "" }));
}

export function attachmentKind(mimeType: string | undefined): InboundAttachment["kind"] {
  const type = (mimeType ?? "").toLowerCase();
  if (type.startsWith("image/")) return "photo";
  // Mattermost has no voice-note kind: a recorded clip is an audio file, transcribed like one.
  if (type.startsWith("audio/")) return "audio";
  if (type.startsWith("video/")) return "video";
  if (type.startsWith("application/") || type.startsWith("text/")) return "document";
  return "other";
}

export const safeFileName = (name: string, fileId: string): string => safeBaseName(name) ?? `attachment-${fileId}`;

function mentionsBot(view: PostView, bot: BotIdentity): boolean {
  if (view.mentions?.includes(bot.id)) return true;
  return mentionPattern(bot.username).test(view.post.message);
}

const mentionPattern = (username: string): RegExp => new RegExp(`(^|[^\\w.-])@${escapeRegExp(username)}(?![\\w-]|\\.[\\w])`, "i");

/** The text without the @mention of the bot that addresses it (leading, or anywhere as a word). */
function stripMention(message: string, username: string): string {
  const leading = new RegExp(`^\\s*@${escapeRegExp(username)}(?![\\w-]|\\.[\\w])[\\s,:]*`, "i");
  return message.replace(leading, "").trim();
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
