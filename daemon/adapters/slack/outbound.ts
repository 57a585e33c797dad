/**
 * Replies to Slack through `@slack/web-api`'s WebClient with its own retries
 * off and rate limits rejected (`rejectRateLimitedCalls`): the core's one
 * retry policy owns both, and a 429 comes back as a `SendError` carrying
 * Slack's `Retry-After`, per method and channel, before anything was posted,
 * so a retry can never double a message. Text goes out as `mrkdwn`
 * (mrkdwn.ts); a channel reply goes into its thread (the chat id names it).
 *
 * - send: chat.postMessage; edit: chat.update (the streaming preview);
 * - sendFile: files.getUploadURLExternal -> POST the bytes -> files.completeUploadExternal
 *   (`files.upload` is retired); the file is shared only by the last step;
 * - sendTyping: assistant.threads.setStatus ("is thinking..."), best effort;
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

/**
 * Slack takes 40,000 characters but recommends at most 4,000 for a message
 * people read; chunks are measured as the mrkdwn that is sent. Streaming: one
 * edit a second per chat keeps chat.update (tier 3, ~50 a minute) and the
 * channel's one post a second in bounds for a reply or two at a time. The
 * "is thinking" status lasts until the reply (or two minutes): renewed every minute.
 */
export const SLACK_LIMITS: AdapterLimits = { maxMessageLength: 4000, typingRefreshMs: 60_000, minEditIntervalMs: 1000 };

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
}

export interface SlackOutbound {
  send(target: ChatTarget, text: string, format: TextFormat): Promise<SendReceipt>;
  edit(target: ChatTarget, messageId: string, text: string, format: TextFormat): Promise<void>;
  sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt>;
  sendTyping(target: ChatTarget): Promise<void>;
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

  return {
    async send(target, text, format) {
      const { channel, threadTs } = placeOf(target);
      const rendered = checkedText(renderText(text, format));
      const sent = await client.chat
        .postMessage({ channel, text: rendered, mrkdwn: true, unfurl_links: false, unfurl_media: false, ...(threadTs ? { thread_ts: threadTs } : {}) })
        .catch(fail(`slack send to ${target.chatId} failed`));
      return typeof sent.ts === "string" ? { messageId: sent.ts } : {};
    },

    async edit(target, messageId, text, format) {
      const { channel } = placeOf(target);
      const rendered = checkedText(renderText(text, format));
      await client.chat.update({ channel, ts: messageId, text: rendered }).catch(fail(`slack edit in ${target.chatId} failed`));
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
      const thread = threadTs ?? target.replyToMessageId;
      if (!thread || noStatus.has(channel)) return;
      try {
        await client.assistant.threads.setStatus({ channel_id: channel, thread_ts: thread, status: "is thinking..." });
      } catch (error) {
        const failure = toAdapterError(error, "slack status", deps.redact);
        if (failure.permanent) noStatus.add(channel);
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
