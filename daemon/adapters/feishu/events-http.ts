/**
 * Events over HTTP (mode "http"): Feishu posts each event and card callback
 * to the app's Request URL, through the shared endpoint (../webhook.ts).
 * What Feishu documents ("Receive events", "Configure the request URL"):
 * - with an Encrypt Key, the body is `{"encrypt": ...}` (crypto.ts) and every
 *   event is signed (`X-Lark-Signature`); a plain body, one that does not
 *   decrypt, or a bad signature is refused 401 and changes nothing;
 * - the URL verification (`type: "url_verification"`, encrypted too when a
 *   key is set, never signed) is answered `{"challenge": ...}` when its
 *   `token` is the Verification Token;
 * - every v2 event carries the Verification Token in `header.token`: one
 *   that does not match is refused (the only check when no key is set);
 * - an event is answered 200 once the core has it (events.ts), 500 when it
 *   could not be taken, so Feishu delivers it again; a card callback's 200
 *   may carry a toast.
 * Several machines: every node serves this endpoint with a handler that keeps
 * events in the bridge's inbox (receiver.ts).
 */
import type { Logger } from "pino";
import { jsonAnswer, listenWebhook, parseJsonBody, textAnswer, type WebhookAnswer, type WebhookEndpoint, type WebhookRequest } from "../webhook.js";
import type { FeishuChannelConfig } from "./config.js";
import { decryptFeishuEvent, verifyFeishuSignature } from "./crypto.js";
import type { EventVerdict, FeishuEventIn } from "./events.js";
import { FeishuEnvelope } from "./inbound.js";

export type OpenedRequest =
  | { kind: "challenge"; challenge: string }
  | { kind: "event"; input: FeishuEventIn }
  | { kind: "ignore"; why: string }
  | { kind: "refused"; status: number; reason: string };

type Secrets = Pick<FeishuChannelConfig, "encrypt_key" | "verification_token">;

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** Verifies and opens one posted request: what it is, or why it is refused. Pure. */
export function openRequest(request: Pick<WebhookRequest, "body" | "header">, secrets: Secrets): OpenedRequest {
  const outer = parseJsonBody(request.body);
  if (!isRecord(outer)) return { kind: "refused", status: 400, reason: "body is not a JSON object" };
  let body: Record<string, unknown> = outer;
  if (secrets.encrypt_key !== undefined) {
    if (typeof outer.encrypt !== "string") return { kind: "refused", status: 401, reason: "not encrypted with this app's Encrypt Key" };
    const plain = decryptFeishuEvent(outer.encrypt, secrets.encrypt_key);
    const inner = plain === undefined ? undefined : parseJsonBody(Buffer.from(plain, "utf8"));
    if (!isRecord(inner)) return { kind: "refused", status: 401, reason: "does not decrypt with this app's Encrypt Key" };
    body = inner;
  }
  if (body.type === "url_verification") {
    if (typeof body.challenge !== "string") return { kind: "refused", status: 400, reason: "url_verification without a challenge" };
    if (secrets.verification_token !== undefined && body.token !== secrets.verification_token)
      return { kind: "refused", status: 401, reason: "url_verification with another token" };
    return { kind: "challenge", challenge: body.challenge };
  }
  if (secrets.encrypt_key !== undefined) {
    const verdict = verifyFeishuSignature(
      {
        timestamp: request.header("x-lark-request-timestamp"),
        nonce: request.header("x-lark-request-nonce"),
        signature: request.header("x-lark-signature"),
        rawBody: request.body,
      },
      secrets.encrypt_key,
    );
    if (!verdict.ok) return { kind: "refused", status: 401, reason: verdict.reason };
  }
  const envelope = FeishuEnvelope.safeParse(body);
  if (!envelope.success) return { kind: "ignore", why: "not a v2 event" };
  if (secrets.verification_token !== undefined && envelope.data.header.token !== secrets.verification_token)
    return { kind: "refused", status: 401, reason: "event with another verification token" };
  const { header, event } = envelope.data;
  return { kind: "event", input: { eventId: header.event_id, eventType: header.event_type, event } };
}

/** The answer Feishu gets for a verdict: 200 (a card callback's with its toast), or 500 to have it sent again. */
export function answerOf(verdict: EventVerdict): WebhookAnswer {
  if (verdict.kind === "retry") return textAnswer(500);
  return jsonAnswer(200, verdict.toast ? { toast: verdict.toast } : {});
}

export interface EventsEndpointDeps {
  config: Pick<FeishuChannelConfig, "http" | "encrypt_key" | "verification_token">;
  log: Logger;
  handle(input: FeishuEventIn): Promise<EventVerdict>;
}

export function listenForEvents(deps: EventsEndpointDeps): Promise<WebhookEndpoint> {
  return listenWebhook({
    ...deps.config.http,
    // A load balancer's health check (several machines: every node listens).
    health: "feishu events endpoint ready",
    name: "feishu events",
    log: deps.log,
    handle: (request) => onRequest(deps, request),
  });
}

async function onRequest(deps: EventsEndpointDeps, request: WebhookRequest): Promise<WebhookAnswer> {
  const opened = openRequest(request, deps.config);
  switch (opened.kind) {
    case "refused":
      // Logged without the headers or body: a forged request says nothing worth keeping.
      deps.log.warn({ reason: opened.reason }, "feishu events request refused");
      return textAnswer(opened.status, opened.reason);
    case "challenge":
      return jsonAnswer(200, { challenge: opened.challenge });
    case "ignore":
      deps.log.debug({ why: opened.why }, "feishu request ignored");
      return jsonAnswer(200, {});
    case "event":
      return answerOf(await deps.handle(opened.input));
  }
}
