/**
 * The messaging endpoint (the shared webhook, ../webhook.ts): the Bot
 * Connector posts each activity. A request without a Bearer token is refused
 * before its body is read; then its token is validated (jwt.ts) against the
 * activity it carries, and an activity from another tenant is refused for a
 * single-tenant bot. A verified activity's conversation reference is kept,
 * then a message is handed to the core (in each chat's order) and answered
 * 200 once the core has journaled or refused it, 500 when it could not be
 * taken. The anonymous mode (a local tool) checks no token.
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { AcceptOutcome, InboundSink } from "../../vocabulary/adapter.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import { jsonAnswer, listenWebhook, textAnswer, type WebhookAnswer, type WebhookEndpoint, type WebhookRequest } from "../webhook.js";
import { ANONYMOUS_MODE, type TeamsChannelConfig } from "./config.js";
import { type ActivityVerdict, TeamsInboxIntake } from "./inbox-intake.js";
import type { ConversationRefs } from "./conversation-refs.js";
import { FileConsentValue } from "./file-consent.js";
import { TeamsHandOver } from "./hand-over.js";
import { referenceOf, type TeamsActivity, translateMessage } from "./inbound.js";
import type { OpenIdKeys } from "./jwt.js";
import type { TokenSource } from "./token.js";
import { earlyRefusal, verifyRequest } from "./verify.js";

export interface TeamsConnectionDeps {
  config: TeamsChannelConfig;
  keys: OpenIdKeys;
  refs: ConversationRefs;
  tokens: TokenSource | undefined;
  clock: Clock;
  log: Logger;
  attachmentTimeoutMs: number;
  onListening?(url: string): void;
  /** A person answered a file consent card (an invoke, verified like any activity). */
  onFileConsent?(value: FileConsentValue): Promise<void>;
  /** Several machines: the activities every node's receiver kept (receiver.ts); the owner then serves no endpoint of its own. */
  inbox?: EventInbox;
}

export class TeamsConnection {
  readonly #deps: TeamsConnectionDeps;
  #sink: InboundSink | null = null;
  #endpoint: WebhookEndpoint | null = null;
  #intake: TeamsInboxIntake | null = null;
  #stopping = false;
  readonly #handOver: TeamsHandOver;

  constructor(deps: TeamsConnectionDeps) {
    this.#deps = deps;
    this.#handOver = new TeamsHandOver({ log: deps.log, tokens: deps.tokens, attachmentTimeoutMs: deps.attachmentTimeoutMs });
  }

  async start(sink: InboundSink): Promise<void> {
    this.#sink = sink;
    this.#stopping = false;
    const { config, log } = this.#deps;
    sink.status({ state: "starting" });
    if (config.auth === ANONYMOUS_MODE) log.warn("teams endpoint in the anonymous mode: no token is checked (for a local tool only)");
    if (this.#deps.inbox) {
      this.#intake = new TeamsInboxIntake({ inbox: this.#deps.inbox, handle: (a) => this.handle(a), clock: this.#deps.clock, log, pollMs: 2_000 });
      this.#intake.start();
      log.info("teams activities taken from the bridge's inbox (every node's endpoint keeps them)");
      sink.status({ state: "connected" });
      return;
    }
    this.#endpoint = await listenWebhook({
      ...config.http,
      health: "teams messaging endpoint ready",
      name: "teams activities",
      log,
      checkHeaders: (header) => earlyRefusal(config, header),
      handle: (request) => this.#onRequest(request),
    });
    const url = `${this.#endpoint.url}${config.http.path}`;
    log.info({ url }, "teams messaging endpoint listening");
    this.#deps.onListening?.(url);
    sink.status({ state: "connected" });
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    const endpoint = this.#endpoint;
    this.#endpoint = null;
    await endpoint?.close();
    await this.#intake?.stop();
    this.#intake = null;
    await this.#handOver.idle();
    this.#sink?.status({ state: "stopped" });
  }

  async #onRequest(request: WebhookRequest): Promise<WebhookAnswer> {
    if (this.#stopping) return textAnswer(503, "stopping");
    const verified = await verifyRequest(this.#deps, request);
    if (!verified.ok) return verified.answer;
    return this.#answer(verified.activity, await this.handle(verified.activity));
  }

  #answer(activity: TeamsActivity, verdict: ActivityVerdict): WebhookAnswer {
    if (verdict === "retry") return textAnswer(500);
    // An invoke expects a body naming its status (the card's tap is shown as taken).
    return activity.type === "invoke" ? jsonAnswer(200, { status: 200 }) : textAnswer(200);
  }

  async #fileConsent(activity: TeamsActivity): Promise<ActivityVerdict> {
    const value = FileConsentValue.safeParse(activity.value);
    if (!value.success) return "ack";
    try {
      await this.#deps.onFileConsent?.(value.data);
    } catch (error) {
      this.#deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, "teams file not delivered after the person's consent");
    }
    return "ack";
  }

  /** One verified activity to the core (several machines: the owner's intake calls this too). */
  async handle(activity: TeamsActivity): Promise<ActivityVerdict> {
    const sink = this.#sink;
    if (!sink) return "retry";
    const { config, log } = this.#deps;
    // Where replies go, kept before the core has the message (several machines: the owner keeps it from the inbox row).
    const ref = referenceOf(activity);
    if (ref) await this.#deps.refs.remember(ref);
    if (activity.type === "invoke" && activity.name === "fileConsent/invoke") return this.#fileConsent(activity);
    const translated = translateMessage(activity, config.id);
    if ("skip" in translated) {
      log.debug({ reason: translated.skip }, "teams activity not handed over");
      return "ack";
    }
    const { message, files } = translated;
    try {
      const outcome: AcceptOutcome | undefined = await this.#handOver.take(sink, message, files);
      return outcome === undefined || outcome.acknowledge ? "ack" : "retry";
    } catch (error) {
      log.warn({ err: error instanceof Error ? error.message : String(error) }, "teams activity not taken: the connector may send it again");
      return "retry";
    }
  }
}
