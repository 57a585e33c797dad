/**
 * The Telegram adapter: grammY's `Api` (with `apiRoot`, so a local Bot API
 * server can stand in) behind the `ChatAdapter` interface. Wiring only:
 *
 * - updates in: connection.ts (start, reconnect, stop) drives polling.ts (long
 *   polls; the offset moves, and is persisted, only over updates the core
 *   accepted: offset-tracker.ts) or webhook.ts (a 2xx only once accepted);
 *   each update goes through hand-over.ts, which translates it
 *   (inbound.ts#translateMessage) and hands it to the core with its files (files.ts);
 * - replies: outbound.ts (Telegram HTML, plain text when refused);
 * - errors: errors.ts (`TelegramAdapterError`, the core's `SendError`).
 */
import { Api } from "grammy";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import type { TelegramChannelConfig } from "./config.js";
import { TelegramConnection } from "./connection.js";
import { createTelegramFetch, directJsonCalls } from "./fetch.js";
import { createHandover } from "./hand-over.js";
import { telegramButtons } from "./buttons.js";
import { createTelegramOutbound, TELEGRAM_FILE_LIMITS, TELEGRAM_LIMITS } from "./outbound.js";

export { TelegramAdapterError, type TelegramAdapterErrorInit } from "./errors.js";
export { telegramMarkdownToHtml, telegramVisibleLength } from "./markdown.js";
export { TELEGRAM_LIMITS } from "./outbound.js";

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
  /** Per attachment download, ms. Default 60 000 (60 s). */
  attachmentTimeoutMs?: number;
  /** Jitter for pauses. Default `cryptoRandom`. */
  random?: Random;
}

/** grammY's own default is 500 s; a long poll needs its timeout plus this much slack. */
const REQUEST_SLACK_SECONDS = 30;

export function createTelegramAdapter(config: TelegramChannelConfig, deps: AdapterDeps, options: TelegramAdapterOptions = {}): ChatAdapter {
  const log = deps.logger.child({ platform: "telegram", accountId: config.id });
  const scrub = (text: string) => redactSecrets(text, [config.token]);
  const apiRoot = config.apiRoot.replace(/\/+$/, "");
  const pollTimeoutSeconds = options.pollTimeoutSeconds ?? 25;
  // A request that hangs must not hang for grammY's default 500 s.
  // No retry layer here: a 429 surfaces with its retry_after, and the core's one retry policy waits it out.
  const timeoutSeconds = pollTimeoutSeconds + REQUEST_SLACK_SECONDS;
  const api = new Api(config.token, { apiRoot, timeoutSeconds, fetch: createTelegramFetch() });
  // JSON calls (all but uploads) skip grammY's per-call machinery: fetch.ts says why.
  api.config.use(directJsonCalls({ apiRoot, token: config.token, timeoutSeconds }));

  const handOver = createHandover({
    api,
    channel: { id: config.id, token: config.token, apiRoot },
    log,
    scrub,
    attachmentTimeoutMs: options.attachmentTimeoutMs ?? 60_000,
  });
  const connection = new TelegramConnection({
    channel: config,
    api,
    log,
    scrub,
    clock: deps.clock,
    random: options.random ?? cryptoRandom,
    state: deps.state,
    handOver,
    pollTimeoutSeconds,
    retryPauseMs: options.retryPauseMs ?? 1000,
  });
  const outbound = createTelegramOutbound({ api, log, scrub, replyNotifies: config.replyNotifies });

  return {
    platform: "telegram",
    accountId: config.id,
    limits: { ...TELEGRAM_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? TELEGRAM_LIMITS.minEditIntervalMs },
    // An update not confirmed by the next poll's offset (or a webhook answered non-2xx) comes again.
    redelivers: true,
    measure: outbound.measure,
    start: (sink) => connection.start(sink),
    stop: () => connection.stop(),
    send: outbound.send,
    edits: { edit: outbound.edit },
    sendTyping: outbound.sendTyping,
    files: { limits: TELEGRAM_FILE_LIMITS, send: outbound.sendFile },
    reactions: { react: outbound.react },
    buttons: telegramButtons({ api, scrub }),
  };
}
