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
import { jsonAnswer, listenWebhook, parseJsonBody, textAnswer, type WebhookAnswer, type WebhookEndpoint } from "../webhook.js";
import type { GoogleChatChannelConfig } from "./config.js";
import { type CertSource, verifyChatRequest } from "./verify.js";

export interface EndpointDeps {
  config: Pick<GoogleChatChannelConfig, "http" | "audience_type" | "audience">;
  certs: CertSource;
  log: Logger;
  /** One verified event body; resolves with what to answer (`signal`: Chat closed the request). */
  handle(body: unknown, signal: AbortSignal): Promise<WebhookAnswer>;
}

export function listenForChat(deps: EndpointDeps): Promise<WebhookEndpoint> {
  const { config, log } = deps;
  return listenWebhook({
    ...config.http,
    // Chat's events are small (attachments come by reference): the endpoint's default 1 MiB.
    health: "google chat endpoint ready",
    name: "google chat events",
    log,
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
 * Several machines: the owner's intake of the events any node kept. Each round
 * hands every kept event over and removes those answered 200 (taken or
 * deliberately refused), with a write fenced by the lease; an event whose
 * hand-over failed stays for the next round.
 */
export interface InboxIntakeDeps {
  inbox: EventInbox;
  /** The handler without a sync window: its answer is the hand-over's own. */
  handle(body: unknown): Promise<WebhookAnswer>;
  clock: Clock;
  log: Logger;
  pollMs: number;
}

export class InboxIntake {
  readonly #deps: InboxIntakeDeps;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  #unwatch: (() => void) | null = null;
  #timer: Timer | null = null;

  constructor(deps: InboxIntakeDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#unwatch = this.#deps.inbox.watch(() => this.kick());
    this.#poll();
  }

  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#round()
      .catch((error: unknown) =>
        this.#deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, "google chat inbox round failed; trying again"),
      )
      .finally(() => {
        this.#running = null;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unwatch?.();
    this.#timer?.cancel();
    await this.#running;
  }

  #poll(): void {
    if (this.#stopped) return;
    this.kick();
    this.#timer = this.#deps.clock.setTimeout(() => this.#poll(), this.#deps.pollMs);
  }

  async #round(): Promise<void> {
    const rows = await this.#deps.inbox.pending();
    if (rows.length === 0) return;
    const answers = await Promise.all(rows.map(async (row) => ({ key: row.key, answer: await this.#deps.handle(row.body) })));
    const taken = answers.filter((a) => a.answer.status === 200).map((a) => a.key);
    await this.#deps.inbox.remove(taken);
    if (taken.length < rows.length) this.#deps.log.info({ left: rows.length - taken.length }, "google chat inbox: events left for the next round");
  }
}
