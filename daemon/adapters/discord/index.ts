/**
 * Discord through discord.js 14: the gateway (via `connection.ts`) brings
 * messages in, a REST client of our own sends replies and typing by channel
 * id, so replies still go out while the gateway is reconnecting and DM
 * channels need no cache. Commands and access control are the core's; this
 * file only translates.
 */
import {
  DiscordAPIError,
  HTTPError,
  RateLimitError,
  REST,
  Routes,
  type Client,
  type Message,
  type RESTPostAPIChannelMessageJSONBody,
  type RESTPatchAPIChannelMessageJSONBody,
} from "discord.js";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import type { DiscordChannelConfig } from "./platform.js";
import { rawLength, SendError, type AdmissionAnswer, type DroppedAttachment, type SendReceipt } from "../../core/adapter.js";
import { createSerialQueue } from "../../core/retry.js";
import type { AdapterDeps, AdapterLimits, ChatAdapter, ChatTarget, InboundAttachment, InboundMessage, InboundSink, SendOptions } from "../../core/adapter.js";
import { downloadAttachment } from "../download.js";
import { createGatewayConnection, defaultConnectionTuning, type ConnectionTuning } from "./connection.js";
import { attachmentKind, classifyMessage, safeFileName, type BotIdentity, type DiscordMessageView } from "./inbound.js";

export { ConnectFailure } from "./connection.js";
export type { ConnectionTuning } from "./connection.js";

/** Streaming: an edit a second per channel stays well inside Discord's per-channel message limits (5 per 5 s). */
export const DISCORD_LIMITS: AdapterLimits = { maxMessageLength: 2000, typingRefreshMs: 8000, minEditIntervalMs: 1000 };

export interface DiscordAdapterOptions extends Partial<ConnectionTuning> {
  /** Jitter for reconnect backoff. */
  random?: Random;
  attachmentTimeoutMs?: number;
}

/** A send that failed: `status` is Discord's HTTP status, 0 when no answer came. */
/**
 * A Discord call that failed, as the core's `SendError`: 4xx other than 429
 * and 408 (unknown channel, missing access, a user who blocks DMs) is
 * permanent; a rate limit carries its retry-after.
 */
export class DiscordAdapterError extends SendError {
  /** Discord's JSON error code (10003 unknown channel, 50013 missing permissions, ...). */
  readonly code: number | string | undefined;
  constructor(message: string, status: number, code?: number | string, retryAfterMs?: number) {
    const permanent = status >= 400 && status < 500 && status !== 429 && status !== 408;
    super(message, { permanent, status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
    this.code = code;
  }

  /** Worth trying again later: rate limits, Discord's own errors, no answer. */
  get retryable(): boolean {
    return !this.permanent;
  }
}

export function createDiscordAdapter(config: DiscordChannelConfig, deps: AdapterDeps, options: DiscordAdapterOptions = {}): ChatAdapter {
  const accountId = config.id;
  const log = deps.logger.child({ adapter: "discord", accountId });
  const token = config.token;
  const redact = (text: string): string => (token ? text.split(token).join("[redacted]") : text);
  const { random = cryptoRandom, attachmentTimeoutMs = 60_000, ...tuningOverrides } = options;
  const tuning: ConnectionTuning = { ...defaultConnectionTuning, ...stripUndefined(tuningOverrides) };

  // Outbound goes through this client only: it does not depend on the gateway being up.
  // No retries and no rate-limit waits inside it: the core's one retry policy owns those
  // (a rate limit comes back as an error carrying its retry-after).
  const rest = new REST({ api: config.api, retries: 0, rejectOnRateLimit: () => true }).setToken(token);
  let sink: InboundSink | null = null;
  /** Messages of one channel reach the core in the order they were sent; channels side by side. */
  const chains = createSerialQueue<string>();

  const connection = createGatewayConnection({
    config,
    clock: deps.clock,
    random,
    log,
    redact,
    tuning,
    report: (event) => {
      const status = event.detail === undefined ? event : { ...event, detail: redact(event.detail) };
      // The core logs status news at info; this line is for adapter debugging.
      log.debug({ state: status.state, detail: status.detail }, "discord status");
      sink?.status(status);
    },
    onMessage: (message, client) => onMessage(message, client),
  });

  function onMessage(message: Message, client: Client<true>): void {
    const view = viewOf(message);
    const bot: BotIdentity = {
      id: client.user.id,
      name: client.user.username,
      roleIds: botRoleIds(message, client),
    };
    const decision = classifyMessage(view, bot);
    if (decision.kind === "ignore") {
      log.debug({ messageId: view.id, chatId: view.channelId, reason: decision.reason }, "discord message ignored");
      return;
    }
    const inbound: InboundMessage = {
      platform: "discord",
      accountId,
      chatId: view.channelId,
      chatType: decision.chatType,
      ...(decision.chatType === "group" ? { groupAliases: [view.parentChannelId, view.guildId].filter((id): id is string => Boolean(id)) } : {}),
      userId: view.authorId,
      userName: view.authorName,
      messageId: view.id,
      text: decision.text,
      sentAt: view.createdTimestamp,
      ...(decision.mentioned !== undefined ? { mentioned: decision.mentioned } : {}),
    };
    enqueue(view.channelId, () => deliver(view, inbound));
  }

  function enqueue(key: string, task: () => Promise<void>): void {
    chains.run(key, task).catch((error: unknown) => {
      log.error({ chatId: key, err: redact(errorText(error)) }, "discord message not handed to the core");
    });
  }

  async function deliver(view: DiscordMessageView, inbound: InboundMessage): Promise<void> {
    if (!sink) return;
    if (view.attachments.length > 0) {
      // Strangers' files are not fetched: the core says whether it would take the message, and which sizes.
      const admission = sink.admit({ message: inbound, attachmentSizes: view.attachments.map((a) => a.size) });
      if (admission.allowed) {
        const { files, dropped } = await fetchAttachments(view, admission.attachments);
        if (files.length > 0) inbound.attachments = files;
        // The core tells the sender, once the message is journaled.
        if (dropped.length > 0) inbound.droppedAttachments = dropped;
      }
      if (!inbound.text && !inbound.attachments && !inbound.droppedAttachments) return;
    }
    // Discord never delivers a message twice: the core journals it or tells the person.
    await sink.accept(inbound);
  }

  async function fetchAttachments(
    view: DiscordMessageView,
    admitted: AdmissionAnswer["attachments"],
  ): Promise<{ files: InboundAttachment[]; dropped: DroppedAttachment[] }> {
    const files: InboundAttachment[] = [];
    const dropped: DroppedAttachment[] = [];
    for (const [i, attachment] of view.attachments.entries()) {
      const fileName = safeFileName(attachment.name, attachment.id);
      const verdict = admitted[i];
      if (!verdict?.fetch) {
        dropped.push({ fileName, reason: verdict?.reason ?? "disabled" });
        continue;
      }
      const result = await downloadAttachment(attachment.url, {
        maxBytes: verdict.maxBytes,
        reportedSize: attachment.size,
        timeoutMs: attachmentTimeoutMs,
      });
      if (result.ok) {
        const file: InboundAttachment = { kind: attachmentKind(attachment.contentType), fileName, data: result.data };
        const mimeType = attachment.contentType ?? result.contentType;
        if (mimeType) file.mimeType = mimeType;
        files.push(file);
      } else if (result.reason === "too_large") {
        dropped.push({ fileName, reason: "too_large" });
      } else {
        log.warn({ messageId: view.id, fileName, detail: result.detail }, "discord attachment download failed");
        dropped.push({ fileName, reason: "unavailable" });
      }
    }
    return { files, dropped };
  }

  const adapter: ChatAdapter = {
    platform: "discord",
    accountId,
    limits: { ...DISCORD_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? DISCORD_LIMITS.minEditIntervalMs },
    capabilities: { redelivers: false, edit: true },
    // Discord counts the raw text (it renders Markdown itself).
    measure: rawLength,

    async start(inboundSink) {
      sink = inboundSink;
      await connection.start();
    },

    async stop() {
      await connection.stop();
      // Messages already taken in still reach the core.
      await chains.idle();
      rest.clearHashSweeper();
      rest.clearHandlerSweeper();
    },

    async send(target: ChatTarget, text: string, _options: SendOptions): Promise<SendReceipt> {
      // Discord renders Markdown itself, so "markdown" passes as is; "plain" also
      // passes as is, since escaping would lengthen a chunk the core sized to fit.
      if (text.length > DISCORD_LIMITS.maxMessageLength) {
        throw new DiscordAdapterError(`message of ${text.length} characters is over Discord's ${DISCORD_LIMITS.maxMessageLength}`, 400);
      }
      if (!text.trim()) throw new DiscordAdapterError("Discord refuses empty messages", 400);
      const body: RESTPostAPIChannelMessageJSONBody = {
        content: text,
        // Agent text must not ping @everyone, roles or people; a reply may ping its asker.
        allowed_mentions: { parse: [], replied_user: true },
      };
      if (target.replyToMessageId && target.chatType === "group") {
        body.message_reference = { message_id: target.replyToMessageId, fail_if_not_exists: false };
      }
      try {
        const sent = (await rest.post(Routes.channelMessages(target.chatId), { body })) as { id?: unknown } | null;
        return typeof sent?.id === "string" ? { messageId: sent.id } : {};
      } catch (error) {
        throw toAdapterError(error, `discord send to ${target.chatId} failed`);
      }
    },

    async edit(target: ChatTarget, messageId: string, text: string, _options: SendOptions): Promise<void> {
      if (text.length > DISCORD_LIMITS.maxMessageLength) {
        throw new DiscordAdapterError(`message of ${text.length} characters is over Discord's ${DISCORD_LIMITS.maxMessageLength}`, 400);
      }
      if (!text.trim()) throw new DiscordAdapterError("Discord refuses empty messages", 400);
      const body: RESTPatchAPIChannelMessageJSONBody = { content: text, allowed_mentions: { parse: [], replied_user: true } };
      try {
        // discord.js's REST client waits out Discord's rate-limit buckets itself.
        await rest.patch(Routes.channelMessage(target.chatId, messageId), { body });
      } catch (error) {
        throw toAdapterError(error, `discord edit in ${target.chatId} failed`);
      }
    },

    async sendTyping(target: ChatTarget) {
      try {
        await rest.post(Routes.channelTyping(target.chatId));
      } catch (error) {
        log.debug({ chatId: target.chatId, err: redact(errorText(error)) }, "discord typing failed");
      }
    },
  };

  function toAdapterError(error: unknown, prefix: string): DiscordAdapterError {
    if (error instanceof RateLimitError) {
      return new DiscordAdapterError(`${prefix}: rate limited for ${error.retryAfter} ms`, 429, undefined, error.retryAfter);
    }
    if (error instanceof DiscordAPIError) {
      return new DiscordAdapterError(`${prefix}: ${error.status} ${redact(error.message)}`, error.status, error.code);
    }
    if (error instanceof HTTPError) {
      return new DiscordAdapterError(`${prefix}: ${error.status} ${redact(error.message)}`, error.status);
    }
    return new DiscordAdapterError(`${prefix}: ${redact(errorText(error))}`, 0);
  }

  return adapter;
}

function viewOf(message: Message): DiscordMessageView {
  const channel = message.channel;
  return {
    id: message.id,
    channelId: message.channelId,
    guildId: message.guildId,
    parentChannelId: channel && "isThread" in channel && channel.isThread() ? channel.parentId : null,
    authorId: message.author.id,
    authorIsBot: message.author.bot,
    authorName: message.member?.displayName ?? message.author.globalName ?? message.author.username,
    isSystem: message.system,
    fromWebhook: message.webhookId !== null,
    content: message.content,
    createdTimestamp: message.createdTimestamp,
    mentionedUserIds: [...message.mentions.users.keys()],
    mentionedRoleIds: [...message.mentions.roles.keys()],
    repliedUserId: message.mentions.repliedUser?.id ?? null,
    attachments: [...message.attachments.values()].map((a) => ({
      id: a.id,
      name: a.name,
      url: a.url,
      size: a.size,
      contentType: a.contentType,
    })),
  };
}

function botRoleIds(message: Message, client: Client<true>): string[] {
  const role = message.guild?.roles.botRoleFor(client.user);
  return role ? [role.id] : [];
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
