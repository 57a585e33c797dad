/**
 * The Slack channel's link, start to stop: who the bot is (auth.test, asked
 * again with the backoff while Slack does not answer), and the one way events
 * come in, the HTTP Events API endpoint (events-http.ts) or Socket Mode
 * (socket-mode.ts), both through one event handler (events.ts) that hands
 * messages over (hand-over.ts). A refused bot or app token fails the start.
 */
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import { retry } from "../../helpers/retry.js";
import type { AdapterStatusEvent, EventInbox, InboundSink } from "../../vocabulary/adapter.js";
import type { SlackChannelConfig } from "./config.js";
import { SlackEventHandler } from "./events.js";
import { listenForEvents, type EventsEndpoint } from "./events-http.js";
import type { SlackHandOver } from "./hand-over.js";
import { InboxIntake } from "./inbox-intake.js";
import type { BotIdentity } from "./inbound.js";
import { SlackAdapterError, toAdapterError } from "./outbound.js";
import { createSocketConnection, type SocketConnection, type SocketTuning } from "./socket-mode.js";
import type { ActiveThreads } from "./threads.js";

export interface SlackConnectionDeps {
  config: SlackChannelConfig;
  /** The Web API client (bot token). */
  client: WebClient;
  handOver: SlackHandOver;
  threads: ActiveThreads;
  clock: Clock;
  random: Random;
  log: Logger;
  redact(text: string): string;
  tuning: SocketTuning;
  /** Told where the Events API endpoint listens (its real port when 0 was configured). */
  onListening?(url: string): void;
  /** Several machines, HTTP mode: every node receives (receiver.ts) and keeps events here; this owner takes them in instead of listening. */
  inbox?: EventInbox;
  /** Fetch for the private answers to taps (`response_url`). Default the global fetch. */
  fetchImpl?: typeof fetch;
}

/**
 * An ephemeral message to the person who tapped, through the tap's
 * `response_url` (shown to them only; it leaves the question's message as it
 * is). Best effort: a failure is logged.
 */
async function respondPrivately(url: string, text: string, deps: Pick<SlackConnectionDeps, "log" | "redact" | "fetchImpl">): Promise<void> {
  try {
    const answer = await (deps.fetchImpl ?? fetch)(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ response_type: "ephemeral", replace_original: false, text }),
      signal: AbortSignal.timeout(10_000),
    });
    await answer.arrayBuffer().catch(() => undefined);
    if (!answer.ok) deps.log.debug({ status: answer.status }, "slack response_url refused the private answer to a tap");
  } catch (error) {
    deps.log.debug({ err: deps.redact(error instanceof Error ? error.message : String(error)) }, "slack private answer to a tap not sent");
  }
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** How often the owner looks in the inbox when no notification woke it. */
const INBOX_POLL_MS = 1000;

export class SlackConnection {
  /** The channel, the Web API client and the parts it wires (injected; never changes). */
  readonly #deps: SlackConnectionDeps;
  /** What Slack sent, decided once per event id. */
  readonly #events: SlackEventHandler;
  /** The bot as auth.test named it; undefined until Slack answered (events meanwhile are left for Slack's retry). */
  #bot: BotIdentity | undefined;
  /** HTTP mode: the endpoint, once listening. */
  #endpoint: EventsEndpoint | null = null;
  /** Several machines, HTTP mode: the intake of the events the nodes kept, once started. */
  #intake: InboxIntake | null = null;
  /** Socket Mode: the supervisor, once started. */
  #socket: SocketConnection | null = null;
  /** Aborted by stop: ends the background identification's pause. */
  readonly #stopSignal = new AbortController();

  constructor(deps: SlackConnectionDeps) {
    this.#deps = deps;
    this.#events = new SlackEventHandler({
      accountId: deps.config.id,
      bot: () => this.#bot,
      clock: deps.clock,
      log: deps.log,
      redact: deps.redact,
      take: (message, files) => deps.handOver.take(message, files),
      inActiveThread: (chatId) => deps.threads.has(chatId),
      respond: (url, text) => respondPrivately(url, text, deps),
      // From the inbox nothing waits on the verdict: a row is removed only once the core has the event.
      ...(deps.inbox && deps.config.mode === "http" ? { ackWithinMs: null } : {}),
    });
  }

  async start(sink: InboundSink): Promise<void> {
    this.#deps.handOver.open(sink);
    this.#status({ state: "starting" });
    await this.#identify();
    if (this.#deps.config.mode === "socket") await this.#startSocket();
    else if (this.#deps.inbox) this.#takeFromInbox(this.#deps.inbox);
    else await this.#listen();
  }

  async stop(): Promise<void> {
    this.#stopSignal.abort();
    await Promise.allSettled([this.#endpoint?.close(), this.#socket?.stop(), this.#intake?.stop()]);
    // Messages already taken in still reach the core.
    await this.#deps.handOver.idle();
    await this.#deps.threads.flush();
  }

  /** auth.test now; when Slack does not answer, again in the background (the start goes on). */
  async #identify(): Promise<void> {
    const answer = await this.#askWhoAmI();
    if (answer instanceof SlackAdapterError) void this.#identifyLater(answer);
    else this.#identified(answer);
  }

  /** Asks again with the one retry (a question answered once, not a link to keep): until Slack answers, refuses the token, or stop. */
  async #identifyLater(first: SlackAdapterError): Promise<void> {
    const { tuning, random, clock, redact } = this.#deps;
    const signal = this.#stopSignal.signal;
    const bot = await retry(
      async (attempt) => {
        // The start asked already: that was the first try.
        const answer = attempt === 1 ? first : await this.#askWhoAmI();
        if (answer instanceof SlackAdapterError) throw answer;
        return answer;
      },
      {
        clock,
        random,
        maxAttempts: Number.POSITIVE_INFINITY,
        backoff: { baseMs: tuning.backoffInitialMs, maxMs: tuning.backoffMaxMs },
        signal,
        classify: (error) => (error instanceof SlackAdapterError ? { retry: true } : { retry: false }),
        onRetry: (error, _attempt, delay) => this.#status({ state: "reconnecting", detail: `${errorText(error)}; next attempt in ${delay} ms` }),
      },
    ).catch((error: unknown) => {
      if (!signal.aborted) this.#status({ state: "failed", detail: redact(errorText(error)) });
      return undefined;
    });
    if (bot === undefined || signal.aborted) return;
    this.#identified(bot);
    this.#status({ state: "connected" });
  }

  /** The bot, or why Slack did not say (worth asking again); throws for a refused token. */
  async #askWhoAmI(): Promise<BotIdentity | SlackAdapterError> {
    try {
      const me = await this.#deps.client.auth.test();
      if (!me.user_id) return new SlackAdapterError("slack auth.test named no bot user", { permanent: false });
      return { userId: me.user_id, botId: me.bot_id, name: me.user ?? "bot" };
    } catch (error) {
      const failure = toAdapterError(error, "slack auth.test failed", this.#deps.redact);
      if (failure.permanent) throw new Error(`${failure.message}: check the channel's botToken (xoxb-...)`);
      return failure;
    }
  }

  #identified(bot: BotIdentity): void {
    this.#bot = bot;
    this.#deps.log.info({ botUser: bot.userId, mode: this.#deps.config.mode }, "slack bot identified");
  }

  async #startSocket(): Promise<void> {
    const { config, clock, random, log, redact, tuning } = this.#deps;
    if (!config.appToken) throw new Error('the slack channel needs appToken in mode "socket"');
    this.#socket = createSocketConnection({
      appToken: config.appToken,
      api: config.api,
      deafAfterMs: config.watchdog.deafAfterMs,
      clock,
      random,
      log,
      redact,
      tuning,
      report: (event) => this.#status(event),
      onEvent: (payload, retry) => this.#events.handle(payload, retry),
      onCommand: (payload) => this.#events.handleCommand(payload),
      onAction: (payload) => this.#events.handleAction(payload),
    });
    await this.#socket.start();
  }

  #takeFromInbox(inbox: EventInbox): void {
    this.#intake = new InboxIntake({ inbox, events: this.#events, clock: this.#deps.clock, log: this.#deps.log, pollMs: INBOX_POLL_MS });
    this.#intake.start();
    this.#deps.log.info("slack events taken from the bridge's inbox (every node's endpoint keeps them)");
    if (this.#bot) this.#status({ state: "connected" });
  }

  async #listen(): Promise<void> {
    const { config, clock, log } = this.#deps;
    if (!config.signingSecret) throw new Error('the slack channel needs signingSecret in mode "http"');
    this.#endpoint = await listenForEvents({
      http: config.http,
      signingSecret: config.signingSecret,
      clock,
      log,
      handle: (body, retry) => this.#events.handle(body, retry),
      handleCommand: (fields) => this.#events.handleCommand(fields),
      handleAction: (payload) => this.#events.handleAction(payload),
    });
    log.info({ url: `${this.#endpoint.url}${config.http.path}` }, "slack events endpoint listening");
    this.#deps.onListening?.(this.#endpoint.url);
    if (this.#bot) this.#status({ state: "connected" });
  }

  /** Connection news to the core, without a token in it. */
  #status(event: AdapterStatusEvent): void {
    this.#deps.handOver.status(event.detail === undefined ? event : { ...event, detail: this.#deps.redact(event.detail) });
  }
}
