/**
 * The Telegram connection's lifecycle: start (webhook server, then connect:
 * getMe, the command menu, set or delete the webhook), the sessions of the
 * daemon's one reconnect loop (daemon/helpers/reconnect.ts) that connect and
 * long-poll until stopped (polling.ts does one poll), and stop. Status news
 * goes to the sink; a refused token ends the channel, a 409 that names a
 * webhook connects again (deleting it), any other failure is waited out with
 * backoff, which starts over only once a poll answered.
 */
import type { Api } from "grammy";
import type { Update, UserFromGetMe } from "grammy/types";
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import type { AdapterStateStore, InboundSink } from "../../vocabulary/adapter.js";
import { type ReconnectStatus, type ReconnectVerdict, type SessionContext, startReconnectLoop, untilAborted } from "../../helpers/reconnect.js";
import type { TelegramChannelConfig, TelegramWebhookConfig } from "./config.js";
import { describe, isPollConflict, isTokenRefused, type Scrub, TelegramAdapterError } from "./errors.js";
import { toApiSignal } from "./fetch.js";
import type { HandOver, HandoverContext } from "./hand-over.js";
import { Poller } from "./polling.js";
import { listenWebhook, type WebhookServer } from "./webhook.js";

/** The command menu registered at start (`setCommands`). */
export const TELEGRAM_COMMANDS = [
  { command: "new", description: "Start a fresh conversation" },
  { command: "reset", description: "Forget this conversation" },
  { command: "status", description: "Instance and queue status" },
  { command: "stop", description: "Stop the answer and drop queued messages" },
  { command: "help", description: "What I can do" },
  { command: "whoami", description: "Your ids and session" },
];

/** The ceiling of the backoff between failed connects or polls, ms (or `retryPauseMs`, if larger). */
const MAX_RETRY_PAUSE_MS = 30_000;

export interface ConnectionDeps {
  channel: TelegramChannelConfig;
  api: Api;
  log: Logger;
  scrub: Scrub;
  clock: Clock;
  random: Random;
  state: AdapterStateStore;
  /** Hands one update to the core (hand-over.ts). */
  handOver: HandOver;
  /** Telegram's long-poll `timeout`, seconds. */
  pollTimeoutSeconds: number;
  /** The first pause after a failure (doubling up to 30 s), ms. */
  retryPauseMs: number;
}

/** Webhook mode's settings; the schema requires them in that mode, so only a hand-built config lacks them. */
function webhookOf(channel: TelegramChannelConfig): TelegramWebhookConfig {
  if (!channel.webhook) throw new Error('mode "webhook" needs the channel\'s webhook settings (url, secretToken): add them, or use mode "polling"');
  return channel.webhook;
}

export class TelegramConnection {
  readonly #deps: ConnectionDeps;
  /** idle -> running -> stopped, never back: a stopped connection does not start again. */
  #phase: "idle" | "running" | "stopped" = "idle";
  /** Set by start: where updates and status news go. */
  #sink: InboundSink | undefined;
  /** Who the bot is, from the last successful connect's getMe. */
  #bot: UserFromGetMe | undefined;
  /** True from a successful connect until a 409 says a webhook was set meanwhile (then the loop connects again). */
  #connected = false;
  /** Aborted by stop: the pending long poll, pauses, getFile. Sends stay usable (the core may finish turns). */
  readonly #run = new AbortController();
  /** The background loop; stop waits for it. */
  #loop: Promise<void> | undefined;
  /** Webhook mode's server, while listening. */
  #webhook: WebhookServer | undefined;
  /** stop's one run: stop is idempotent. */
  #stopping: Promise<void> | undefined;

  constructor(deps: ConnectionDeps) {
    this.#deps = deps;
  }

  /** Resolves once connected, or once connecting is left to the background loop (Telegram not reachable). */
  async start(sink: InboundSink): Promise<void> {
    if (this.#phase === "stopped") {
      throw new TelegramAdapterError({ message: "telegram adapter was stopped; create a new adapter to start again" });
    }
    if (this.#phase === "running") return;
    this.#phase = "running";
    this.#sink = sink;
    sink.status({ state: "starting" });
    if (this.#deps.channel.mode === "webhook") await this.#openWebhook(sink);
    await this.#keepConnected();
  }

  /** Stops taking updates (the pending poll, the webhook server), then waits for updates already being handed over. */
  stop(): Promise<void> {
    this.#stopping ??= this.#shutDown();
    return this.#stopping;
  }

  async #shutDown(): Promise<void> {
    const wasRunning = this.#phase === "running";
    this.#phase = "stopped";
    this.#run.abort();
    await this.#loop;
    await this.#closeWebhook();
    if (wasRunning) this.#sink?.status({ state: "stopped" });
  }

  /** Where an update goes, once both bot and sink are known. */
  #handoverContext(): HandoverContext | undefined {
    return this.#bot && this.#sink ? { bot: this.#bot, sink: this.#sink, signal: this.#run.signal } : undefined;
  }

  readonly #handOverNow = (update: Update): Promise<void> => this.#deps.handOver(update, this.#handoverContext());

  // ------------------------------------------------------------ connecting

  async #openWebhook(sink: InboundSink): Promise<void> {
    const { channel, log, scrub } = this.#deps;
    try {
      this.#webhook = await listenWebhook({ hook: webhookOf(channel), log, scrub, handOver: this.#handOverNow });
    } catch (error) {
      this.#phase = "stopped";
      const detail = describe(error, scrub);
      sink.status({ state: "failed", detail });
      throw new TelegramAdapterError({ message: `telegram: cannot listen for the webhook: ${detail}` });
    }
  }

  /**
   * Starts the loop and waits for its first outcome: a refused token ends the
   * start; anything else leaves connecting to the loop, so other channels need not wait.
   */
  async #keepConnected(): Promise<void> {
    const { clock, random, retryPauseMs, scrub } = this.#deps;
    const poller = this.#deps.channel.mode === "polling" ? new Poller({ ...this.#deps, signal: this.#run.signal, handOver: this.#handOverNow }) : undefined;
    const loop = startReconnectLoop({
      session: (ctx) => this.#session(ctx, poller),
      classify: telegramVerdict,
      describe: (error) => describe(error, scrub),
      clock,
      random,
      backoff: { baseMs: retryPauseMs, maxMs: Math.max(retryPauseMs, MAX_RETRY_PAUSE_MS) },
      // A connect alone proves little (a 409 may follow at once): only an answered poll starts the backoff over.
      healthyAfterMs: Number.POSITIVE_INFINITY,
      signal: this.#run.signal,
      onStatus: (status) => this.#onStatus(status),
    });
    this.#loop = loop.done.then(() => undefined);
    if ((await loop.firstOutcome) !== "failed") return;
    const end = await loop.done;
    this.#phase = "stopped";
    await this.#closeWebhook();
    const error = end.state === "failed" ? end.error : undefined;
    const detail = describe(error, scrub);
    throw new TelegramAdapterError({
      message: `telegram: the bot token was refused (${detail})`,
      ...(isTokenRefused(error) ? { status: error.error_code } : {}),
    });
  }

  /** One session: connects when needed, then (polling) polls until a poll fails; webhook mode only waits for stop. */
  async #session(ctx: SessionContext, poller: Poller | undefined): Promise<void> {
    if (!this.#connected) {
      await this.#connect();
      ctx.connected(this.#botDetail());
    }
    if (!poller) {
      ctx.healthy();
      return untilAborted(ctx.signal);
    }
    while (!ctx.signal.aborted) {
      const batch = await poller.fetchUpdates().catch((error: unknown) => {
        // A webhook set meanwhile (by another deployment): connect again, which deletes it.
        if (isPollConflict(error) && /webhook/i.test(error.description)) this.#connected = false;
        throw error;
      });
      ctx.healthy();
      ctx.connected(this.#botDetail());
      await poller.handleUpdates(batch);
    }
  }

  #botDetail(): string {
    return `@${this.#bot?.username ?? "?"}`;
  }

  #onStatus(status: ReconnectStatus): void {
    const { log, scrub } = this.#deps;
    switch (status.state) {
      case "connected":
        this.#sink?.status({ state: "connected", detail: status.detail ?? this.#botDetail() });
        return;
      case "reconnecting": {
        const { error, detail } = status;
        if (isPollConflict(error)) log.error({ err: scrub(error.description) }, "telegram: another client polls this bot, or a webhook is set; retrying");
        else if (this.#bot === undefined) log.warn({ err: detail }, "telegram not reachable at start; retrying in the background");
        else log.warn({ err: detail }, this.#connected ? "telegram poll failed; retrying" : "telegram not reachable; retrying");
        this.#sink?.status({ state: "reconnecting", detail });
        return;
      }
      case "failed":
        log.error("telegram refused the bot token; the channel stops");
        this.#sink?.status({ state: "failed", detail: "Telegram refused the bot token" });
        return;
      case "stopped":
        return;
    }
  }

  /** getMe, the command menu, then the webhook set (webhook mode) or removed (polling: a webhook left set makes getUpdates answer 409). */
  async #connect(): Promise<void> {
    const { api, channel, log, scrub } = this.#deps;
    const signal = toApiSignal(this.#run.signal);
    const bot = await api.getMe(signal);
    this.#bot = bot;
    if (channel.setCommands) {
      await api.setMyCommands(TELEGRAM_COMMANDS, undefined, signal).catch((error: unknown) => {
        if (this.#run.signal.aborted) throw error;
        log.warn({ err: describe(error, scrub) }, "telegram setMyCommands failed (the menu stays as it was)");
      });
    }
    if (channel.mode === "webhook") {
      const hook = webhookOf(channel);
      await api.setWebhook(hook.url, { secret_token: hook.secretToken, allowed_updates: ["message", "callback_query"] }, signal);
    } else {
      await api.deleteWebhook(undefined, signal);
    }
    this.#connected = true;
    log.info({ bot: bot.username, mode: channel.mode }, "telegram connected");
  }

  async #closeWebhook(): Promise<void> {
    const server = this.#webhook;
    this.#webhook = undefined;
    await server?.close();
  }
}

/** A refused token is fatal; anything else (a 409 included) is waited out. */
function telegramVerdict(error: unknown): ReconnectVerdict {
  return isTokenRefused(error) ? { fatal: true } : {};
}
