/**
 * LINE through `@line/bot-sdk`, wired from its parts: connection.ts tries the
 * token and receives signed webhooks (webhook-http.ts on the shared
 * endpoint, or the inbox on several machines); events.ts answers each
 * `webhookEventId` once; inbound.ts translates; hand-over.ts hands over in
 * each chat's order with the content from files.ts; outbound.ts answers by
 * reply token while it lives and by push (with a retry key) after;
 * buttons.ts asks with quick replies. Access, commands and retries are the core's.
 */
import { messagingApi } from "@line/bot-sdk";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import { fileLinksOf } from "../file-links/index.js";
import { lineButtons, tapOf } from "./buttons.js";
import type { LineChannelConfig } from "./config.js";
import { LineConnection } from "./connection.js";
import { LineEventHandler } from "./events.js";
import { lineFiles as filesOut } from "./file-messages.js";
import { lineFiles } from "./files.js";
import { LineHandOver } from "./hand-over.js";
import { createLineOutbound, LINE_LIMITS, type SendCounts } from "./outbound.js";
import { renderLineText } from "./text.js";

export { LINE_LIMITS, REPLY_TOKEN_LIFE_MS, retryKeyOf } from "./outbound.js";

export interface LineAdapterOptions {
  /** Longest one content download may take, ms. Default 60 000. */
  attachmentTimeoutMs?: number;
  /** Told where the webhook endpoint listens (its real port when 0 was configured). */
  onListening?(url: string): void;
  /** Told of each reply or push sent. */
  onSent?(kind: keyof SendCounts): void;
}

export function createLineAdapter(config: LineChannelConfig, deps: AdapterDeps, options: LineAdapterOptions = {}): ChatAdapter & { sendCounts(): SendCounts } {
  const log = deps.logger.child({ adapter: "line", accountId: config.id });
  const secrets = [config.channel_access_token, config.channel_secret];
  const redact = (text: string): string => redactSecrets(text, secrets);
  const client = new messagingApi.MessagingApiClient({ channelAccessToken: config.channel_access_token, baseURL: config.api });
  const outbound = createLineOutbound({
    client,
    accountId: config.id,
    clock: deps.clock,
    log,
    redact,
    quotaWarning: config.quota_warning,
    onSent: (kind) => {
      deps.countSend?.(kind);
      options.onSent?.(kind);
    },
  });
  const handOver = new LineHandOver(
    lineFiles({
      log,
      redact,
      channelAccessToken: config.channel_access_token,
      dataApi: config.data_api,
      attachmentTimeoutMs: options.attachmentTimeoutMs ?? 60_000,
    }),
  );
  const events = new LineEventHandler({
    accountId: config.id,
    log,
    redact,
    take: (message, files) => handOver.take(message, files),
    remember: (chatId, messageId, tokens) => outbound.remember(chatId, messageId, tokens),
    postback: async (postback, eventId) => {
      const tap = tapOf(postback, eventId, config.id);
      if (!tap) return;
      outbound.remember(tap.chatId, tap.messageId, { replyToken: postback.replyToken, quoteToken: undefined });
      await handOver.take(tap, []);
    },
  });
  // Several machines: the files go to the state backend, whose links every node's endpoint serves (receiver.ts).
  const links = fileLinksOf({
    config: config.file_links,
    dataDir: deps.dataDir,
    platform: "line",
    accountId: config.id,
    clock: deps.clock,
    log,
    ...(deps.fileStores ? { backend: deps.fileStores } : {}),
  });
  const connection = new LineConnection({
    config,
    client,
    events,
    handOver,
    clock: deps.clock,
    log,
    redact,
    ...(options.onListening ? { onListening: options.onListening } : {}),
    ...(deps.inbox ? { inbox: deps.inbox } : {}),
    routes: links ? [links.route] : [],
  });
  let stopped: Promise<void> | undefined;

  return {
    platform: "line",
    accountId: config.id,
    limits: LINE_LIMITS,
    redelivers: config.webhook_redelivery,
    measure: (text, format) => renderLineText(text, format).length,
    async start(sink) {
      await links?.open();
      await connection.start(sink);
    },
    stop: () => (stopped ??= connection.stop().finally(() => links?.close())),
    send: (target, text, { format }) => outbound.send(target, text, format),
    sendTyping: (target) => outbound.sendTyping(target),
    buttons: lineButtons(outbound),
    ...(links ? { files: filesOut(links, outbound, config.id) } : {}),
    sendCounts: () => ({ ...outbound.counts }),
  };
}
