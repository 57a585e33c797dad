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
import { jsonAnswer, listenWebhook, parseJsonBody, textAnswer, type WebhookAnswer, type WebhookEndpoint, type WebhookRequest } from "../webhook.js";
import { ANONYMOUS_MODE, type TeamsChannelConfig } from "./config.js";
import type { ConversationRefs } from "./conversation-refs.js";
import { TeamsHandOver } from "./hand-over.js";
import { referenceOf, TeamsActivity, tenantOf, translateMessage } from "./inbound.js";
import { type OpenIdKeys, verifyBotToken } from "./jwt.js";
import type { TokenSource } from "./token.js";

export interface TeamsConnectionDeps {
  config: TeamsChannelConfig;
  keys: OpenIdKeys;
  refs: ConversationRefs;
  tokens: TokenSource | undefined;
  clock: Clock;
  log: Logger;
  attachmentTimeoutMs: number;
  onListening?(url: string): void;
}

/** What became of one activity: answered to the connector as 200, or 500 (it may come again). */
export type ActivityVerdict = "ack" | "retry";

export class TeamsConnection {
  readonly #deps: TeamsConnectionDeps;
  #sink: InboundSink | null = null;
  #endpoint: WebhookEndpoint | null = null;
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
    this.#endpoint = await listenWebhook({
      ...config.http,
      health: "teams messaging endpoint ready",
      name: "teams activities",
      log,
      checkHeaders: (header) => (config.auth === "jwt" && !/^Bearer \S+$/.test(header("authorization") ?? "") ? textAnswer(401, "no Bearer token") : undefined),
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
    await this.#handOver.idle();
    this.#sink?.status({ state: "stopped" });
  }

  async #onRequest(request: WebhookRequest): Promise<WebhookAnswer> {
    if (this.#stopping) return textAnswer(503, "stopping");
    const parsed = TeamsActivity.safeParse(parseJsonBody(request.body));
    if (!parsed.success) return textAnswer(400, "not an activity");
    const activity = parsed.data;
    const { config, log } = this.#deps;
    if (config.auth === "jwt") {
      const verdict = await verifyBotToken(
        { authorization: request.header("authorization"), serviceUrl: activity.serviceUrl, channelId: activity.channelId },
        this.#deps.keys,
        { appId: config.app_id, tenantId: config.tenant_id, nowMs: this.#deps.clock.now() },
      );
      if (!verdict.ok) {
        // Logged without the token or the activity: a forged request says nothing worth keeping.
        log.warn({ reason: verdict.reason }, "teams request refused: not a valid Bot Framework token for this bot");
        return textAnswer(401, verdict.reason);
      }
    }
    if (config.tenant_id && tenantOf(activity) !== config.tenant_id) {
      log.warn({ tenant: tenantOf(activity) ?? null }, "teams activity refused: from another tenant than the configured tenant_id");
      return textAnswer(403, "wrong tenant");
    }
    const ref = referenceOf(activity);
    if (ref) await this.#deps.refs.remember(ref);
    return this.#answer(activity, await this.handle(activity));
  }

  #answer(activity: TeamsActivity, verdict: ActivityVerdict): WebhookAnswer {
    if (verdict === "retry") return textAnswer(500);
    // An invoke expects a body naming its status (the card's tap is shown as taken).
    return activity.type === "invoke" ? jsonAnswer(200, { status: 200 }) : textAnswer(200);
  }

  /** One verified activity to the core (several machines: the owner's intake calls this too). */
  async handle(activity: TeamsActivity): Promise<ActivityVerdict> {
    const sink = this.#sink;
    if (!sink) return "retry";
    const { config, log } = this.#deps;
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
