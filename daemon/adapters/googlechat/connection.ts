/**
 * The app's HTTP endpoint (../webhook.ts: path, size limit, health answer,
 * requests under way awaited on close). A request without a bearer token is
 * refused before its body is read; every other is verified (verify.ts) before
 * anything in it is parsed, and answered 401 when the token is not Chat's for
 * this app. Several machines: every node serves the endpoint and keeps what
 * it verified in the bridge's inbox (receiver.ts); the owner takes the kept
 * events (`InboxIntake`) instead of listening itself.
 */
import type { Logger } from "pino";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import { jsonAnswer, listenWebhook, parseJsonBody, type PrefixRoute, textAnswer, type WebhookAnswer, type WebhookEndpoint } from "../webhook.js";
import { KeptEventIntake } from "../inbox-intake.js";
import type { GoogleChatChannelConfig } from "./config.js";
import { type CertSource, verifyChatRequest } from "./verify.js";

export interface EndpointDeps {
  config: Pick<GoogleChatChannelConfig, "http" | "audience_type" | "audience">;
  certs: CertSource;
  log: Logger;
  /** One verified event body; resolves with what to answer (`signal`: Chat closed the request). */
  handle(body: unknown, signal: AbortSignal): Promise<WebhookAnswer>;
  /** Other paths the endpoint serves (the reply files' links). */
  routes?: readonly PrefixRoute[];
}

export function listenForChat(deps: EndpointDeps): Promise<WebhookEndpoint> {
  const { config, log } = deps;
  return listenWebhook({
    ...config.http,
    // Chat's events are small (attachments come by reference): the endpoint's default 1 MiB.
    health: "google chat endpoint ready",
    name: "google chat events",
    log,
    routes: deps.routes ?? [],
    checkHeaders: (header) => (header("authorization") ? undefined : refuse(log, "no bearer token")),
    async handle(request) {
      const verdict = await verifyChatRequest(request.header("authorization"), {
        audienceType: config.audience_type,
        audience: config.audience,
        certs: deps.certs,
      });
      if (!verdict.ok) return refuse(log, verdict.reason);
      const body = parseJsonBody(request.body);
      if (body === undefined) return textAnswer(400, "body is not JSON");
      return deps.handle(body, request.signal);
    },
  });
}

function refuse(log: Logger, reason: string): WebhookAnswer {
  // Logged without the headers or body: a forged request says nothing worth keeping.
  log.warn({ reason }, "google chat request refused: its bearer token is not Chat's for this app");
  return jsonAnswer(401, { error: "unauthorized" });
}

/** The key a kept event is stored under: its message (or the tap), so a repeat is one row. */
export function inboxKeyOf(body: unknown): string | undefined {
  if (!body || typeof body !== "object") return undefined;
  const event = body as { type?: unknown; eventTime?: unknown; message?: { name?: unknown }; user?: { name?: unknown } };
  const name = typeof event.message?.name === "string" ? event.message.name : undefined;
  if (!name) return undefined;
  if (event.type === "CARD_CLICKED") return `tap:${name}:${String(event.user?.name)}:${String(event.eventTime)}`;
  return `message:${name}`;
}

/**
 * Several machines: the owner's intake of the events any node kept, through
 * the one intake of kept events (../inbox-intake.ts); a row goes once its
 * event was answered 200 (taken or deliberately refused).
 */
export interface InboxIntakeDeps {
  inbox: EventInbox;
  /** The handler without a sync window: its answer is the hand-over's own. */
  handle(body: unknown): Promise<WebhookAnswer>;
  clock: Clock;
  log: Logger;
  pollMs: number;
}

export class InboxIntake extends KeptEventIntake {
  constructor(deps: InboxIntakeDeps) {
    super({
      inbox: deps.inbox,
      clock: deps.clock,
      log: deps.log,
      pollMs: deps.pollMs,
      name: "google chat",
      take: async (_key, body) => (await deps.handle(body)).status === 200,
    });
  }
}
