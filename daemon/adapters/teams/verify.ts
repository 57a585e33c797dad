/**
 * One request to the messaging endpoint, checked as every node checks it
 * (the owner's endpoint, connection.ts, and every node's receiver,
 * receiver.ts): a body that is an activity, its Bot Framework token valid for
 * it (jwt.ts) unless the anonymous mode is configured, and, single-tenant,
 * its tenant the configured one. The verified activity, or what to answer.
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import { parseJsonBody, textAnswer, type WebhookAnswer, type WebhookRequest } from "../webhook.js";
import { ANONYMOUS_MODE, type TeamsChannelConfig } from "./config.js";
import { TeamsActivity, tenantOf } from "./inbound.js";
import { type OpenIdKeys, verifyBotToken } from "./jwt.js";

export interface VerifyDeps {
  config: TeamsChannelConfig;
  keys: OpenIdKeys;
  clock: Clock;
  log: Logger;
}

/** Refuses a request with no Bearer token before its body is read (the webhook's `checkHeaders`). */
export function earlyRefusal(config: TeamsChannelConfig, header: (name: string) => string | undefined): WebhookAnswer | undefined {
  return config.auth === "jwt" && !/^Bearer \S+$/.test(header("authorization") ?? "") ? textAnswer(401, "no Bearer token") : undefined;
}

export async function verifyRequest(
  deps: VerifyDeps,
  request: WebhookRequest,
): Promise<{ ok: true; activity: TeamsActivity } | { ok: false; answer: WebhookAnswer }> {
  const parsed = TeamsActivity.safeParse(parseJsonBody(request.body));
  if (!parsed.success) return { ok: false, answer: textAnswer(400, "not an activity") };
  const activity = parsed.data;
  const { config, log } = deps;
  if (config.auth !== ANONYMOUS_MODE) {
    const verdict = await verifyBotToken(
      { authorization: request.header("authorization"), serviceUrl: activity.serviceUrl, channelId: activity.channelId },
      deps.keys,
      { appId: config.app_id, tenantId: config.tenant_id, nowMs: deps.clock.now() },
    );
    if (!verdict.ok) {
      // Logged without the token or the activity: a forged request says nothing worth keeping.
      log.warn({ reason: verdict.reason }, "teams request refused: not a valid Bot Framework token for this bot");
      return { ok: false, answer: textAnswer(401, verdict.reason) };
    }
  }
  if (config.tenant_id && tenantOf(activity) !== config.tenant_id) {
    log.warn({ tenant: tenantOf(activity) ?? null }, "teams activity refused: from another tenant than the configured tenant_id");
    return { ok: false, answer: textAnswer(403, "wrong tenant") };
  }
  return { ok: true, activity };
}
