/**
 * Pure translation of a Bot Framework activity from Teams into the core's
 * InboundMessage: no I/O. Ids stay Teams' own: a personal chat, a group chat
 * and a channel are each a conversation id. By the one thread rule
 * (vocabulary/conversation.ts) a channel post's reply chain (conversation
 * `<channel>;messageid=<root>`) is the channel's thread `<root>`, its own
 * session, with the team in `groupAliases`; before it the chain was a chat of
 * its own (`formerly`, so its stored session moves). A message in a group chat or channel is
 * `mentioned` when it @mentions the bot (an entity naming the recipient); the
 * mention's `<at>...</at>` text is taken out.
 */
import { z } from "zod";
import type { ChatType, InboundAttachment, InboundMessage } from "../../vocabulary/adapter.js";

const Account = z.looseObject({ id: z.string(), name: z.string().optional(), aadObjectId: z.string().optional() });

/** The parts of an activity the bridge reads; anything else Teams sends is kept as it came. */
export const TeamsActivity = z.looseObject({
  type: z.string(),
  id: z.string().optional(),
  timestamp: z.string().optional(),
  serviceUrl: z.string().optional(),
  channelId: z.string().optional(),
  from: Account.optional(),
  recipient: Account.optional(),
  conversation: z
    .looseObject({ id: z.string(), conversationType: z.string().optional(), tenantId: z.string().optional(), isGroup: z.boolean().optional() })
    .optional(),
  text: z.string().optional(),
  name: z.string().optional(),
  value: z.unknown().optional(),
  replyToId: z.string().optional(),
  entities: z.array(z.looseObject({ type: z.string(), mentioned: Account.optional(), text: z.string().optional() })).optional(),
  attachments: z
    .array(z.looseObject({ contentType: z.string(), contentUrl: z.string().optional(), name: z.string().optional(), content: z.unknown().optional() }))
    .optional(),
  channelData: z
    .looseObject({
      tenant: z.looseObject({ id: z.string() }).optional(),
      team: z.looseObject({ id: z.string() }).optional(),
      channel: z.looseObject({ id: z.string() }).optional(),
    })
    .optional(),
});
export type TeamsActivity = z.output<typeof TeamsActivity>;

/** An Action.Submit tap on a question's card: a `message` activity whose `value` is the button's data (outbound.ts `questionCard`). */
const ButtonValue = z.looseObject({ bridgeQuestion: z.string().min(1), option: z.number().int().min(1) });

/** A file an activity brings, before any byte is fetched. */
export interface TeamsFile {
  fileName: string;
  size: number | undefined;
  url: string;
  mimeType: string | undefined;
  /** Teams' inline images are served only with the bot's token; a file's download URL is pre-authorised and gets none. */
  withToken: boolean;
}

/** What the bridge replies with: enough to post to the conversation later (a scheduled prompt, a proactive message). */
export interface ConversationReference {
  serviceUrl: string;
  conversationId: string;
  conversationType?: string | undefined;
  tenantId?: string | undefined;
  bot: { id: string; name?: string | undefined };
}

/** The activity's tenant, as Teams says it (channelData, else the conversation). */
export const tenantOf = (activity: TeamsActivity): string | undefined => activity.channelData?.tenant?.id ?? activity.conversation?.tenantId;

export function referenceOf(activity: TeamsActivity): ConversationReference | undefined {
  if (!activity.serviceUrl || !activity.conversation || !activity.recipient) return undefined;
  return {
    serviceUrl: activity.serviceUrl,
    conversationId: activity.conversation.id,
    conversationType: activity.conversation.conversationType,
    tenantId: tenantOf(activity),
    bot: { id: activity.recipient.id, ...(activity.recipient.name ? { name: activity.recipient.name } : {}) },
  };
}

export type Translation = { message: InboundMessage; files: TeamsFile[] } | { skip: string };

/** A `message` activity as the core's message; anything else is skipped with the reason. */
export function translateMessage(activity: TeamsActivity, accountId: string): Translation {
  if (activity.type !== "message") return { skip: `activity type ${activity.type}` };
  const { conversation, from, id } = activity;
  if (!conversation || !from || !id) return { skip: "a message without conversation, sender or id" };
  if (from.id === activity.recipient?.id) return { skip: "the bot's own message" };
  const chatType: ChatType = conversation.conversationType === "personal" || (!conversation.conversationType && !conversation.isGroup) ? "direct" : "group";
  const mentioned = chatType === "group" ? mentionsBot(activity) : undefined;
  const tap = ButtonValue.safeParse(activity.value);
  const text = tap.success ? String(tap.data.option) : stripBotMention(activity).trim();
  const message: InboundMessage = {
    platform: "teams",
    accountId,
    ...placeOf(conversation.id),
    chatType,
    userId: from.aadObjectId ?? from.id,
    ...(from.aadObjectId && from.aadObjectId !== from.id ? { userAliases: [from.id] } : {}),
    ...(from.name ? { userName: from.name } : {}),
    messageId: tap.success ? `tap:${id}` : id,
    text,
    sentAt: sentAt(activity.timestamp),
    // A tap on the bot's own card addresses the bot.
    ...(mentioned !== undefined ? { mentioned: mentioned || tap.success } : {}),
    ...(tap.success ? { answers: { questionId: tap.data.bridgeQuestion } } : {}),
  };
  // A channel post roots its own reply chain (its id is the chain's): its group context is the channel's top level.
  if (message.threadId === id) message.startsThread = true;
  const aliases = groupAliasesOf(activity);
  if (chatType === "group" && aliases.length > 0) message.groupAliases = aliases;
  return { message, files: tap.success ? [] : filesOf(activity) };
}

const CHAIN = ";messageid=";

/** A conversation id as the chat and thread: a channel's reply chain is the channel's thread (its root message's id). */
export function placeOf(conversationId: string): Pick<InboundMessage, "chatId" | "threadId" | "formerly"> {
  const at = conversationId.indexOf(CHAIN);
  if (at < 0) return { chatId: conversationId };
  return { chatId: conversationId.slice(0, at), threadId: conversationId.slice(at + CHAIN.length), formerly: { chatId: conversationId } };
}

/** The conversation id a target's messages go to (`placeOf` the other way). */
export const conversationIdOf = (target: { chatId: string; threadId?: string | undefined }): string =>
  target.threadId === undefined ? target.chatId : `${target.chatId}${CHAIN}${target.threadId}`;

/** The channel belongs to its team (and Teams' channel id, where it differs from the conversation's). */
function groupAliasesOf(activity: TeamsActivity): string[] {
  const { chatId } = placeOf(activity.conversation?.id ?? "");
  const aliases = [activity.channelData?.channel?.id, activity.channelData?.team?.id].filter((a): a is string => !!a && a !== chatId);
  return [...new Set(aliases)];
}

function mentionsBot(activity: TeamsActivity): boolean {
  const bot = activity.recipient?.id;
  return (activity.entities ?? []).some((e) => e.type === "mention" && e.mentioned?.id === bot);
}

/** The text without the bot's `<at>Name</at>` (Teams puts the mention's own text in the entity). */
function stripBotMention(activity: TeamsActivity): string {
  let text = activity.text ?? "";
  for (const entity of activity.entities ?? []) {
    if (entity.type === "mention" && entity.mentioned?.id === activity.recipient?.id && entity.text) text = text.split(entity.text).join("");
  }
  return text;
}

function sentAt(timestamp: string | undefined): number {
  const ms = timestamp ? Date.parse(timestamp) : Number.NaN;
  return Number.isFinite(ms) ? ms : Date.now();
}

const DOWNLOAD_INFO = "application/vnd.microsoft.teams.file.download.info";
const DownloadInfo = z.looseObject({ downloadUrl: z.string(), fileType: z.string().optional() });

/** Files people send: a personal chat's file (a pre-authorised download URL) and inline images. Teams' HTML copy of the text is not a file. */
export function filesOf(activity: TeamsActivity): TeamsFile[] {
  return (activity.attachments ?? []).flatMap((a, i): TeamsFile[] => {
    if (a.contentType === DOWNLOAD_INFO) {
      const info = DownloadInfo.safeParse(a.content);
      if (!info.success) return [];
      const fileName = safeFileName(a.name, `file-${i + 1}${info.data.fileType ? `.${info.data.fileType}` : ""}`);
      return [{ fileName, size: undefined, url: info.data.downloadUrl, mimeType: mimeOf(fileName), withToken: false }];
    }
    if (a.contentUrl && /^(image|audio|video)\//.test(a.contentType)) {
      const fileName = safeFileName(a.name, `${a.contentType.split("/")[0]}-${i + 1}.${a.contentType.split("/")[1]?.split(/[;+]/)[0] ?? "bin"}`);
      return [{ fileName, size: undefined, url: a.contentUrl, mimeType: a.contentType, withToken: true }];
    }
    return [];
  });
}

export function attachmentKind(mimeType: string | undefined): InboundAttachment["kind"] {
  if (mimeType?.startsWith("image/")) return "photo";
  if (mimeType?.startsWith("audio/")) return "audio";
  if (mimeType?.startsWith("video/")) return "video";
  return "document";
}

function safeFileName(name: string | undefined, fallback: string): string {
  const base =
    (name ?? "")
      .split(/[\\/]/)
      .pop()
      ?.replace(/[\u0000-\u001f]/g, "")
      .trim() ?? "";
  return base && base !== "." && base !== ".." ? base.slice(0, 200) : fallback;
}

const MIME: Readonly<Record<string, string>> = {
  pdf: "application/pdf",
  txt: "text/plain",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  ogg: "audio/ogg",
  wav: "audio/wav",
  mp4: "video/mp4",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
};

function mimeOf(fileName: string): string | undefined {
  return MIME[fileName.split(".").pop()?.toLowerCase() ?? ""];
}
