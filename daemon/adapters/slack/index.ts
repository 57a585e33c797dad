/**
 * Slack through `@slack/web-api` and `@slack/socket-mode`, wired from its
 * parts: connection.ts identifies the bot and receives events over the HTTP
 * Events API (events-http.ts, signed) or Socket Mode (socket-mode.ts);
 * events.ts answers Slack's retries once and decides the acknowledgement;
 * inbound.ts translates; hand-over.ts hands over in each chat's order, with
 * the files from files.ts; outbound.ts sends replies, edits, files,
 * reactions and the "is thinking" status. Access, commands and retries are
 * the core's.
 */
import { WebClient } from "@slack/web-api";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import type { SlackChannelConfig } from "./config.js";
import { slackButtons } from "./buttons.js";
import { placeKeyOf } from "./inbound.js";
import { SlackConnection } from "./connection.js";
import { SlackHandOver } from "./hand-over.js";
import { createSlackOutbound, renderText, SLACK_FILE_LIMITS, SLACK_LIMITS } from "./outbound.js";
import { defaultSocketTuning, slackLogger, type SocketTuning } from "./socket-mode.js";
import { ActiveThreads } from "./threads.js";

export { markdownToMrkdwn } from "./mrkdwn.js";
export { SLACK_LIMITS, SlackAdapterError } from "./outbound.js";

export interface SlackAdapterOptions extends Partial<SocketTuning> {
  /** Jitter for reconnect backoff. Default `cryptoRandom`. */
  random?: Random;
  /** Longest one file download may take, ms. Default 60 000. */
  attachmentTimeoutMs?: number;
  /** Told where the Events API endpoint listens (its real port when 0 was configured). */
  onListening?(url: string): void;
}

export function createSlackAdapter(config: SlackChannelConfig, deps: AdapterDeps, options: SlackAdapterOptions = {}): ChatAdapter {
  const log = deps.logger.child({ adapter: "slack", accountId: config.id });
  const secrets = [config.botToken, config.appToken, config.signingSecret].filter((s): s is string => !!s);
  const redact = (text: string): string => redactSecrets(text, secrets);
  const { random = cryptoRandom, attachmentTimeoutMs = 60_000, onListening, ...tuningOverrides } = options;
  const tuning: SocketTuning = { ...defaultSocketTuning, ...Object.fromEntries(Object.entries(tuningOverrides).filter(([, v]) => v !== undefined)) };

  // No retries and no rate-limit waits inside the client: the core's one retry policy owns those.
  const client = new WebClient(config.botToken, {
    slackApiUrl: `${config.api}/`,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    // A call Slack never answers must not hold a reply (or the start) for ever: it fails, and the core retries.
    timeout: 60_000,
    logger: slackLogger(log, redact),
  });
  const outbound = createSlackOutbound({ client, log, redact, nativeStreaming: config.nativeStreaming });
  const threads = new ActiveThreads(deps.state);
  const handOver = new SlackHandOver({
    log,
    redact,
    botToken: config.botToken,
    attachmentTimeoutMs,
    // A channel thread the bot took a message in: a follow-up there needs no new mention.
    onAccepted: (message) => (message.chatType === "group" ? threads.add(placeKeyOf(message)) : undefined),
  });
  const connection = new SlackConnection({
    config,
    client,
    handOver,
    threads,
    clock: deps.clock,
    random,
    log,
    redact,
    tuning,
    ...(onListening ? { onListening } : {}),
    ...(deps.inbox ? { inbox: deps.inbox } : {}),
  });

  return {
    platform: "slack",
    accountId: config.id,
    limits: { ...SLACK_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? SLACK_LIMITS.minEditIntervalMs },
    // Slack retries only what is not acknowledged, a few times over minutes: every message is journaled or refused with a notice.
    redelivers: false,
    // Slack counts the text it is sent: the mrkdwn, escapes included.
    measure: (text, format) => renderText(text, format).length,
    start: (sink) => connection.start(sink),
    stop: () => connection.stop(),
    send: (target, text, { format, final }) => outbound.send(target, text, format, final),
    edits: {
      edit: (target, messageId, text, { format, final }) => outbound.edit(target, messageId, text, format, final),
      // Native streams are ended once a streamed reply is complete: the last edit, marked final.
      end: (target, messageId, text) => outbound.edit(target, messageId, text, "markdown", true),
      // An ordinary message (a DM, a workspace without streams) has nothing to end: no call, no wait.
      mayBeOpen: (messageId) => outbound.mayBeStream(messageId),
    },
    files: { limits: SLACK_FILE_LIMITS, send: (target, file) => outbound.sendFile(target, file) },
    sendTyping: (target) => outbound.sendTyping(target),
    reactions: { react: (target, messageId, emoji, options) => outbound.react(target, messageId, emoji, options) },
    buttons: slackButtons({ client, redact }),
  };
}
