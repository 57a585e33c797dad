/**
 * What the bot sends, through matrix-js-sdk's HTTP layer (`client.http`: the SDK's own
 * request, error and rate-limit handling, without its event scheduler's retry loop, since the
 * core owns retries): messages (`m.text` with an HTML `formatted_body`), replies as Matrix
 * replies (`m.in_reply_to`) in group rooms, thread replies (`m.thread`), edits (`m.replace`,
 * with `m.new_content`), reactions (`m.annotation`, removed by redacting them), typing
 * notifications, and files (uploaded to the media repository, then sent as `m.image`,
 * `m.audio` (a voice message: MSC3245's `org.matrix.msc3245.voice`) or `m.file`).
 */
import { randomUUID } from "node:crypto";
import { Method, type MatrixClient } from "matrix-js-sdk";
import type { Logger } from "pino";
import {
  type ChatTarget,
  type FileLimits,
  type OutboundFile,
  SendError,
  type SendOptions,
  type SendReceipt,
  type TextFormat,
} from "../../vocabulary/adapter.js";
import { describe, requestOpts, type Scrub, toSendError } from "./errors.js";
import { matrixMarkdownToHtml } from "./markdown.js";

/**
 * An event may be 65,536 bytes as JSON (spec: "Size limits"), and an edit carries its text
 * twice (`body` and `m.new_content`): a message's body and HTML together stay under half.
 */
export const MATRIX_LIMITS = { maxMessageLength: 30_000, typingRefreshMs: 20_000, minEditIntervalMs: 1500 } as const;
/** Synapse's default `max_upload_size` (a homeserver may set less: the upload then fails with M_TOO_LARGE). */
export const MATRIX_FILE_LIMITS: FileLimits = { photo: 50 * 1024 * 1024, voice: 50 * 1024 * 1024, document: 50 * 1024 * 1024 };
/** How long a typing notification holds, ms (refreshed every `typingRefreshMs`). */
const TYPING_TIMEOUT_MS = 30_000;

export interface OutboundDeps {
  client: MatrixClient;
  userId: string;
  log: Logger;
  scrub: Scrub;
}

interface Rendered {
  msgtype: "m.text";
  body: string;
  format?: "org.matrix.custom.html";
  formatted_body?: string;
}

const enc = encodeURIComponent;

/** An event id as room versions 3 and later make them: `$` and an unpadded base64 hash (v1 and v2: `$id:server`). */
export const isEventId = (id: string): boolean => /^\$[^\s]{1,254}$/.test(id);

/** `text` as a message's content: the Markdown as the plain `body`, its HTML as `formatted_body`. */
export function render(text: string, format: TextFormat): Rendered {
  if (format === "plain") return { msgtype: "m.text", body: text };
  const html = matrixMarkdownToHtml(text);
  return { msgtype: "m.text", body: text, format: "org.matrix.custom.html", formatted_body: html };
}

/** What the homeserver counts: the event's bytes; body and HTML both go out. */
export function measure(text: string, format: TextFormat): number {
  const rendered = render(text, format);
  return Buffer.byteLength(rendered.body) + Buffer.byteLength(rendered.formatted_body ?? "");
}

/** Where a reply goes in the room: into its thread, and as a reply to the message answered in a group room. */
export function relationFor(target: ChatTarget): Record<string, unknown> | undefined {
  const replyTo = target.replyToMessageId;
  if (target.threadId) {
    // A thread message names the event it answers, or (falling back, for clients without threads) the thread's root.
    return { rel_type: "m.thread", event_id: target.threadId, is_falling_back: !replyTo, "m.in_reply_to": { event_id: replyTo ?? target.threadId } };
  }
  if (replyTo && target.chatType === "group") return { "m.in_reply_to": { event_id: replyTo } };
  return undefined;
}

export function createMatrixOutbound(deps: OutboundDeps) {
  const { client, userId, log, scrub } = deps;
  /** The bot's reaction events by message and key, so a removal finds what to redact (else the relations endpoint is asked). */
  const reactions = new Map<string, string>();

  async function sendEvent(what: string, roomId: string, type: string, content: Record<string, unknown>): Promise<string> {
    try {
      const answer = await client.http.authedRequest<{ event_id: string }>(
        Method.Put,
        `/rooms/${enc(roomId)}/send/${enc(type)}/${randomUUID()}`,
        undefined,
        content,
      );
      return answer.event_id;
    } catch (error) {
      throw toSendError(what, error, scrub);
    }
  }

  async function send(target: ChatTarget, text: string, options: SendOptions): Promise<SendReceipt> {
    const relation = relationFor(target);
    // No one is pinged by the bot's replies (`m.mentions` empty: v1.7 intentional mentions).
    const content = { ...render(text, options.format), "m.mentions": {}, ...(relation ? { "m.relates_to": relation } : {}) };
    const messageId = await sendEvent("send", target.chatId, "m.room.message", content);
    // Homeservers do not end a typing notification when the user sends: the bot ends its own (a streamed preview keeps it).
    if (options.final !== false) void setTyping(target.chatId, false);
    return { messageId };
  }

  async function edit(target: ChatTarget, messageId: string, text: string, options: SendOptions): Promise<void> {
    // Homeservers take a replacement of any id (the original may be on another server); clients ignore a bad one: refuse it here.
    if (!isEventId(messageId)) throw new SendError(`matrix edit refused: "${messageId.slice(0, 80)}" is not an event id`, { permanent: true });
    const next = render(text, options.format);
    const content = {
      // The fallback for clients without edits: "* " and the new text.
      msgtype: "m.text",
      body: `* ${next.body}`,
      ...(next.formatted_body ? { format: next.format, formatted_body: `* ${next.formatted_body}` } : {}),
      "m.new_content": { ...next, "m.mentions": {} },
      "m.mentions": {},
      "m.relates_to": { rel_type: "m.replace", event_id: messageId },
    };
    await sendEvent("edit", target.chatId, "m.room.message", content);
    if (options.final === true) void setTyping(target.chatId, false);
  }

  async function react(target: ChatTarget, messageId: string, emoji: string, { remove }: { remove: boolean }): Promise<void> {
    const key = `${target.chatId}\u0000${messageId}\u0000${emoji}`;
    if (!remove) {
      const id = await sendEvent("react", target.chatId, "m.reaction", { "m.relates_to": { rel_type: "m.annotation", event_id: messageId, key: emoji } });
      reactions.set(key, id);
      return;
    }
    const known = reactions.get(key);
    const ids = known ? [known] : await ownReactions(target.chatId, messageId, emoji);
    for (const id of ids) {
      try {
        await client.http.authedRequest(Method.Put, `/rooms/${enc(target.chatId)}/redact/${enc(id)}/${randomUUID()}`, undefined, {});
      } catch (error) {
        throw toSendError("unreact", error, scrub);
      }
    }
    reactions.delete(key);
  }

  /** The bot's annotations `emoji` on the message, from the relations endpoint (after a restart the map is empty). */
  async function ownReactions(roomId: string, messageId: string, emoji: string): Promise<string[]> {
    try {
      const answer = await client.http.authedRequest<{ chunk: { event_id: string; sender: string; content?: { "m.relates_to"?: { key?: string } } }[] }>(
        Method.Get,
        `/rooms/${enc(roomId)}/relations/${enc(messageId)}/m.annotation/m.reaction`,
        undefined,
        undefined,
        requestOpts({ prefix: "/_matrix/client/v1" }),
      );
      return answer.chunk.filter((e) => e.sender === userId && e.content?.["m.relates_to"]?.key === emoji).map((e) => e.event_id);
    } catch (error) {
      throw toSendError("relations", error, scrub);
    }
  }

  /** Best effort, never throws. */
  async function setTyping(roomId: string, typing: boolean): Promise<void> {
    try {
      const body = typing ? { typing, timeout: TYPING_TIMEOUT_MS } : { typing };
      await client.http.authedRequest(Method.Put, `/rooms/${enc(roomId)}/typing/${enc(userId)}`, undefined, body);
    } catch (error) {
      log.debug({ err: describe(error, scrub) }, "matrix typing notification failed");
    }
  }

  const sendTyping = (target: ChatTarget): Promise<void> => setTyping(target.chatId, true);

  async function sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt> {
    let mxc: string;
    try {
      const uploaded = await client.uploadContent(file.data, { name: file.fileName, type: file.mimeType, includeFilename: true });
      mxc = uploaded.content_uri;
    } catch (error) {
      throw toSendError("upload", error, scrub);
    }
    const msgtype = file.kind === "photo" ? "m.image" : file.kind === "voice" ? "m.audio" : "m.file";
    const relation = relationFor(target);
    const content = {
      msgtype,
      body: file.fileName,
      filename: file.fileName,
      url: mxc,
      info: { mimetype: file.mimeType, size: file.data.length },
      ...(file.kind === "voice" ? { "org.matrix.msc1767.audio": {}, "org.matrix.msc3245.voice": {} } : {}),
      "m.mentions": {},
      ...(relation ? { "m.relates_to": relation } : {}),
    };
    return { messageId: await sendEvent("send file", target.chatId, "m.room.message", content) };
  }

  /** The bot's own notice (`m.notice`: other bots do not answer it). */
  async function notice(roomId: string, text: string): Promise<void> {
    await sendEvent("notice", roomId, "m.room.message", { msgtype: "m.notice", body: text, "m.mentions": {} });
  }

  return { send, edit, react, sendTyping, sendFile, notice, measure };
}

export type MatrixOutbound = ReturnType<typeof createMatrixOutbound>;
