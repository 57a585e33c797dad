/**
 * Several machines: the messaging endpoint every node serves, whoever owns
 * the account (as Slack's HTTP Events API does). A request is verified as the
 * owner's own endpoint would (verify.ts: token, tenant); the activity is then
 * kept in the bridge's inbox (one row per activity id, so a repeat is one
 * row) and the connector is answered 200 only once the row is committed, 500
 * when it could not be kept. The owner takes the rows (inbox-intake.ts).
 */
import type { Receiver, ReceiverDeps } from "../platform.js";
import { listenWebhook, textAnswer } from "../webhook.js";
import type { TeamsChannelConfig } from "./config.js";
import { fetchJson, OpenIdKeys } from "./jwt.js";
import { earlyRefusal, verifyRequest } from "./verify.js";

export const ACTIVITY_KEY = "activity:";

export async function startTeamsReceiver(config: TeamsChannelConfig, deps: ReceiverDeps): Promise<Receiver & { readonly url: string }> {
  const log = deps.logger.child({ adapter: "teams", accountId: config.id, role: "receiver" });
  const keys = new OpenIdKeys({ metadataUrl: config.openIdMetadata, fetchJson, clock: deps.clock });
  const endpoint = await listenWebhook({
    ...config.http,
    health: "teams messaging endpoint ready",
    name: "teams activities",
    log,
    checkHeaders: (header) => earlyRefusal(config, header),
    async handle(request) {
      const verified = await verifyRequest({ config, keys, clock: deps.clock, log }, request);
      if (!verified.ok) return verified.answer;
      const id = verified.activity.id;
      // Messages (turns) and answers to file consent cards are the owner's; anything else (typing, a member added) is answered and not kept.
      const kept = verified.activity.type === "message" || (verified.activity.type === "invoke" && verified.activity.name === "fileConsent/invoke");
      if (!kept || !id) return textAnswer(200);
      try {
        await deps.keep(`${ACTIVITY_KEY}${verified.activity.conversation?.id ?? ""}/${id}`, verified.activity);
        return textAnswer(200);
      } catch (error) {
        log.warn({ err: error instanceof Error ? error.message : String(error) }, "teams activity not kept (the database did not answer): answered 500");
        return textAnswer(500);
      }
    },
  });
  log.info({ url: `${endpoint.url}${config.http.path}` }, "teams messaging endpoint listening");
  return endpoint;
}
