/**
 * Receiving Feishu's events, in the channel's mode: "websocket", the SDK's
 * long connection (`WSClient`: it asks `/callback/ws/endpoint` for a URL
 * with the App ID and Secret, then speaks protobuf frames; each event is
 * answered on the connection once its handler resolves, and a handler that
 * throws is answered 500 so Feishu sends it again; the SDK reconnects on its
 * own), or "http", the endpoint Feishu posts to (events-http.ts), or on
 * several machines the events any node kept (inbox-intake.ts). Before either,
 * the bot's open id (`bot/v3/info`), which tells a mention of the bot.
 */
import type { Logger } from "pino";
import * as lark from "@larksuiteoapi/node-sdk";
import { z } from "zod";
import type { Clock } from "../../../shared/clock.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import type { WebhookEndpoint } from "../webhook.js";
import { apiBaseOf, type FeishuChannelConfig } from "./config.js";
import type { EventVerdict, FeishuEventHandler, FeishuEventIn } from "./events.js";
import { listenForEvents } from "./events-http.js";
import type { FeishuHandOver } from "./hand-over.js";
import { InboxIntake } from "./inbox-intake.js";
import { failureFacts } from "./outbound.js";
import { sdkLogger } from "./sdk.js";

const BotInfo = z.looseObject({ code: z.literal(0), bot: z.looseObject({ open_id: z.string().min(1), app_name: z.string().optional() }) });

export interface ConnectionDeps {
  config: FeishuChannelConfig;
  client: lark.Client;
  events: FeishuEventHandler;
  handOver: FeishuHandOver;
  clock: Clock;
  log: Logger;
  redact(text: string): string;
  inbox?: EventInbox;
  /** Told where the HTTP endpoint listens (its real port when 0 was configured). */
  onListening?(url: string): void;
  /** Several machines: how often the kept events are read when no node said it kept one. Default 2000. */
  inboxPollMs?: number;
}

export class FeishuConnection {
  readonly #deps: ConnectionDeps;
  #bot: { openId: string; name: string } | undefined;
  #endpoint: WebhookEndpoint | null = null;
  #ws: lark.WSClient | null = null;
  #intake: InboxIntake | null = null;
  #stopped = false;

  constructor(deps: ConnectionDeps) {
    this.#deps = deps;
  }

  botOpenId(): string | undefined {
    return this.#bot?.openId;
  }

  async start(): Promise<void> {
    const { config, log } = this.#deps;
    this.#stopped = false;
    this.#deps.handOver.status({ state: "starting" });
    this.#bot = await this.#identify();
    log.info({ bot: this.#bot.name, mode: config.mode }, "feishu bot identified");
    if (config.mode === "http") {
      if (this.#deps.inbox) {
        this.#intake = new InboxIntake({
          inbox: this.#deps.inbox,
          events: this.#deps.events,
          clock: this.#deps.clock,
          log,
          pollMs: this.#deps.inboxPollMs ?? 2000,
        });
        this.#intake.start();
      } else {
        this.#endpoint = await listenForEvents({ config, log, handle: (input) => this.#deps.events.handle(input) });
        log.info({ url: `${this.#endpoint.url}${config.http.path}` }, "feishu events endpoint listening");
        this.#deps.onListening?.(this.#endpoint.url);
      }
      this.#deps.handOver.status({ state: "connected" });
      return;
    }
    await this.#connectWebSocket();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#ws?.close({ force: true });
    this.#ws = null;
    await this.#intake?.stop();
    this.#intake = null;
    await this.#endpoint?.close();
    this.#endpoint = null;
    this.#deps.handOver.status({ state: "stopped" });
  }

  async #identify(): Promise<{ openId: string; name: string }> {
    let answer: unknown;
    try {
      answer = await this.#deps.client.request({ method: "GET", url: "/open-apis/bot/v3/info" });
    } catch (error) {
      const facts = failureFacts(error);
      const said =
        facts?.code !== undefined
          ? `code ${facts.code}${facts.msg ? ` ${this.#deps.redact(facts.msg)}` : ""}`
          : this.#deps.redact(error instanceof Error ? error.message : String(error));
      // The token request (App ID and Secret) is what fails first when they are wrong.
      throw new Error(`Feishu refused the app's credentials (${said}): check app_id, app_secret and domain`);
    }
    const info = BotInfo.safeParse(answer);
    if (!info.success) throw new Error("feishu bot/v3/info did not name the bot (is the app's bot capability on?)");
    return { openId: info.data.bot.open_id, name: info.data.bot.app_name ?? "bot" };
  }

  #connectWebSocket(): Promise<void> {
    const { config, log, redact, handOver } = this.#deps;
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      const ws = new lark.WSClient({
        appId: config.app_id,
        appSecret: config.app_secret,
        domain: apiBaseOf(config),
        logger: sdkLogger(log, redact),
        loggerLevel: lark.LoggerLevel.debug,
        onReady: () => {
          ready = true;
          handOver.status({ state: "connected" });
          resolve();
        },
        onReconnecting: () => handOver.status({ state: "reconnecting", reason: "closed" }),
        onReconnected: () => handOver.status({ state: "connected" }),
        onError: (error: Error) => {
          handOver.status({ state: "failed", detail: redact(error.message) });
          if (!ready) reject(new Error(`feishu long connection failed: ${redact(error.message)}`));
        },
      });
      this.#ws = ws;
      const dispatcher = new lark.EventDispatcher({ logger: sdkLogger(log, redact), loggerLevel: lark.LoggerLevel.debug });
      // Over the long connection the SDK hands each event flattened: the v2 header's fields beside the event's.
      const onEvent = async (data: unknown): Promise<unknown> => {
        const input = flattenedInput(data);
        if (!input) return {};
        const verdict: EventVerdict = await this.#deps.events.handle(input);
        // A throw is answered 500 on the connection: Feishu sends the event again.
        if (verdict.kind === "retry") throw new Error("not taken now");
        return verdict.toast ? { toast: verdict.toast } : {};
      };
      dispatcher.register({ "im.message.receive_v1": onEvent, "card.action.trigger": onEvent });
      void ws.start({ eventDispatcher: dispatcher }).catch((error: unknown) => reject(error instanceof Error ? error : new Error(String(error))));
    });
  }
}

const Flattened = z.looseObject({ event_id: z.string().min(1), event_type: z.string() });

/** The SDK's flattened event (header fields beside the event's) as the handler's input. */
export function flattenedInput(data: unknown): FeishuEventIn | undefined {
  const parsed = Flattened.safeParse(data);
  return parsed.success ? { eventId: parsed.data.event_id, eventType: parsed.data.event_type, event: data } : undefined;
}
