/**
 * The HTTP Events API endpoint: Slack posts each event, signed. A request is
 * checked (path, size, signature over the raw bytes with a five-minute
 * window) before anything else is read from it; `url_verification` gets its
 * challenge back; an `event_callback` is answered 200 as soon as the core has
 * it (events.ts: within Slack's 3 seconds whatever the turn takes), or 500
 * when it could not be taken, so Slack retries it. Slack's retries carry the
 * same `event_id` and are answered once. A GET answers 200 while it listens,
 * for a load balancer's health check. Several machines: every node serves this
 * endpoint with a handler that keeps events in the bridge's inbox (receiver.ts).
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import { jsonAnswer, listenWebhook, parseJsonBody, textAnswer, type WebhookAnswer, type WebhookEndpoint, type WebhookRequest } from "../webhook.js";
import type { SlackChannelConfig } from "./config.js";
import type { EventVerdict } from "./events.js";
import { verifySlackRequest } from "./signature.js";

export interface EventsEndpointDeps {
  http: SlackChannelConfig["http"];
  signingSecret: string;
  clock: Clock;
  log: Logger;
  /** One verified `event_callback` (or other app event) body; resolves with what to answer. */
  handle(body: unknown, retry?: { num: number; reason: string }): Promise<EventVerdict>;
  /** One verified slash command (form fields); resolves with what to answer. */
  handleCommand(fields: Record<string, string>): Promise<EventVerdict>;
  /** One verified interaction payload (a tap on a button: `block_actions`); resolves with what to answer. */
  handleAction(payload: unknown): Promise<EventVerdict>;
}

export type EventsEndpoint = WebhookEndpoint;

export function listenForEvents(deps: EventsEndpointDeps): Promise<EventsEndpoint> {
  return listenWebhook({
    ...deps.http,
    // Slack's event payloads are small; a larger body is refused unread (the endpoint's default, 1 MiB).
    // A load balancer's health check (several machines: every node listens, docs/cluster.md).
    health: "slack events endpoint ready",
    name: "slack events",
    log: deps.log,
    handle: (request) => onEvent(deps, request),
  });
}

async function onEvent(deps: EventsEndpointDeps, request: WebhookRequest): Promise<WebhookAnswer> {
  const verdict = verifySlackRequest(
    { timestamp: request.header("x-slack-request-timestamp"), signature: request.header("x-slack-signature"), rawBody: request.body },
    deps.signingSecret,
    deps.clock.now(),
  );
  if (!verdict.ok) {
    // Logged without the headers or body: a forged request says nothing worth keeping.
    deps.log.warn({ reason: verdict.reason }, "slack events request refused: not signed by Slack with this app's signing secret");
    return textAnswer(401, verdict.reason);
  }
  // A slash command or an interaction comes form-encoded (their Request URLs may be this one): answered with an empty 200.
  if (request.header("content-type")?.startsWith("application/x-www-form-urlencoded")) {
    const fields = Object.fromEntries(new URLSearchParams(request.body.toString("utf8")));
    // An interaction is one field, `payload`, holding JSON (Slack's interactivity Request URL).
    if (fields.payload !== undefined && fields.command === undefined) {
      const payload = parseJsonBody(Buffer.from(fields.payload));
      if (payload === undefined) return textAnswer(400, "payload is not JSON");
      return textAnswer((await deps.handleAction(payload)) === "ack" ? 200 : 500);
    }
    const answer = await deps.handleCommand(fields);
    if (answer === "ack") return textAnswer(200);
    return textAnswer(200, "The bridge could not take the command just now: try again in a moment.");
  }
  const body = parseJsonBody(request.body);
  if (body === undefined) return textAnswer(400, "body is not JSON");
  if (isUrlVerification(body)) return jsonAnswer(200, { challenge: body.challenge });
  const retryNum = request.header("x-slack-retry-num");
  const retry = retryNum ? { num: Number(retryNum), reason: request.header("x-slack-retry-reason") ?? "" } : undefined;
  return textAnswer((await deps.handle(body, retry)) === "ack" ? 200 : 500);
}

function isUrlVerification(body: unknown): body is { type: "url_verification"; challenge: string } {
  return !!body && typeof body === "object" && "type" in body && body.type === "url_verification" && "challenge" in body && typeof body.challenge === "string";
}
