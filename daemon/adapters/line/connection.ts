/**
 * The LINE channel's link, start to stop: the token tried once (bot info; a
 * refused token fails the start, LINE not answering only delays nothing since
 * mentions carry `isSelf`), then the one way events come in: the webhook
 * endpoint (webhook-http.ts), or on several machines the bridge's inbox that
 * every node's endpoint fills (receiver.ts, inbox-intake.ts).
 */
import { HTTPFetchError, type messagingApi } from "@line/bot-sdk";
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { AdapterStatusEvent, EventInbox, InboundSink } from "../../vocabulary/adapter.js";
import type { PrefixRoute, WebhookEndpoint } from "../webhook.js";
import type { LineChannelConfig } from "./config.js";
import type { LineEventHandler } from "./events.js";
import type { LineHandOver } from "./hand-over.js";
import { LineInboxIntake } from "./inbox-intake.js";
import { listenForLine } from "./webhook-http.js";

export interface LineConnectionDeps {
  config: LineChannelConfig;
  client: messagingApi.MessagingApiClient;
  events: LineEventHandler;
  handOver: LineHandOver;
  clock: Clock;
  log: Logger;
  redact(text: string): string;
  onListening?(url: string): void;
  inbox?: EventInbox;
  /** Other paths the endpoint serves (the reply files' links). */
  routes?: readonly PrefixRoute[];
}

const INBOX_POLL_MS = 1000;

export class LineConnection {
  readonly #deps: LineConnectionDeps;
  #endpoint: WebhookEndpoint | null = null;
  #intake: LineInboxIntake | null = null;

  constructor(deps: LineConnectionDeps) {
    this.#deps = deps;
  }

  async start(sink: InboundSink): Promise<void> {
    const { config, log, inbox } = this.#deps;
    this.#deps.handOver.open(sink);
    this.#status({ state: "starting" });
    await this.#identify();
    if (inbox) {
      this.#intake = new LineInboxIntake({ inbox, events: this.#deps.events, clock: this.#deps.clock, log, pollMs: INBOX_POLL_MS });
      this.#intake.start();
      log.info("line events taken from the bridge's inbox (every node's endpoint keeps them)");
    } else {
      this.#endpoint = await listenForLine({
        http: config.http,
        channelSecret: config.channel_secret,
        log,
        handle: (body) => this.#deps.events.handle(body),
        routes: this.#deps.routes ?? [],
      });
      log.info({ url: `${this.#endpoint.url}${config.http.path}` }, "line webhook endpoint listening");
      this.#deps.onListening?.(this.#endpoint.url);
    }
    this.#status({ state: "connected" });
  }

  async stop(): Promise<void> {
    const endpoint = this.#endpoint;
    const intake = this.#intake;
    this.#endpoint = null;
    this.#intake = null;
    await Promise.allSettled([endpoint?.close(), intake?.stop()]);
    await this.#deps.handOver.idle();
  }

  async #identify(): Promise<void> {
    try {
      const me = await this.#deps.client.getBotInfo();
      this.#deps.log.info({ botUser: me.userId, name: me.displayName }, "line bot identified");
    } catch (error) {
      if (error instanceof HTTPFetchError && error.status === 401) {
        throw new Error("LINE refused the channel access token (401): check the channel's channel_access_token");
      }
      this.#deps.log.warn({ err: this.#deps.redact(error instanceof Error ? error.message : String(error)) }, "line bot info not read; going on");
    }
  }

  #status(event: AdapterStatusEvent): void {
    this.#deps.handOver.status(event.detail === undefined ? event : { ...event, detail: this.#deps.redact(event.detail) });
  }
}
