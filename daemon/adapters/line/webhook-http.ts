/**
 * The webhook endpoint LINE posts events to, on the shared endpoint
 * (../webhook.ts): a POST without `X-Line-Signature` is refused before its
 * body is read; the signature is checked over the raw bytes with the channel
 * secret before anything is parsed (401 when it does not match); a verified
 * body is answered 200 once its events are journaled or refused, 500 when
 * one could not be taken (events.ts).
 */
import type { Logger } from "pino";
import { listenWebhook, parseJsonBody, type PrefixRoute, textAnswer, type WebhookAnswer, type WebhookEndpoint, type WebhookRequest } from "../webhook.js";
import type { LineChannelConfig } from "./config.js";
import type { EventVerdict } from "./events.js";
import { verifyLineSignature } from "./signature.js";

export interface LineWebhookDeps {
  http: LineChannelConfig["http"];
  channelSecret: string;
  log: Logger;
  handle(body: unknown): Promise<EventVerdict>;
  /** Other paths served (the reply files' links). */
  routes?: readonly PrefixRoute[];
}

export function listenForLine(deps: LineWebhookDeps): Promise<WebhookEndpoint> {
  return listenWebhook({
    ...deps.http,
    health: "line webhook endpoint ready",
    name: "line webhook",
    log: deps.log,
    routes: deps.routes ?? [],
    checkHeaders: (header) => (header("x-line-signature") ? undefined : refuse(deps.log, "missing signature")),
    handle: (request) => onWebhook(deps, request),
  });
}

/** Verifies one request and answers what LINE expects; exported for the several-machines receiver. */
export async function onWebhook(deps: Pick<LineWebhookDeps, "channelSecret" | "log" | "handle">, request: WebhookRequest): Promise<WebhookAnswer> {
  const verdict = verifyLineSignature(request.body, request.header("x-line-signature"), deps.channelSecret);
  if (!verdict.ok) return refuse(deps.log, verdict.reason);
  const body = parseJsonBody(request.body);
  if (body === undefined) return textAnswer(400, "body is not JSON");
  return textAnswer((await deps.handle(body)) === "ack" ? 200 : 500);
}

function refuse(log: Logger, reason: string): WebhookAnswer {
  // Logged without headers or body: a forged request says nothing worth keeping.
  log.warn({ reason }, "line webhook request refused: not signed by LINE with this channel's secret");
  return textAnswer(401, reason);
}
