/**
 * Slack through `@slack/web-api` and `@slack/socket-mode`, wired from its
 * parts: events come in over HTTP (events-http.ts, signed) or Socket Mode
 * (connection.ts), events.ts answers Slack's retries once and decides the
 * acknowledgement, inbound.ts translates, intake.ts hands over in each chat's
 * order; outbound.ts sends replies, edits, files, reactions and the "is
 * thinking" status. Access, commands and retries are the core's.
 */
import { WebClient } from "@slack/web-api";
import { backoffDelay } from "../../../shared/backoff.js";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { pause } from "../../helpers/retry.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import type { SlackChannelConfig } from "./config.js";
import { createSocketConnection, defaultSocketTuning, slackLogger, type SocketConnection, type SocketTuning } from "./connection.js";
import { SlackEventHandler } from "./events.js";
import { listenForEvents, type EventsEndpoint } from "./events-http.js";
import type { BotIdentity } from "./inbound.js";
import { SlackHandOver } from "./hand-over.js";
import { createSlackOutbound, renderText, SLACK_FILE_LIMITS, SLACK_LIMITS, SlackAdapterError, toAdapterError } from "./outbound.js";
import { ActiveThreads } from "./threads.js";

export { SLACK_LIMITS, SlackAdapterError } from "./outbound.js";
export { markdownToMrkdwn } from "./mrkdwn.js";

export interface SlackAdapterOptions extends Partial<SocketTuning> {
  /** Jitter for reconnect backoff. Default `cryptoRandom`. */
  random?: Random;
  /** Longest one file download may take, ms. Default 60 000. */
  attachmentTimeoutMs?: number;
  /** Told where the Events API endpoint listens (its real port when 0 was configured). */
  onListening?(url: string): void;
}

export function createSlackAdapter(config: SlackChannelConfig, deps: AdapterDeps, options: SlackAdapterOptions = {}): ChatAdapter {
  const accountId = config.id;
  const log = deps.logger.child({ adapter: "slack", accountId });
  const secrets = [config.botToken, config.appToken, config.signingSecret].filter((s): s is string => !!s);
  const redact = (text: string): string => redactSecrets(text, secrets);
  const { random = cryptoRandom, attachmentTimeoutMs = 60_000, onListening, ...tuningOverrides } = options;
  const tuning: SocketTuning = { ...defaultSocketTuning, ...Object.fromEntries(Object.entries(tuningOverrides).filter(([, v]) => v !== undefined)) };

  // No retries and no rate-limit waits inside the client: the core's one retry policy owns those.
  const client = new WebClient(config.botToken, {
    slackApiUrl: `${config.api}/`,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logger: slackLogger(log, redact),
  });
  const outbound = createSlackOutbound({ client, log, redact });
  const threads = new ActiveThreads(deps.state);
  const intake = new SlackHandOver({
    log,
    redact,
    botToken: config.botToken,
    attachmentTimeoutMs,
    onAccepted: (message) => {
      if (message.chatType === "group") threads.add(message.chatId);
    },
  });
  let bot: BotIdentity | undefined;
  const events = new SlackEventHandler({
    accountId,
    bot: () => bot,
    clock: deps.clock,
    log,
    redact,
    take: (message, files) => intake.take(message, files),
    inActiveThread: (chatId) => threads.has(chatId),
  });
  const stopSignal = new AbortController();
  let endpoint: EventsEndpoint | null = null;
  let socket: SocketConnection | null = null;

  /** auth.test once: who the bot is (its messages are not turns; its mention is stripped). Throws for a refused token, else undefined when Slack did not answer. */
  async function identifyOnce(): Promise<BotIdentity | SlackAdapterError> {
    try {
      const me = await client.auth.test();
      if (!me.user_id) return new SlackAdapterError("slack auth.test named no bot user", { permanent: false });
      return { userId: me.user_id, botId: me.bot_id, name: me.user ?? "bot" };
    } catch (error) {
      const failure = toAdapterError(error, "slack auth.test failed", redact);
      if (failure.permanent) throw new Error(`${failure.message}: check the channel's botToken (xoxb-...)`);
      return failure;
    }
  }

  /**
   * Who the bot is, asked again with backoff while Slack does not answer (the
   * start goes on meanwhile: events are left unacknowledged until then, so
   * Slack delivers them again). Resolves when known, or stopped.
   */
  async function identifyInBackground(first: SlackAdapterError): Promise<void> {
    let failure = first;
    for (let attempt = 1; !stopSignal.signal.aborted; attempt++) {
      const delay = backoffDelay(attempt, { baseMs: tuning.backoffInitialMs, maxMs: tuning.backoffMaxMs }, random);
      intake.status({ state: "reconnecting", detail: `${failure.message}; next attempt in ${delay} ms` });
      await pause(deps.clock, delay, stopSignal.signal);
      if (stopSignal.signal.aborted) return;
      const answer = await identifyOnce().catch((error: unknown) => {
        intake.status({ state: "failed", detail: redact(error instanceof Error ? error.message : String(error)) });
        return undefined;
      });
      if (answer === undefined) return;
      if (!(answer instanceof SlackAdapterError)) {
        bot = answer;
        log.info({ botUser: bot.userId, mode: config.mode }, "slack bot identified");
        intake.status({ state: "connected" });
        return;
      }
      failure = answer;
    }
  }

  return {
    platform: "slack",
    accountId,
    limits: { ...SLACK_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? SLACK_LIMITS.minEditIntervalMs },
    // Slack retries only what is not acknowledged, a few times over minutes: every message is journaled or refused with a notice.
    capabilities: { redelivers: false, edit: true },
    // Slack counts the text it is sent: the mrkdwn, escapes included.
    measure: (text, format) => renderText(text, format).length,

    async start(sink) {
      intake.open(sink);
      intake.status({ state: "starting" });
      const identity = await identifyOnce();
      if (identity instanceof SlackAdapterError) void identifyInBackground(identity);
      else {
        bot = identity;
        log.info({ botUser: bot.userId, mode: config.mode }, "slack bot identified");
      }
      if (config.mode === "socket" && config.appToken) {
        socket = createSocketConnection({
          appToken: config.appToken,
          api: config.api,
          deafAfterMs: config.watchdog.deafAfterMs,
          clock: deps.clock,
          random,
          log,
          redact,
          tuning,
          report: (event) => intake.status(event.detail === undefined ? event : { ...event, detail: redact(event.detail) }),
          onEvent: (payload, retry) => events.handle(payload, retry),
          onCommand: (payload) => events.handleCommand(payload),
        });
        await socket.start();
        return;
      }
      if (!config.signingSecret) throw new Error('the slack channel needs signingSecret in mode "http"');
      endpoint = await listenForEvents({
        http: config.http,
        signingSecret: config.signingSecret,
        clock: deps.clock,
        log,
        handle: (body, retry) => events.handle(body, retry),
        handleCommand: (fields) => events.handleCommand(fields),
      });
      log.info({ url: `${endpoint.url}${config.http.path}` }, "slack events endpoint listening");
      onListening?.(endpoint.url);
      if (bot) intake.status({ state: "connected" });
    },

    async stop() {
      stopSignal.abort();
      await Promise.allSettled([endpoint?.close(), socket?.stop()]);
      // Messages already taken in still reach the core.
      await intake.idle();
      await threads.flush();
    },

    send: (target, text, { format }) => outbound.send(target, text, format),
    edit: (target, messageId, text, { format }) => outbound.edit(target, messageId, text, format),
    fileLimits: SLACK_FILE_LIMITS,
    sendFile: (target, file) => outbound.sendFile(target, file),
    sendTyping: (target) => outbound.sendTyping(target),
    react: (target, messageId, emoji, options) => outbound.react(target, messageId, emoji, options),
  };
}
