/**
 * Feishu/Lark through `@larksuiteoapi/node-sdk`, wired from its parts:
 * connection.ts identifies the bot and receives events over the long
 * connection or the HTTP endpoint (events-http.ts, encrypted and signed);
 * events.ts answers redeliveries once and decides the answer to Feishu;
 * inbound.ts translates; hand-over.ts hands over in each chat's order, with
 * the files from files.ts; outbound.ts sends cards, updates them, sends files
 * and reactions. Access, commands and retries are the core's.
 */
import * as lark from "@larksuiteoapi/node-sdk";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import { CardStreams } from "./card-streams.js";
import { apiBaseOf, type FeishuChannelConfig } from "./config.js";
import { FeishuConnection } from "./connection.js";
import { FeishuEventHandler } from "./events.js";
import { FeishuHandOver } from "./hand-over.js";
import { createFeishuOutbound, FEISHU_FILE_LIMITS, FEISHU_LIMITS, measureCardText, questionCard, textCard } from "./outbound.js";
import { clockCache, sdkLogger } from "./sdk.js";

export { FEISHU_LIMITS, FeishuAdapterError } from "./outbound.js";

export interface FeishuAdapterOptions {
  /** Longest one file download may take, ms. Default 60 000. */
  attachmentTimeoutMs?: number;
  /** Told where the HTTP endpoint listens (its real port when 0 was configured). */
  onListening?(url: string): void;
}

export function createFeishuAdapter(config: FeishuChannelConfig, deps: AdapterDeps, options: FeishuAdapterOptions = {}): ChatAdapter {
  const log = deps.logger.child({ adapter: "feishu", accountId: config.id });
  const secrets = [config.app_secret, config.encrypt_key, config.verification_token].filter((s): s is string => !!s);
  const redact = (text: string): string => redactSecrets(text, secrets);
  const cache = clockCache(deps.clock);
  // The SDK's shared HTTP client has no timeout: a call Feishu never answers would hold a reply (or the start)
  // for ever. It fails after a minute instead, and the core retries. (Calls that set their own keep theirs.)
  if (!lark.defaultHttpInstance.defaults.timeout) lark.defaultHttpInstance.defaults.timeout = 60_000;
  const client = new lark.Client({
    appId: config.app_id,
    appSecret: config.app_secret,
    appType: lark.AppType.SelfBuild,
    domain: apiBaseOf(config),
    cache,
    logger: sdkLogger(log, redact),
    loggerLevel: lark.LoggerLevel.warn,
  });
  const outbound = createFeishuOutbound({ client, log, redact, forgetToken: async () => cache.clear() });
  const streams = new CardStreams({ client, call: outbound.call, clock: deps.clock, log, enabled: config.cardStreaming });
  const handOver = new FeishuHandOver({ client, log, redact, attachmentTimeoutMs: options.attachmentTimeoutMs ?? 60_000 });
  let connection: FeishuConnection | undefined;
  const events = new FeishuEventHandler({
    accountId: config.id,
    botOpenId: () => connection?.botOpenId(),
    clock: deps.clock,
    log,
    redact,
    take: (message, files) => handOver.take(message, files),
    onThread: (threadId, root) => outbound.rememberThread(threadId, root),
  });
  connection = new FeishuConnection({
    config,
    client,
    events,
    handOver,
    clock: deps.clock,
    log,
    redact,
    ...(deps.inbox ? { inbox: deps.inbox } : {}),
    ...(options.onListening ? { onListening: options.onListening } : {}),
  });
  const conn = connection;

  return {
    platform: "feishu",
    accountId: config.id,
    limits: { ...FEISHU_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? FEISHU_LIMITS.minEditIntervalMs },
    // Feishu sends an unanswered event again a few times over hours, not for ever: every message is journaled or refused with a notice.
    redelivers: false,
    measure: (text) => measureCardText(text),
    async start(sink) {
      handOver.open(sink);
      await conn.start();
    },
    async stop() {
      await handOver.close();
      await conn.stop();
    },
    async send(target, text, { format, final }) {
      // A streamed reply's first text (markdown): a card entity that streams, where the app may.
      if (final === false && format === "markdown") {
        const streamed = await streams.start(text, (content) => outbound.send(target, { msgType: "interactive", content }));
        if (streamed) return streamed;
      }
      return outbound.sendText(target, text, format);
    },
    edits: {
      async edit(_target, messageId, text, { format, final }) {
        if (format === "markdown" && (await streams.update(messageId, text, final === true))) return;
        await outbound.edit(messageId, textCard(text, format));
      },
      // A card still streaming is closed with its whole text (streaming mode off).
      end: async (_target, messageId, text) => void (await streams.update(messageId, text, true)),
      mayBeOpen: (messageId) => streams.mayBeOpen(messageId),
    },
    files: { limits: FEISHU_FILE_LIMITS, send: (target, file) => outbound.sendFile(target, file) },
    reactions: { react: (_target, messageId, emoji, options) => outbound.react(messageId, emoji, options) },
    buttons: {
      ask: (target, question) => outbound.send(target, { msgType: "interactive", content: questionCard(target, question) }),
      // The whole card is replaced by the outcome, without its buttons.
      close: (_target, messageId, _question, outcome) => outbound.edit(messageId, textCard(outcome, "plain")),
    },
    // Feishu shows bots no typing indicator.
    sendTyping: async () => undefined,
  };
}
