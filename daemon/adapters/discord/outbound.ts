/**
 * Replies to Discord: send, edit and typing by channel id through a REST
 * client of our own, so replies still go out while the gateway reconnects
 * and DM channels need no cache. Discord renders Markdown itself, so text
 * passes as is; splitting to `maxMessageLength` is the core's. Every failure
 * becomes one `DiscordAdapterError` (the core's `SendError`).
 */
import {
  DiscordAPIError,
  HTTPError,
  RateLimitError,
  REST,
  Routes,
  type RESTPatchAPIChannelMessageJSONBody,
  type RESTPostAPIChannelMessageJSONBody,
  type RESTPatchAPIWebhookWithTokenMessageJSONBody,
  type RESTPutAPIApplicationCommandsJSONBody,
} from "discord.js";
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { SendError, type AdapterLimits, type ChatTarget, type FileLimits, type OutboundFile, type SendReceipt } from "../../vocabulary/adapter.js";

/** Streaming: an edit a second per channel stays well inside Discord's per-channel message limits (5 per 5 s). */
export const DISCORD_LIMITS = { maxMessageLength: 2000, typingRefreshMs: 8000, minEditIntervalMs: 1000 } satisfies AdapterLimits;

/** Discord's upload limit without boosts or Nitro: 10 MiB per message. */
export const DISCORD_FILE_LIMITS: FileLimits = { photo: 10 * 1024 * 1024, voice: 10 * 1024 * 1024, document: 10 * 1024 * 1024 };

/** What a `DiscordAdapterError` is built from. */
export interface DiscordAdapterErrorInit {
  /** Says where it failed (`discord send to 123 failed: 404 Unknown Channel`); never holds the token. */
  message: string;
  /** Discord's HTTP status; absent when no answer came (network, timeout). */
  status?: number | undefined;
  /** Discord's JSON error code (10003 unknown channel, 50013 missing permissions, ...). Default none. */
  code?: number | string | undefined;
  /** A rate limit's retry-after, in ms: the core's retry policy waits at least this long. Default none. */
  retryAfterMs?: number | undefined;
  /** The error it wraps. Default none. */
  cause?: unknown;
}

/**
 * A Discord call that failed, as the core's `SendError`: 4xx other than 429
 * and 408 (unknown channel, missing access, a user who blocks DMs) is
 * permanent; a rate limit carries its retry-after.
 */
export class DiscordAdapterError extends SendError {
  /** Discord's JSON error code (10003 unknown channel, 50013 missing permissions, ...). */
  readonly code: number | string | undefined;
  constructor(init: DiscordAdapterErrorInit) {
    const { message, status, code, retryAfterMs, cause } = init;
    const permanent = status !== undefined && status >= 400 && status < 500 && status !== 429 && status !== 408;
    super(message, {
      permanent,
      ...(status !== undefined ? { status } : {}),
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      ...(cause !== undefined ? { cause } : {}),
    });
    this.code = code;
  }
}

export interface OutboundDeps {
  /** REST base (the channel's `api`). */
  api: string;
  token: string;
  log: Logger;
  /** Removes the token from any text before it reaches a log or an error. */
  redact(text: string): string;
  /** Whether a guild reply notifies the person it answers (`replied_user`). Default true. */
  replyNotifies?: boolean;
  /** Wall time, for an interaction's 15 minutes. Default `Date.now`. */
  now?: () => number;
}

/** An interaction's token lets the bot answer it for 15 minutes (Discord's rule). */
const INTERACTION_TOKEN_MS = 15 * 60_000;

/** What the adapter's `send`, `edit` and `sendTyping` do, and the REST client's teardown. */
export interface DiscordOutbound {
  send(target: ChatTarget, text: string): Promise<SendReceipt>;
  edit(target: ChatTarget, messageId: string, text: string): Promise<void>;
  /** One file as an attachment (multipart `files[0]`), answering like `send`; Discord shows images inline. */
  sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt>;
  /** A message with rows of buttons (message components), answering like `send`. */
  sendComponents(target: ChatTarget, text: string, components: ActionRows): Promise<SendReceipt>;
  /** Replaces a message's text and components (`[]` removes its buttons). */
  editComponents(target: ChatTarget, messageId: string, text: string, components: ActionRows): Promise<void>;
  /** Best effort: a failure is logged at debug and swallowed. */
  sendTyping(target: ChatTarget): Promise<void>;
  /** Adds (or removes) the bot's own reaction on a message; rejects with a `DiscordAdapterError`. */
  react(target: ChatTarget, messageId: string, emoji: string, options: { remove: boolean }): Promise<void>;
  /**
   * A command the person used, deferred: the first reply to it (a send whose
   * `replyToMessageId` is `ix:<id>`) replaces the deferred response.
   */
  deferredCommand(interaction: { id: string; token: string; applicationId: string }): void;
  /** Registers the bot's application commands (a bulk overwrite). */
  registerCommands(applicationId: string, commands: RESTPutAPIApplicationCommandsJSONBody): Promise<void>;
  /** Stops the REST client's sweeper timers (after the last send). */
  close(): void;
}

/** Message components as Discord takes them: action rows of buttons. */
export type ActionRows = NonNullable<RESTPostAPIChannelMessageJSONBody["components"]>;

/**
 * Whether a reply quotes the message it answers: in a guild, and only a
 * message (a snowflake; a tap or a command is an interaction, `ix:<id>`, which
 * Discord refuses as a `message_reference`).
 */
const quotable = (target: ChatTarget): target is ChatTarget & { replyToMessageId: string } =>
  target.chatType === "group" && /^\d{15,20}$/.test(target.replyToMessageId ?? "");

/** Agent text never pings @everyone, roles or people; a reply pings its asker only when the channel says so. */
/** The Discord channel a target's messages go to: a thread is a channel of its own (inbound.ts#placeOf). */
export const channelOf = (target: Pick<ChatTarget, "chatId" | "threadId">): string => target.threadId ?? target.chatId;

export const allowedMentionsFor = (replyNotifies: boolean) =>
  ({ parse: [], replied_user: replyNotifies }) satisfies RESTPostAPIChannelMessageJSONBody["allowed_mentions"];

export function createDiscordOutbound(deps: OutboundDeps): DiscordOutbound {
  const allowedMentions = allowedMentionsFor(deps.replyNotifies ?? true);
  // No retries and no rate-limit waits inside this client: the core's one retry policy
  // owns those (a rate limit comes back as an error carrying its retry-after).
  const rest = new REST({ api: deps.api, retries: 0, rejectOnRateLimit: () => true }).setToken(deps.token);
  const fail = (prefix: string) => (error: unknown) => {
    throw toAdapterError(error, prefix, deps.redact);
  };

  const now = deps.now ?? Date.now;
  /** Deferred commands by `ix:<interaction id>`, until their first reply (or their token's end). */
  const deferred = new Map<string, { token: string; applicationId: string; at: number }>();

  /** The deferred response `target` answers, taken (a second reply is an ordinary message). */
  function takeDeferred(target: ChatTarget): { token: string; applicationId: string } | undefined {
    const key = target.replyToMessageId;
    const found = key ? deferred.get(key) : undefined;
    if (!key || !found) return undefined;
    deferred.delete(key);
    return now() - found.at < INTERACTION_TOKEN_MS ? found : undefined;
  }

  return {
    deferredCommand(interaction) {
      for (const [key, d] of deferred) if (now() - d.at >= INTERACTION_TOKEN_MS) deferred.delete(key);
      deferred.set(`ix:${interaction.id}`, { token: interaction.token, applicationId: interaction.applicationId, at: now() });
    },

    async registerCommands(applicationId, commands) {
      await rest.put(Routes.applicationCommands(applicationId), { body: commands }).catch(fail("discord command registration failed"));
    },

    async send(target, text) {
      const answering = takeDeferred(target);
      if (answering) {
        // The interaction's token is the credential: no bot token on this call.
        const body: RESTPatchAPIWebhookWithTokenMessageJSONBody = { content: checkedText(text), allowed_mentions: allowedMentions };
        const sent: unknown = await rest
          .patch(Routes.webhookMessage(answering.applicationId, answering.token, "@original"), { body, auth: false })
          .catch(fail(`discord command answer in ${target.chatId} failed`));
        return receiptOf(sent);
      }
      const body: RESTPostAPIChannelMessageJSONBody = { content: checkedText(text), allowed_mentions: allowedMentions };
      if (quotable(target)) {
        body.message_reference = { message_id: target.replyToMessageId, fail_if_not_exists: false };
      }
      const sent: unknown = await rest.post(Routes.channelMessages(channelOf(target)), { body }).catch(fail(`discord send to ${target.chatId} failed`));
      return receiptOf(sent);
    },

    async sendFile(target, file) {
      const body: RESTPostAPIChannelMessageJSONBody = { allowed_mentions: allowedMentions, attachments: [{ id: 0, filename: file.fileName }] };
      if (quotable(target)) {
        body.message_reference = { message_id: target.replyToMessageId, fail_if_not_exists: false };
      }
      const form = attachmentForm(body, file);
      const sent: unknown = await rest
        .post(Routes.channelMessages(channelOf(target)), { body: form.body, passThroughBody: true, headers: { "Content-Type": form.contentType } })
        .catch(fail(`discord file to ${target.chatId} failed`));
      return receiptOf(sent);
    },

    async edit(target, messageId, text) {
      const body: RESTPatchAPIChannelMessageJSONBody = { content: checkedText(text), allowed_mentions: allowedMentions };
      await rest.patch(Routes.channelMessage(channelOf(target), messageId), { body }).catch(fail(`discord edit in ${target.chatId} failed`));
    },

    async sendComponents(target, text, components) {
      const body: RESTPostAPIChannelMessageJSONBody = { content: checkedText(text), allowed_mentions: allowedMentions, components };
      const sent: unknown = await rest.post(Routes.channelMessages(channelOf(target)), { body }).catch(fail(`discord send to ${target.chatId} failed`));
      return receiptOf(sent);
    },

    async editComponents(target, messageId, text, components) {
      const body: RESTPatchAPIChannelMessageJSONBody = { content: checkedText(text), allowed_mentions: allowedMentions, components };
      await rest.patch(Routes.channelMessage(channelOf(target), messageId), { body }).catch(fail(`discord edit in ${target.chatId} failed`));
    },

    async sendTyping(target) {
      try {
        await rest.post(Routes.channelTyping(channelOf(target)));
      } catch (error) {
        deps.log.debug({ chatId: target.chatId, err: deps.redact(errorText(error)) }, "discord typing failed");
      }
    },

    async react(target, messageId, emoji, { remove }) {
      // Unicode emoji go URL-encoded in the path (custom ones would be name:id).
      const route = Routes.channelMessageOwnReaction(channelOf(target), messageId, encodeURIComponent(emoji));
      const where = `discord reaction in ${target.chatId} failed`;
      await (remove ? rest.delete(route) : rest.put(route)).catch(fail(where));
    },

    close() {
      rest.clearHashSweeper();
      rest.clearHandlerSweeper();
    },
  };
}

/**
 * A message with one attachment as Discord takes it: multipart with
 * `payload_json` and `files[0]`. Built here as one buffer rather than with
 * the REST client's FormData, whose stream only the undici copy that made it
 * can read (the process may hold two, and a shared global dispatcher).
 */
export function attachmentForm(
  payload: RESTPostAPIChannelMessageJSONBody,
  file: Pick<OutboundFile, "fileName" | "mimeType" | "data">,
): { body: Buffer; contentType: string } {
  const boundary = `agent-bridge-${randomUUID()}`;
  const name = file.fileName.replace(/[\r\n"\\]/g, "_");
  const head = [
    `--${boundary}`,
    'Content-Disposition: form-data; name="payload_json"',
    "Content-Type: application/json",
    "",
    JSON.stringify(payload),
    `--${boundary}`,
    `Content-Disposition: form-data; name="files[0]"; filename="${name}"`,
    `Content-Type: ${file.mimeType}`,
    "",
    "",
  ].join("\r\n");
  const body = Buffer.concat([Buffer.from(head, "utf8"), file.data, Buffer.from(`\r\n--${boundary}--\r\n`, "utf8")]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Refuses, without calling Discord, what Discord would refuse: "plain" text
 * also passes as is, since escaping would lengthen a chunk the core sized to fit.
 */
function checkedText(text: string): string {
  if (text.length > DISCORD_LIMITS.maxMessageLength) {
    throw new DiscordAdapterError({ message: `message of ${text.length} characters is over Discord's ${DISCORD_LIMITS.maxMessageLength}`, status: 400 });
  }
  if (!text.trim()) throw new DiscordAdapterError({ message: "Discord refuses empty messages", status: 400 });
  return text;
}

function receiptOf(sent: unknown): SendReceipt {
  const id = sent && typeof sent === "object" && "id" in sent ? sent.id : undefined;
  return typeof id === "string" ? { messageId: id } : {};
}

/** Any failure of a REST call as the error the core reads, split by where it failed. */
export function toAdapterError(error: unknown, prefix: string, redact: (text: string) => string): DiscordAdapterError {
  if (error instanceof RateLimitError) {
    return new DiscordAdapterError({ message: `${prefix}: rate limited for ${error.retryAfter} ms`, status: 429, retryAfterMs: error.retryAfter });
  }
  if (error instanceof DiscordAPIError) {
    return new DiscordAdapterError({ message: `${prefix}: ${error.status} ${redact(error.message)}`, status: error.status, code: error.code });
  }
  if (error instanceof HTTPError) {
    return new DiscordAdapterError({ message: `${prefix}: ${error.status} ${redact(error.message)}`, status: error.status });
  }
  return new DiscordAdapterError({ message: `${prefix}: ${redact(errorText(error))}` });
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
