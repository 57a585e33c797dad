/**
 * Pure translation of Matrix room events (client-server API, spec v1.11) into the core's
 * `InboundMessage`, and the decision on an invite. No I/O.
 *
 * - A room is direct when the bot's `m.direct` account data lists it (or it joined it from an
 *   invite marked `is_direct`); any other room is a group.
 * - In a group, a message addresses the bot when its `m.mentions.user_ids` names the bot; a
 *   message without `m.mentions` (a client older than v1.7) when its text names the bot by id,
 *   display name or localpart (the spec's legacy mention rules: "intentional mentions").
 * - A thread (`m.relates_to.rel_type` `m.thread`, v1.4) is a conversation of its own: its root's
 *   event id is the message's `threadId` beside the room's `chatId`.
 * - Edits (`m.replace`), notices (`m.notice`: by convention, what bots send; answering them loops
 *   bots) and the bot's own events are not messages for the core.
 */
import { z } from "zod";
import type { AccessConfig } from "../../vocabulary/config-fields.js";
import type { InboundAttachment, InboundMessage } from "../../vocabulary/adapter.js";
import type { DeclaredFile } from "../hand-over.js";

export const roomEventSchema = z.looseObject({
  event_id: z.string(),
  type: z.string(),
  sender: z.string(),
  origin_server_ts: z.number().optional(),
  content: z.record(z.string(), z.unknown()).default({}),
  state_key: z.string().optional(),
});
export type RoomEvent = z.output<typeof roomEventSchema>;

const relatesTo = z.looseObject({
  rel_type: z.string().optional(),
  event_id: z.string().optional(),
  is_falling_back: z.boolean().optional(),
  "m.in_reply_to": z.looseObject({ event_id: z.string() }).optional(),
});

const messageContent = z.looseObject({
  msgtype: z.string(),
  body: z.string(),
  filename: z.string().optional(),
  url: z.string().optional(),
  info: z.looseObject({ mimetype: z.string().optional(), size: z.number().optional(), duration: z.number().optional() }).optional().catch(undefined),
  "m.relates_to": relatesTo.optional().catch(undefined),
  "m.mentions": z
    .looseObject({ user_ids: z.array(z.string()).optional(), room: z.boolean().optional() })
    .optional()
    .catch(undefined),
  "org.matrix.msc3245.voice": z.unknown().optional(),
});
type MessageContent = z.output<typeof messageContent>;

/** Who the bot is, as the homeserver says. */
export interface BotIdentity {
  userId: string;
  displayName: string | undefined;
}

/** A file a message brings, before any byte is fetched (`mxc` is the content URI). */
export interface MatrixFileRef extends DeclaredFile {
  mxc: string;
  kind: InboundAttachment["kind"];
  mimeType?: string | undefined;
  seconds?: number | undefined;
}

export interface Translated {
  message: InboundMessage;
  files: MatrixFileRef[];
}

/** A thread: the spec's name (v1.4), and the one clients used before it (MSC3440), still sent where a client thinks the server predates v1.4. */
const THREAD_RELATIONS: ReadonlySet<string> = new Set(["m.thread", "io.element.thread"]);

const KIND_OF_MSGTYPE: Record<string, InboundAttachment["kind"]> = {
  "m.image": "photo",
  "m.audio": "audio",
  "m.video": "video",
  "m.file": "document",
};

/** The core's message for a room event, or undefined when it is none (not a message, the bot's own, an edit, a notice). */
export function translateMessage(event: RoomEvent, room: { roomId: string; direct: boolean }, bot: BotIdentity, accountId: string): Translated | undefined {
  if (event.type !== "m.room.message" || event.sender === bot.userId) return undefined;
  const parsed = messageContent.safeParse(event.content);
  if (!parsed.success) return undefined;
  const content = parsed.data;
  const relation = content["m.relates_to"];
  if (relation?.rel_type === "m.replace" || content.msgtype === "m.notice") return undefined;
  const file = fileOf(content);
  const caption = file && content.filename !== undefined && content.filename !== content.body ? content.body : "";
  const said = file ? caption : stripReplyFallback(content.body, relation?.["m.in_reply_to"] !== undefined);
  const text = content.msgtype === "m.emote" ? `* ${said}` : said;
  const threadId = relation?.rel_type !== undefined && THREAD_RELATIONS.has(relation.rel_type) ? relation.event_id : undefined;
  const message: InboundMessage = {
    platform: "matrix",
    accountId,
    chatId: room.roomId,
    chatType: room.direct ? "direct" : "group",
    userId: event.sender,
    messageId: event.event_id,
    text: room.direct ? text.trim() : stripLeadingMention(text, bot).trim(),
    sentAt: event.origin_server_ts ?? Date.now(),
    ...(threadId ? { threadId } : {}),
    ...(room.direct ? {} : { mentioned: mentionsBot(content, bot) }),
  };
  return { message, files: file ? [file] : [] };
}

function fileOf(content: MessageContent): MatrixFileRef | undefined {
  const kind = KIND_OF_MSGTYPE[content.msgtype];
  if (!kind || !content.url?.startsWith("mxc://")) return undefined;
  const info = content.info;
  const voice = content["org.matrix.msc3245.voice"] !== undefined;
  return {
    mxc: content.url,
    kind,
    fileName: safeFileName(content.filename ?? content.body, kind, voice),
    size: info?.size,
    mimeType: info?.mimetype,
    // `info.duration` is milliseconds.
    seconds: kind === "audio" && info?.duration !== undefined ? Math.round(info.duration / 1000) : undefined,
  };
}

/** A base name without folders or control characters; one invented from the kind when none is left. */
export function safeFileName(name: string, kind: InboundAttachment["kind"], voice = false): string {
  const base = (name.split(/[\\/]/).pop() ?? "").replace(/[\u0000-\u001f\u007f]/g, "").trim();
  if (base && base !== "." && base !== "..") return base.slice(0, 200);
  return voice ? "voice-message.ogg" : `${kind}`;
}

/** Whether a group message addresses the bot: `m.mentions` where the client sent it, else the bot named in the text. */
export function mentionsBot(content: { body: string; "m.mentions"?: { user_ids?: string[] | undefined } | undefined }, bot: BotIdentity): boolean {
  const mentions = content["m.mentions"];
  if (mentions) return mentions.user_ids?.includes(bot.userId) ?? false;
  return namesOf(bot).some((name) => new RegExp(`(^|[^\\w@])${escapeRegExp(name)}($|[^\\w])`, "i").test(content.body));
}

const localpart = (userId: string) => userId.slice(1).split(":")[0] ?? userId;

function namesOf(bot: BotIdentity): string[] {
  return [bot.userId, bot.displayName, localpart(bot.userId)].filter((n): n is string => typeof n === "string" && n.length > 0);
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** "Bot: do this" / "@bot:server do this" -> "do this" (a client's pill leaves the name as text). */
export function stripLeadingMention(text: string, bot: BotIdentity): string {
  for (const name of namesOf(bot)) {
    const m = new RegExp(`^\\s*@?${escapeRegExp(name)}\\s*[:,]?\\s*`, "i").exec(text);
    if (m && m[0].length > 0) return text.slice(m[0].length);
  }
  return text;
}

/** Older clients quote the message replied to as leading "> " lines and a blank line (removed from the spec in v1.13). */
export function stripReplyFallback(body: string, isReply: boolean): string {
  if (!isReply || !body.startsWith("> ")) return body;
  const lines = body.split("\n");
  let i = 0;
  while (i < lines.length && lines[i]?.startsWith(">")) i++;
  if (lines[i] === "") i++;
  return lines.slice(i).join("\n");
}

/**
 * Whether to join a room the bot was invited to, by the channel's access rules: a direct
 * invite from someone who may talk (in pairing mode anyone, who then gets a code), a group
 * listed and enabled, or any group when unlisted ones are allowed and the inviter may talk.
 */
export function shouldJoin(access: AccessConfig, invite: { roomId: string; inviter: string; direct: boolean }): boolean {
  const listed = (list: readonly string[]) => list.includes("*") || list.includes(invite.inviter);
  const inviterMayTalk = access.mode === "open" || listed(access.users) || listed(access.owners);
  if (invite.direct) return inviterMayTalk || access.mode === "pairing";
  const group = access.groups[invite.roomId];
  if (group) return group.enabled;
  return (access.allowUnlistedGroups || access.mode === "open") && inviterMayTalk;
}
