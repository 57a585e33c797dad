/**
 * Replies to Slack through `@slack/web-api`'s WebClient with its own retries
 * off and rate limits rejected (`rejectRateLimitedCalls`): the core's one
 * retry policy owns both, and a 429 comes back as a `SendError` carrying
 * Slack's `Retry-After`, per method and channel, before anything was posted,
 * so a retry can never double a message. Text goes out as `mrkdwn`
 * (mrkdwn.ts); a channel reply goes into its thread (the chat id names it).
 *
 * - send: chat.postMessage; edit: chat.update (the streaming preview); in a
 *   channel thread a streamed reply is a native stream instead
 *   (chat.startStream / appendStream / stopStream, streams.ts) where the
 *   workspace allows it. An edit that would leave a message as it is (the
 *   core ending the "stream" of a reply that never was one) is not sent: it
 *   would spend chat.update's budget, outside the chat's pacing, for nothing;
 * - sendFile: files.getUploadURLExternal -> POST the bytes -> files.completeUploadExternal
 *   (`files.upload` is retired); the file is shared only by the last step;
 * - sendTyping: assistant.threads.setStatus ("is thinking...") on the reply's
 *   thread (a DM's top level: the message's own), best effort;
 * - react: reactions.add / remove, by the emoji's Slack name.
 */
import type { Logger } from "pino";
import type { WebClient } from "@slack/web-api";
import {
  SendError,
  type AdapterLimits,
  type ChatTarget,
  type FileLimits,
  type OutboundFile,
  type SendReceipt,
  type TextFormat,
} from "../../vocabulary/adapter.js";
import { slackReactionName } from "./config.js";
import { placeOf } from "./inbound.js";
import { markdownToMrkdwn, plainToMrkdwn } from "./mrkdwn.js";
import { streamablePart } from "../streamable.js";
import { NativeStreams } from "./streams.js";

/**
 * Slack takes 40,000 characters but recommends at most 4,000 for a message
 * people read; chunks are measured as the mrkdwn that is sent. Streaming: one
 * edit a second per chat keeps chat.update (tier 3, ~50 a minute) and the
 * channel's one post a second in bounds for a reply or two at a time. The
 * "is thinking" status lasts until the reply (or two minutes): renewed every minute.
 */
export const SLACK_LIMITS = { maxMessageLength: 4000, typingRefreshMs: 60_000, minEditIntervalMs: 1000 } satisfies AdapterLimits;

/** Slack's own cap is 1 GB; a bridge keeps to what a chat shows sensibly. */
export const SLACK_FILE_LIMITS: FileLimits = { photo: 50 * 1024 * 1024, voice: 50 * 1024 * 1024, document: 50 * 1024 * 1024 };

/** Errors worth trying again: Slack's side, not the request's. */
const TRANSIENT_ERRORS = new Set(["internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited", "team_added_to_org"]);

/** A Slack call that failed, as the core's `SendError`, with Slack's error code. */
export class SlackAdapterError extends SendError {
  /** Slack's `error` ("channel_not_found", "missing_scope", ...), or undefined when no answer came. */
  readonly code: string | undefined;
  constructor(message: string, options: { code?: string; permanent: boolean; retryAfterMs?: number; status?: number; cause?: unknown }) {
    super(message, options);
    this.code = options.code;
  }
}

export const renderText = (text: string, format: TextFormat): string => (format === "markdown" ? markdownToMrkdwn(text) : plainToMrkdwn(text));

export interface OutboundDeps {
  client: WebClient;
  log: Logger;
  /** Removes tokens from any text before it reaches a log or an error. */
  redact(text: string): string;
  /** Fetch for the upload step (the one call outside the Web API). */
  fetchImpl?: typeof fetch;
  /** Stream replies in channel threads with chat.startStream/appendStream/stopStream (else chat.update). Default true. */
  nativeStreaming?: boolean;
}

/** Errors that say the workspace or app does not stream (as opposed to a bad request or Slack's hiccup). */
const STREAMING_REFUSED = new Set([
  "unknown_method",
  "not_allowed_token_type",
  "missing_scope",
  "not_allowed",
  "feature_not_enabled",
  "method_not_supported_for_channel_type",
]);

export interface SlackOutbound {
  /** `final` false: a streamed reply's first text (a native stream where the conversation and workspace allow it). */
  send(target: ChatTarget, text: string, format: TextFormat, final?: boolean): Promise<SendReceipt>;
  /** `final`: the message's last text (a native stream is stopped with it). */
  edit(target: ChatTarget, messageId: string, text: string, format: TextFormat, final?: boolean): Promise<void>;
  sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt>;
  sendTyping(target: ChatTarget): Promise<void>;
  /** Whether `ts` may be a native stream left open (not a message this process posted the ordinary way). */
  mayBeStream(ts: string): boolean;
  react(target: ChatTarget, messageId: string, emoji: string, options: { remove: boolean }): Promise<void>;
}

export function createSlackOutbound(deps: OutboundDeps): SlackOutbound {
  const { client } = deps;
  const fetchImpl = deps.fetchImpl ?? fetch;
  const fail = (where: string) => (error: unknown) => {
    throw toAdapterError(error, where, deps.redact);
  };
  /** Conversations where the "is thinking" status is refused (not an assistant thread, scope missing): not asked again. */
  const noStatus = new Set<string>();
  const streams = new NativeStreams();
  if (deps.nativeStreaming === false) streams.refuse("turned off in the config");

  /** A streamed reply's first text as a native stream, or undefined when it cannot be one (then it is posted). */
  async function startStream(target: ChatTarget, text: string): Promise<SendReceipt | undefined> {
    const { channel, threadTs } = placeOf(target);
    const streamable = streamablePart(text);
    // A DM's stream needs its recipient's user and team ids, which a reply's target does not carry: a DM thread goes by chat.update.
    if (!threadTs || isDirectChannel(channel) || !streams.usable || !streamable.trim()) return undefined;
    try {
      const started = await client.chat.startStream({ channel, thread_ts: threadTs, markdown_text: streamable });
      if (typeof started.ts !== "string") return undefined;
      streams.opened(started.ts, streamable);
      return { messageId: started.ts };
    } catch (error) {
      const failure = toAdapterError(error, `slack stream in ${target.chatId} failed`, deps.redact);
      if (!failure.code || !STREAMING_REFUSED.has(failure.code)) throw failure;
      streams.refuse(failure.code);
      deps.log.info({ reason: failure.code }, "slack refuses native streaming: replies stream by chat.update");
      return undefined;
    }
  }

  /** The next text of an open stream: appended when it continues it, else the stream is stopped and the message updated. */
  async function continueStream(target: ChatTarget, ts: string, shown: string, text: string, format: TextFormat, final: boolean): Promise<void> {
    const { channel } = placeOf(target);
    const where = `slack stream in ${target.chatId} failed`;
    // A preview's closing fence for a block still open is the core's, not the agent's: held back until the text has it.
    const next = final ? text : streamablePart(text);
    if (next.startsWith(shown)) {
      const more = next.slice(shown.length);
      if (final) {
        await client.chat.stopStream({ channel, ts, ...(more ? { markdown_text: more } : {}) }).catch(fail(where));
        streams.stopped(ts);
      } else if (more) {
        await client.chat.appendStream({ channel, ts, markdown_text: more }).catch(fail(where));
        streams.appended(ts, next);
      }
      return;
    }
    // The text does not continue what was streamed (a part cut at a boundary): end the stream, then replace its text.
    await client.chat.stopStream({ channel, ts }).catch(fail(where));
    streams.stopped(ts);
    await update(target, ts, text, format);
  }

  async function update(target: ChatTarget, ts: string, text: string, format: TextFormat): Promise<void> {
    const { channel } = placeOf(target);
    const rendered = checkedText(renderText(text, format));
    await client.chat.update({ channel, ts, text: rendered }).catch(fail(`slack edit in ${target.chatId} failed`));
    streams.posted(ts, rendered);
  }

  return {
    mayBeStream: (ts) => !streams.isPlain(ts),
    async send(target, text, format, final) {
      if (final === false && format === "markdown") {
        const streamed = await startStream(target, text);
        if (streamed) return streamed;
      }
      const { channel, threadTs } = placeOf(target);
      const rendered = checkedText(renderText(text, format));
      const sent = await client.chat
        .postMessage({ channel, text: rendered, mrkdwn: true, unfurl_links: false, unfurl_media: false, ...(threadTs ? { thread_ts: threadTs } : {}) })
        .catch(fail(`slack send to ${target.chatId} failed`));
      if (typeof sent.ts !== "string") return {};
      streams.posted(sent.ts, rendered);
      return { messageId: sent.ts };
    },

    async edit(target, messageId, text, format, final) {
      const shown = streams.shown(messageId);
      if (shown !== undefined) return continueStream(target, messageId, shown, text, format, final === true);
      // A message posted here that already shows this text: nothing to change (a reply that never streamed has no stream to end).
      if (streams.shows(messageId, checkedText(renderText(text, format)))) return;
      const { channel, threadTs } = placeOf(target);
      if (threadTs && !isDirectChannel(channel) && !streams.isPlain(messageId)) {
        // Not known here: maybe a stream a previous life of the daemon left open (a kill -9 mid-reply). Stopped first, so it can be updated.
        await client.chat.stopStream({ channel, ts: messageId }).catch(() => undefined);
        streams.posted(messageId);
      }
      await update(target, messageId, text, format);
    },

    async sendFile(target, file) {
      const { channel, threadTs } = placeOf(target);
      const where = `slack file to ${target.chatId} failed`;
      const ticket = await client.files.getUploadURLExternal({ filename: file.fileName, length: file.data.length }).catch(fail(where));
      if (!ticket.upload_url || !ticket.file_id) throw new SlackAdapterError(`${where}: no upload URL in Slack's answer`, { permanent: false });
      await uploadBytes(fetchImpl, ticket.upload_url, file, where, deps.redact);
      // Only this step shares the file: a crash before it leaves an unshared upload Slack discards.
      const done = await client.files
        .completeUploadExternal({
          files: [{ id: ticket.file_id, title: file.fileName }],
          channel_id: channel,
          ...(threadTs ? { thread_ts: threadTs } : {}),
        })
        .catch(fail(where));
      const id = done.files?.[0]?.id;
      return typeof id === "string" ? { messageId: id } : {};
    },

    async sendTyping(target) {
      const { channel, threadTs } = placeOf(target);
      // A message's ts names a thread; a tap's or a command's id (`act-...`, `cmd-...`) does not.
      const thread = threadTs ?? (/^\d+\.\d+$/.test(target.replyToMessageId ?? "") ? target.replyToMessageId : undefined);
      if (!thread || noStatus.has(channel)) return;
      try {
        await client.assistant.threads.setStatus({ channel_id: channel, thread_ts: thread, status: "is thinking..." });
      } catch (error) {
        const failure = toAdapterError(error, "slack status", deps.redact);
        // Refused for the conversation (not an assistant conversation, a scope missing): not asked again there. A ts that is
        // no thread (`invalid_thread_ts`) is this reply's own matter: other threads of the conversation may take a status.
        if (failure.permanent && failure.code !== "invalid_thread_ts") noStatus.add(channel);
        deps.log.debug({ chatId: target.chatId, err: failure.message }, "slack thinking status not shown");
      }
    },

    async react(target, messageId, emoji, { remove }) {
      const { channel } = placeOf(target);
      const name = slackReactionName(emoji);
      if (!name) return;
      const where = `slack reaction in ${target.chatId} failed`;
      try {
        if (remove) await client.reactions.remove({ channel, timestamp: messageId, name });
        else await client.reactions.add({ channel, timestamp: messageId, name });
      } catch (error) {
        const failure = toAdapterError(error, where, deps.redact);
        // Already there, or already gone: what was asked for is true.
        if (failure.code === "already_reacted" || failure.code === "no_reaction") return;
        throw failure;
      }
    },
  };
}

async function uploadBytes(fetchImpl: typeof fetch, url: string, file: OutboundFile, where: string, redact: (t: string) => string): Promise<void> {
  let response: Response;
  try {
    response = await fetchImpl(url, { method: "POST", body: new Uint8Array(file.data), headers: { "content-type": file.mimeType } });
  } catch (error) {
    throw new SlackAdapterError(`${where}: upload: ${redact(error instanceof Error ? error.message : String(error))}`, { permanent: false });
  }
  await response.arrayBuffer().catch(() => undefined);
  if (!response.ok) {
    const permanent = response.status >= 400 && response.status < 500 && response.status !== 429 && response.status !== 408;
    throw new SlackAdapterError(`${where}: upload answered HTTP ${response.status}`, { permanent, status: response.status });
  }
}

/** A direct message conversation (`im`): Slack's ids of those start with D. */
const isDirectChannel = (channel: string): boolean => channel.startsWith("D");

/** Refuses, without calling Slack, what Slack would refuse. */
function checkedText(text: string): string {
  if (!text.trim()) throw new SlackAdapterError("Slack refuses empty messages (no_text)", { code: "no_text", permanent: true });
  if (text.length > 40_000)
    throw new SlackAdapterError(`message of ${text.length} characters is over Slack's 40000 (msg_too_long)`, {
      code: "msg_too_long",
      permanent: true,
      status: 200,
    });
  return text;
}

interface SlackLibraryError {
  code?: unknown;
  data?: { error?: unknown; needed?: unknown };
  retryAfter?: unknown;
  statusCode?: unknown;
  message?: unknown;
}

/** Any failure of a Web API call as the error the core reads, split by where it failed. */
export function toAdapterError(error: unknown, where: string, redact: (text: string) => string): SlackAdapterError {
  if (error instanceof SlackAdapterError) return error;
  const e = (error && typeof error === "object" ? error : {}) as SlackLibraryError;
  if (e.code === "slack_webapi_rate_limited_error" && typeof e.retryAfter === "number") {
    return new SlackAdapterError(`${where}: rate limited for ${e.retryAfter} s`, {
      code: "ratelimited",
      permanent: false,
      retryAfterMs: e.retryAfter * 1000,
      status: 429,
    });
  }
  if (e.code === "slack_webapi_platform_error" && typeof e.data?.error === "string") {
    const code = e.data.error;
    const needed = code === "missing_scope" && typeof e.data.needed === "string" ? ` (needs ${e.data.needed})` : "";
    return new SlackAdapterError(`${where}: ${code}${needed}`, { code, permanent: !TRANSIENT_ERRORS.has(code), status: 200 });
  }
  if (e.code === "slack_webapi_http_error" && typeof e.statusCode === "number") {
    const status = e.statusCode;
    return new SlackAdapterError(`${where}: HTTP ${status}`, { permanent: status >= 400 && status < 500 && status !== 408 && status !== 429, status });
  }
  const text = error instanceof Error ? error.message : String(error);
  return new SlackAdapterError(`${where}: ${redact(text)}`, { permanent: false });
}
