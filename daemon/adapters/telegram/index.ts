/**
 * The Telegram adapter: grammY's `Api` (with `apiRoot`, so a local Bot API
 * server can stand in) behind the `ChatAdapter` interface.
 *
 * Intake is long polling by default: updates are handed to the core
 * concurrently across chats and in order within one chat, and the offset
 * (the last handled update id) moves, and is persisted, only over updates the
 * core accepted, so a restart neither replays nor skips. Webhook mode is
 * optional: there a 2xx goes back to Telegram only once the core accepted.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { timingSafeEqual } from "node:crypto";
import { Api, GrammyError, HttpError } from "grammy";
import type { Message, Update, UserFromGetMe } from "grammy/types";
import type { TelegramChannelConfig } from "./platform.js";
import {
  SendError,
  type AdapterDeps,
  type AdmissionAnswer,
  type ChatAdapter,
  type DroppedAttachment,
  type ChatTarget,
  type InboundAttachment,
  type InboundMessage,
  type InboundSink,
  type SendOptions,
  type SendReceipt,
  type TextFormat,
} from "../../core/adapter.js";
import { backoffDelay, createSerialQueue, pause as pauseFor } from "../../core/retry.js";
import { redactSecrets } from "../../ops/logger.js";
import { cryptoRandom } from "../../../shared/random.js";
import { downloadAttachment } from "../download.js";
import { addressesBot, chatTypeOf, fileRefsOf, stripMention, type FileRef } from "./inbound.js";
import { telegramFetch } from "./fetch.js";
import { telegramMarkdownToHtml, telegramVisibleLength } from "./markdown.js";

export { telegramMarkdownToHtml, telegramVisibleLength } from "./markdown.js";
export { addressesBot, stripMention } from "./inbound.js";

/** Streaming: at most one send or edit a second per chat (Telegram's flood limits start about there). */
export const TELEGRAM_LIMITS = { maxMessageLength: 4096, typingRefreshMs: 4500, minEditIntervalMs: 1000 } as const;
/** The adapter's state key for the last update id handed to the core. */
export const OFFSET_KEY = "lastUpdateId";
/** When the offset was saved (epoch ms). */
export const OFFSET_AT_KEY = "lastUpdateAt";
/**
 * Telegram holds an update 24 hours, and after a week without updates picks
 * the next id at random (possibly below a saved offset, which would then skip
 * it). An offset older than a day guards nothing still held: it is dropped.
 */
const OFFSET_TTL_MS = 24 * 60 * 60 * 1000;
export const TELEGRAM_COMMANDS = [
  { command: "new", description: "Start a fresh conversation" },
  { command: "reset", description: "Forget this conversation" },
  { command: "status", description: "Instance and queue status" },
  { command: "stop", description: "Stop the answer and drop queued messages" },
  { command: "help", description: "What I can do" },
  { command: "whoami", description: "Your ids and session" },
];
const MAX_WEBHOOK_BODY = 1024 * 1024;

export interface TelegramAdapterOptions {
  /** Long-poll timeout in seconds (Telegram's `timeout`); tests use small ones. Default 25. */
  pollTimeoutSeconds?: number;
  /**
   * Pause after a refused accept, the first pause after a failed poll (doubling
   * up to 30 s), and after an empty poll answered at once (doubling up to 5 s:
   * a Bot API server that does not hold long polls must not be polled in a
   * tight loop). Default 1000 ms.
   */
  retryPauseMs?: number;
  /** Per attachment download. Default 60 s. */
  attachmentTimeoutMs?: number;
  /** Jitter for pauses. */
  random?: import("../../../shared/random.js").Random;
}

/**
 * A Bot API call that failed, as the core's `SendError`: `status` is
 * Telegram's error code (0 when no answer came). 4xx other than 429 is
 * permanent (403 "bot was blocked by the user", 400 "chat not found"); a 429
 * carries its `retry_after`, which the core's retry policy waits out.
 */
export class TelegramAdapterError extends SendError {
  /** Telegram's `retry_after` on a 429, seconds. */
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, status: number, retryAfterSeconds?: number) {
    super(message, {
      permanent: status >= 400 && status < 500 && status !== 429,
      status,
      ...(retryAfterSeconds !== undefined ? { retryAfterMs: retryAfterSeconds * 1000 } : {}),
    });
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** Worth trying again later: flood limits, Telegram's own errors, no answer. */
  get retryable(): boolean {
    return !this.permanent;
  }
}

// grammY types signals with its abort-controller polyfill; at runtime it takes the standard one.
type ApiSignal = Parameters<Api["getMe"]>[0];

export function createTelegramAdapter(config: TelegramChannelConfig, deps: AdapterDeps, options: TelegramAdapterOptions = {}): ChatAdapter {
  const log = deps.logger.child({ platform: "telegram", accountId: config.id });
  const random = options.random ?? cryptoRandom;
  const scrub = (text: string) => redactSecrets(text, [config.token]);
  const apiRoot = config.apiRoot.replace(/\/+$/, "");
  const pollTimeout = options.pollTimeoutSeconds ?? 25;
  const retryPauseMs = options.retryPauseMs ?? 1000;
  // A request that hangs must not hang for grammY's default 500 s; a long poll needs its timeout plus slack.
  // No retry layer here: a 429 surfaces with its retry_after, and the core's one retry policy waits it out.
  const api = new Api(config.token, { apiRoot, timeoutSeconds: pollTimeout + 30, fetch: telegramFetch });

  let phase: "idle" | "running" | "stopped" = "idle";
  let sink: InboundSink | undefined;
  let me: UserFromGetMe | undefined;
  let connected = false;
  /** Aborted by stop: the pending long poll, pauses, getFile. Sends stay usable (the core may finish turns). */
  const run = new AbortController();
  const signal = run.signal as unknown as ApiSignal;
  let loop: Promise<void> | undefined;
  let webhook: Server | undefined;
  let stopping: Promise<void> | undefined;
  /** Webhook mode: one chain per chat keeps a chat's updates in order. */
  const chains = createSerialQueue<string>();

  const pause = (ms: number) => pauseFor(deps.clock, ms, run.signal);

  const tokenRefused = (error: unknown) => error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404);

  // ------------------------------------------------------------ connecting

  async function connect(): Promise<void> {
    me = await api.getMe(signal);
    if (config.setCommands) {
      await api.setMyCommands(TELEGRAM_COMMANDS, undefined, signal).catch((error: unknown) => {
        if (run.signal.aborted) throw error;
        log.warn({ err: describe(error, scrub) }, "telegram setMyCommands failed (the menu stays as it was)");
      });
    }
    if (config.mode === "webhook") {
      const hook = config.webhook!;
      await api.setWebhook(hook.url, { secret_token: hook.secretToken, allowed_updates: ["message"] }, signal);
    } else {
      // A webhook left set makes getUpdates answer 409.
      await api.deleteWebhook(undefined, signal);
    }
    connected = true;
    log.info({ bot: me.username, mode: config.mode }, "telegram connected");
    sink?.status({ state: "connected", detail: `@${me.username}` });
  }

  /** Polls (or, for a webhook, only finishes connecting) until stopped. Never throws. */
  async function runLoop(): Promise<void> {
    let offset = deps.state.get<number>(OFFSET_KEY);
    const savedAt = deps.state.get<number>(OFFSET_AT_KEY);
    if (offset !== undefined && savedAt !== undefined && deps.clock.now() - savedAt > OFFSET_TTL_MS) {
      log.info({ offset }, "telegram offset older than a day: starting from what Telegram still holds");
      offset = undefined;
    }
    /** Update ids above the offset already accepted (a chat behind them was refused): not handed over twice. */
    const handedOver = new Set<number>();
    /** Failed attempts in a row, for the backoff; `degraded` once polls fail after connecting. */
    let failures = connected ? 0 : 1;
    /** Empty polls answered at once in a row (a server that does not hold long polls). */
    let hastyEmpty = 0;
    let degraded = false;
    if (!connected) await pause(retryPauseMs);
    while (phase === "running") {
      try {
        if (!connected) await connect();
        if (config.mode === "webhook") return;
        const asked = deps.clock.now();
        const updates = await api.getUpdates(
          { offset: offset === undefined ? undefined : offset + 1, timeout: pollTimeout, allowed_updates: ["message"] },
          signal,
        );
        failures = 0;
        if (degraded) {
          degraded = false;
          sink?.status({ state: "connected", detail: `@${me?.username ?? "?"}` });
        }
        if (!updates.length) {
          // Telegram holds an empty poll for `timeout` seconds; one answered well before that means a
          // server that does not, and asking again at once would spin. Wait, longer each time.
          if (deps.clock.now() - asked < (pollTimeout * 1000) / 2) {
            hastyEmpty++;
            await pause(backoffDelay(hastyEmpty, { baseMs: retryPauseMs, maxMs: Math.max(retryPauseMs, 5000) }, random));
          } else hastyEmpty = 0;
          continue;
        }
        hastyEmpty = 0;
        for (const id of await handleBatch(updates.filter((u) => !handedOver.has(u.update_id)))) handedOver.add(id);
        // The offset moves over the longest handled prefix; the rest comes again with the next poll.
        let next = offset;
        for (const update of updates) {
          if (!handedOver.has(update.update_id)) break;
          next = update.update_id;
          handedOver.delete(update.update_id);
        }
        if (next !== undefined && next !== offset) {
          offset = next;
          // Persisted before the next poll confirms these to Telegram, so a crash in between does not replay them.
          await Promise.all([deps.state.set(OFFSET_KEY, next), deps.state.set(OFFSET_AT_KEY, deps.clock.now())]).catch((error: unknown) => {
            log.error({ err: describe(error, scrub) }, "telegram offset not persisted (after a crash the core drops the repeats)");
          });
        }
        if (next !== updates[updates.length - 1]!.update_id) await pause(retryPauseMs);
      } catch (error) {
        if (phase !== "running") return;
        if (tokenRefused(error)) {
          log.error("telegram refused the bot token; the channel stops");
          sink?.status({ state: "failed", detail: "Telegram refused the bot token" });
          return;
        }
        if (error instanceof GrammyError && error.error_code === 409) {
          log.error({ err: scrub(error.description) }, "telegram: another client polls this bot, or a webhook is set; retrying");
          if (/webhook/i.test(error.description)) connected = false;
        } else {
          log.warn({ err: describe(error, scrub) }, connected ? "telegram poll failed; retrying" : "telegram not reachable; retrying");
        }
        failures++;
        if (connected) degraded = true;
        sink?.status({ state: "reconnecting", detail: describe(error, scrub) });
        await pause(backoffDelay(failures, { baseMs: retryPauseMs, maxMs: Math.max(retryPauseMs, 30_000) }, random));
      }
    }
  }

  // ------------------------------------------------------------ intake

  const chatKeyOf = (update: Update) => String(update.message?.chat.id ?? "other");

  /** Hands a poll's updates over: chats side by side, each chat in order, stopping at a chat's first refusal. Returns the handled ids. */
  async function handleBatch(updates: Update[]): Promise<number[]> {
    const byChat = new Map<string, Update[]>();
    for (const update of updates) {
      const key = chatKeyOf(update);
      byChat.set(key, [...(byChat.get(key) ?? []), update]);
    }
    const handled: number[] = [];
    await Promise.all(
      [...byChat.values()].map(async (list) => {
        for (const update of list) {
          try {
            await handleUpdate(update);
            handled.push(update.update_id);
          } catch (error) {
            // Later updates of this chat wait for this one: handing them over first would reorder the chat.
            if (!run.signal.aborted) log.warn({ updateId: update.update_id, err: describe(error, scrub) }, "telegram update not accepted; will retry");
            return;
          }
        }
      }),
    );
    return handled;
  }

  /** Resolves once the update is with the core (or is not for us); rejects when it must come again. */
  async function handleUpdate(update: Update): Promise<void> {
    const message = update.message;
    if (!message) return;
    if (!me || !sink) throw new Error("not connected yet");
    const inbound = translate(message, me);
    if (!inbound) return;
    const refs = fileRefsOf(message);
    if (refs.length) {
      // Strangers' files are not fetched: the core says whether it would take the message, and which files.
      const admission = sink.admit({ message: inbound, attachmentSizes: refs.map((r) => r.size) });
      if (admission.allowed) {
        const files: InboundAttachment[] = [];
        const dropped: DroppedAttachment[] = [];
        for (const [i, ref] of refs.entries()) {
          const result = await download(ref, admission.attachments[i]);
          if ("reason" in result) dropped.push(result);
          else files.push(result);
        }
        if (files.length) inbound.attachments = files;
        // The core tells the sender, once the message is journaled.
        if (dropped.length) inbound.droppedAttachments = dropped;
      }
    }
    if (inbound.text.trim() || inbound.attachments?.length || inbound.droppedAttachments?.length) {
      const outcome = await sink.accept(inbound);
      // Not acknowledged (busy, stopping): the offset stays, and Telegram hands it over again.
      if (!outcome.acknowledge) throw new Error(`not taken now (${outcome.reason}); Telegram will deliver it again`);
    }
  }

  function translate(message: Message, bot: UserFromGetMe): InboundMessage | undefined {
    const chatType = chatTypeOf(message);
    if (!chatType || !message.from || message.from.is_bot) return undefined;
    const chatId = String(message.chat.id);
    const from = message.from;
    return {
      platform: "telegram",
      accountId: config.id,
      chatId,
      chatType,
      userId: String(from.id),
      userName: from.username ?? [from.first_name, from.last_name].filter(Boolean).join(" "),
      messageId: String(message.message_id),
      text: stripMention(message.text ?? message.caption ?? "", bot.username),
      sentAt: message.date * 1000,
      // The core applies the group's mention rule.
      ...(chatType === "group" ? { mentioned: addressesBot(message, bot) } : {}),
    };
  }

  /** The file, or why it was not passed on (the core tells the sender). */
  async function download(ref: FileRef, verdict: AdmissionAnswer["attachments"][number] | undefined): Promise<InboundAttachment | DroppedAttachment> {
    const tooLarge: DroppedAttachment = { fileName: ref.fileName, reason: "too_large" };
    const unavailable: DroppedAttachment = { fileName: ref.fileName, reason: "unavailable" };
    if (!verdict?.fetch) return { fileName: ref.fileName, reason: verdict?.reason ?? "disabled" };
    try {
      const file = await api.getFile(ref.fileId, signal);
      if (!file.file_path) return unavailable;
      const path = file.file_path.split("/").map(encodeURIComponent).join("/");
      const result = await downloadAttachment(`${apiRoot}/file/bot${config.token}/${path}`, {
        maxBytes: verdict.maxBytes,
        ...(file.file_size !== undefined ? { reportedSize: file.file_size } : {}),
        timeoutMs: options.attachmentTimeoutMs ?? 60_000,
      });
      if (result.ok) return { kind: ref.kind, fileName: ref.fileName, ...(ref.mimeType ? { mimeType: ref.mimeType } : {}), data: result.data };
      if (result.reason === "too_large") return tooLarge;
      if (run.signal.aborted) throw new Error("stopped");
      log.warn({ fileName: ref.fileName, err: scrub(result.detail) }, "telegram attachment download failed");
    } catch (error) {
      // Stopping mid-download: the update must come again, not go through without its file.
      if (run.signal.aborted) throw error;
      // The Bot API serves files up to 20 MB.
      if (error instanceof GrammyError && /too big/i.test(error.description)) return tooLarge;
      log.warn({ fileName: ref.fileName, err: describe(error, scrub) }, "telegram attachment download failed");
    }
    return unavailable;
  }

  // ------------------------------------------------------------ webhook

  function enqueueForChat(update: Update): Promise<void> {
    return chains.run(chatKeyOf(update), () => handleUpdate(update));
  }

  function onWebhookRequest(req: IncomingMessage, res: ServerResponse): void {
    const hook = config.webhook!;
    if (req.method !== "POST" || req.url !== hook.path) return void res.writeHead(404).end();
    if (!sameSecret(req.headers["x-telegram-bot-api-secret-token"], hook.secretToken)) return void res.writeHead(401).end();
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_WEBHOOK_BODY) {
        res.writeHead(413).end();
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on("end", () => {
      let update: Update;
      try {
        update = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Update;
      } catch {
        return void res.writeHead(400).end();
      }
      // Answer only once accepted: anything but 2xx makes Telegram deliver the update again.
      enqueueForChat(update).then(
        () => res.writeHead(200).end(),
        (error: unknown) => {
          log.warn({ updateId: update.update_id, err: describe(error, scrub) }, "telegram update not accepted; Telegram will retry");
          res.writeHead(503).end();
        },
      );
    });
  }

  async function listenWebhook(): Promise<void> {
    const hook = config.webhook;
    if (!hook) throw new TelegramAdapterError('telegram: mode "webhook" needs webhook settings', 0);
    const server = createServer(onWebhookRequest);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(hook.port, hook.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    webhook = server;
  }

  async function closeWebhook(): Promise<void> {
    const server = webhook;
    webhook = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await closed;
  }

  // ------------------------------------------------------------ the adapter

  const adapter: ChatAdapter = {
    platform: "telegram",
    accountId: config.id,
    limits: { ...TELEGRAM_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? TELEGRAM_LIMITS.minEditIntervalMs },
    // An update not confirmed by the next poll's offset (or a webhook answered non-2xx) comes again.
    capabilities: { redelivers: true, edit: true },

    measure(text: string, format: TextFormat) {
      return format === "markdown" ? telegramVisibleLength(telegramMarkdownToHtml(text)) : text.length;
    },

    async start(s) {
      if (phase === "stopped") throw new TelegramAdapterError("telegram adapter was stopped", 0);
      if (phase === "running") return;
      phase = "running";
      sink = s;
      s.status({ state: "starting" });
      if (config.mode === "webhook") {
        try {
          await listenWebhook();
        } catch (error) {
          phase = "stopped";
          const detail = describe(error, scrub);
          s.status({ state: "failed", detail });
          throw new TelegramAdapterError(`telegram: cannot listen for the webhook: ${detail}`, 0);
        }
      }
      try {
        await connect();
      } catch (error) {
        const detail = describe(error, scrub);
        if (tokenRefused(error)) {
          phase = "stopped";
          await closeWebhook();
          s.status({ state: "failed", detail: "Telegram refused the bot token" });
          throw new TelegramAdapterError(`telegram: the bot token was refused (${detail})`, (error as GrammyError).error_code);
        }
        // Not reachable for now: keep trying in the background so other channels need not wait for Telegram.
        log.warn({ err: detail }, "telegram not reachable at start; retrying in the background");
        s.status({ state: "reconnecting", detail });
      }
      loop = runLoop();
    },

    stop() {
      stopping ??= (async () => {
        const wasRunning = phase === "running";
        phase = "stopped";
        run.abort();
        await loop;
        await closeWebhook();
        // Updates already being handed over still reach the core (or come again).
        await chains.idle();
        if (wasRunning) sink?.status({ state: "stopped" });
      })();
      return stopping;
    },

    async send(target: ChatTarget, text: string, sendOptions: SendOptions): Promise<SendReceipt> {
      const chatId = target.chatId;
      // In groups the reply quotes the message it answers (and so lands in the right forum topic).
      const reply =
        target.chatType === "group" && target.replyToMessageId && /^\d+$/.test(target.replyToMessageId)
          ? { reply_parameters: { message_id: Number(target.replyToMessageId), allow_sending_without_reply: true } }
          : {};
      if (sendOptions.format === "markdown") {
        const html = telegramMarkdownToHtml(text);
        // Telegram's limit is on the text left after entity parsing, not on the HTML source.
        if (html.trim() && telegramVisibleLength(html) <= TELEGRAM_LIMITS.maxMessageLength) {
          try {
            const sent = await api.sendMessage(chatId, html, { parse_mode: "HTML", ...reply });
            return { messageId: String(sent.message_id) };
          } catch (error) {
            if (!isEntityError(error)) throw toAdapterError("sendMessage", error, scrub);
            log.debug({ err: describe(error, scrub) }, "telegram refused the HTML entities; sending plain text");
          }
        }
      }
      try {
        const sent = await api.sendMessage(chatId, text, reply);
        return { messageId: String(sent.message_id) };
      } catch (error) {
        throw toAdapterError("sendMessage", error, scrub);
      }
    },

    async edit(target: ChatTarget, messageId: string, text: string, editOptions: SendOptions): Promise<void> {
      const chatId = target.chatId;
      const id = Number(messageId);
      if (!Number.isSafeInteger(id)) throw new TelegramAdapterError(`telegram editMessageText: not a message id`, 400);
      // Same rules as send: HTML when it renders within the limit, else (or when refused as entities) plain text.
      if (editOptions.format === "markdown") {
        const html = telegramMarkdownToHtml(text);
        if (html.trim() && telegramVisibleLength(html) <= TELEGRAM_LIMITS.maxMessageLength) {
          try {
            await api.editMessageText(chatId, id, html, { parse_mode: "HTML" });
            return;
          } catch (error) {
            if (isNotModified(error)) return;
            if (!isEntityError(error)) throw toAdapterError("editMessageText", error, scrub);
            log.debug({ err: describe(error, scrub) }, "telegram refused the HTML entities; editing to plain text");
          }
        }
      }
      try {
        await api.editMessageText(chatId, id, text);
      } catch (error) {
        if (isNotModified(error)) return;
        throw toAdapterError("editMessageText", error, scrub);
      }
    },

    async sendTyping(target) {
      try {
        await api.sendChatAction(target.chatId, "typing");
      } catch (error) {
        log.debug({ err: describe(error, scrub) }, "telegram typing failed (ignored)");
      }
    },
  };
  return adapter;
}

const isEntityError = (error: unknown) =>
  error instanceof GrammyError && error.error_code === 400 && /can't parse entities|unsupported start tag|can't find end tag/i.test(error.description);

/** The message already shows this text: the edit's purpose is met. */
const isNotModified = (error: unknown) => error instanceof GrammyError && error.error_code === 400 && /message is not modified/i.test(error.description);

function describe(error: unknown, scrub: (s: string) => string): string {
  if (error instanceof GrammyError) return scrub(`${error.error_code}: ${error.description}`);
  // grammY's network errors wrap the fetch error, whose text can carry the URL (with the token in it).
  if (error instanceof HttpError) return scrub(`network: ${error.error instanceof Error ? error.error.message : String(error.error)}`);
  return scrub(error instanceof Error ? error.message : String(error));
}

function toAdapterError(method: string, error: unknown, scrub: (s: string) => string): TelegramAdapterError {
  const status = error instanceof GrammyError ? error.error_code : 0;
  const retryAfter = error instanceof GrammyError ? error.parameters.retry_after : undefined;
  return new TelegramAdapterError(`telegram ${method} failed: ${describe(error, scrub)}`, status, retryAfter);
}

function sameSecret(given: string | string[] | undefined, expected: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
