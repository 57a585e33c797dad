/**
 * Google Chat as an HTTP endpoint app, wired from its parts: credentials.ts
 * reads the service account key and makes its JWT client
 * (`google-auth-library`); connection.ts serves the endpoint, every request's
 * bearer token verified (verify.ts); events.ts translates (inbound.ts), hands
 * over (hand-over.ts, files from files.ts) and answers, with the reply itself
 * when it is ready soon enough (sync-replies.ts); outbound.ts posts and edits
 * through the Chat API (`@google-apps/chat`, REST). Access, commands and
 * retries are the core's.
 */
import type { ChatServiceClient } from "@google-apps/chat";
import type { AdapterDeps, ButtonCapability, ChatAdapter, ChatTarget, FileCapability, InboundSink, SendReceipt } from "../../vocabulary/adapter.js";
import { SendError } from "../../vocabulary/adapter.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import { fileLinksOf, purposeOf } from "../file-links/index.js";
import type { WebhookEndpoint } from "../webhook.js";
import { certsUrlOf, type GoogleChatChannelConfig } from "./config.js";
import { InboxIntake, listenForChat } from "./connection.js";
import { readFile } from "node:fs/promises";
import { serviceAccountClient } from "./credentials.js";
import { parseKey, readKeyText } from "./key.js";
import { handleChatEvent } from "./events.js";
import { ChatHandOver } from "./hand-over.js";
import { type ChatOutbound, chatClient, createChatOutbound, GOOGLE_CHAT_LIMITS, renderText, replyBody } from "./outbound.js";
import { SyncReplies } from "./sync-replies.js";
import { createCertCache } from "./verify.js";

export { GOOGLE_CHAT_LIMITS, markdownToChat } from "./outbound.js";

export interface GoogleChatAdapterOptions {
  /** Longest one file download may take, ms. Default 60 000. */
  attachmentTimeoutMs?: number;
  /** Told where the endpoint listens (its real port when 0 was configured). */
  onListening?(url: string): void;
  /** Several machines: how often the owner looks at the inbox besides being woken, ms. Default 2000. */
  inboxPollMs?: number;
}

export function createGoogleChatAdapter(config: GoogleChatChannelConfig, deps: AdapterDeps, options: GoogleChatAdapterOptions = {}): ChatAdapter {
  const log = deps.logger.child({ adapter: "googlechat", accountId: config.id });
  const secrets: string[] = config.serviceAccountKey ? [config.serviceAccountKey] : [];
  const redact = (text: string): string => redactSecrets(text, secrets);
  let client: ChatServiceClient | undefined;
  let outbound: ChatOutbound | undefined;
  let endpoint: WebhookEndpoint | undefined;
  let intake: InboxIntake | undefined;
  let stopped: Promise<void> | undefined;
  const replies = new SyncReplies(deps.clock, config.syncReplyMs);
  const certs = createCertCache(certsUrlOf(config), deps.clock);
  // Several machines: the files go to the state backend, whose links every node's endpoint serves (receiver.ts).
  const links = fileLinksOf({
    config: config.file_links,
    dataDir: deps.dataDir,
    platform: "googlechat",
    accountId: config.id,
    clock: deps.clock,
    log,
    ...(deps.fileStores ? { backend: deps.fileStores } : {}),
  });

  let headers: (url: string) => Promise<Headers> = () => Promise.reject(new Error("not started"));
  const handOver = new ChatHandOver({
    api: config.api,
    headers: (url) => headers(url),
    log,
    redact,
    attachmentTimeoutMs: options.attachmentTimeoutMs ?? 60_000,
  });
  const eventDeps = (sync: boolean) => ({
    accountId: config.id,
    now: () => deps.clock.now(),
    log,
    redact,
    take: handOver.take.bind(handOver),
    ...(sync ? { replies } : {}),
  });

  /** The Chat API once started; before, a rejection (never a throw: callers await). */
  const api = async (): Promise<ChatOutbound> => {
    if (!outbound) throw new SendError("the google chat adapter is not started", { permanent: false });
    return outbound;
  };

  async function start(sink: InboundSink): Promise<void> {
    const parsed = parseKey(await readKeyText(config, (path) => readFile(path, "utf8")));
    if (!parsed.ok) throw new Error(`google chat channel ${config.id}: ${parsed.reason}`);
    secrets.push(parsed.key.private_key);
    const auth = serviceAccountClient(parsed.key);
    headers = (url) => auth.getRequestHeaders(url);
    client = chatClient(config.api, auth);
    outbound = createChatOutbound({ client, log, redact });
    handOver.open(sink);
    await links?.open();
    if (deps.inbox) {
      intake = new InboxIntake({
        inbox: deps.inbox,
        handle: (body) => handleChatEvent(eventDeps(false), body),
        clock: deps.clock,
        log,
        pollMs: options.inboxPollMs ?? 2000,
      });
      intake.start();
      sink.status({ state: "connected", detail: "taking events from the bridge's inbox" });
      return;
    }
    endpoint = await listenForChat({
      config,
      certs,
      log,
      handle: (body, signal) => handleChatEvent(eventDeps(true), body, signal),
      routes: links ? [links.route] : [],
    });
    log.info({ url: `${endpoint.url}${config.http.path}` }, "google chat endpoint listening");
    options.onListening?.(endpoint.url);
    sink.status({ state: "connected" });
  }

  async function stop(): Promise<void> {
    stopped ??= (async () => {
      // Requests waiting for a reply are answered empty first, so closing does not wait out their window.
      replies.closeAll();
      await intake?.stop();
      await endpoint?.close();
      links?.close();
      await client?.close().catch(() => undefined);
    })();
    return stopped;
  }

  const send = (target: ChatTarget, text: string, format: "markdown" | "plain", final: boolean | undefined): Promise<SendReceipt> => {
    // An ordinary reply to a message whose request is still open is that request's answer.
    const inResponse = final === undefined ? replies.offer(target.replyToMessageId, replyBody(target, renderText(text, format))) : undefined;
    return inResponse ?? api().then((o) => o.send(target, text, format));
  };

  const buttons: ButtonCapability = {
    ask: (target, question) => api().then((o) => o.ask(target, question)),
    close: (_target, messageId, _question, outcome) => api().then((o) => o.close(messageId, outcome)),
  };

  return {
    platform: "googlechat",
    accountId: config.id,
    limits: { ...GOOGLE_CHAT_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? GOOGLE_CHAT_LIMITS.minEditIntervalMs },
    // Chat does not post an event again: a message the core could not take is answered 503 and the person told by Chat.
    redelivers: false,
    measure: (text, format) => renderText(text, format).length,
    start,
    stop,
    send: (target, text, { format, final }) => send(target, text, format, final),
    edits: { edit: (_target, messageId, text, { format }) => api().then((o) => o.edit(messageId, text, format)) },
    buttons,
    ...(links
      ? {
          files: {
            limits: links.limits,
            send: (target, file) =>
              api().then(async (o) => {
                const { url, expiresAt } = await links.publish(purposeOf(config.id, target.chatId, target.replyToMessageId, file.path), file);
                return o.sendFile(target, file, url, expiresAt);
              }),
          } satisfies FileCapability,
        }
      : {}),
    // Chat has no typing indicator for apps.
    sendTyping: async () => undefined,
  };
}
