/**
 * Several machines, mode "http": the endpoint every node serves, whoever
 * owns the account. A request is verified and decrypted as the owner's own
 * endpoint would (events-http.ts); an event is then kept in the bridge's
 * inbox (one row per `event_id`, so Feishu's redeliveries are one row) and
 * Feishu is told "received" only once the row is committed; when it could
 * not be kept, 500, and Feishu delivers it again. The owner takes the rows
 * into its journal (inbox-intake.ts). A card callback is kept the same way;
 * its answer carries no toast (the owner decides later).
 */
import { z } from "zod";
import type { Receiver, ReceiverDeps } from "../platform.js";
import { jsonAnswer, listenWebhook, textAnswer } from "../webhook.js";
import type { FeishuChannelConfig } from "./config.js";
import type { FeishuEventIn } from "./events.js";
import { openRequest } from "./events-http.js";

const KEY = "event:";
const Kept = z.strictObject({ eventId: z.string().min(1), eventType: z.string(), event: z.unknown() });

/** A kept row's body as the handler's input, or undefined when it is not one. */
export function keptEvent(body: unknown): FeishuEventIn | undefined {
  const parsed = Kept.safeParse(body);
  return parsed.success ? { eventId: parsed.data.eventId, eventType: parsed.data.eventType, event: parsed.data.event } : undefined;
}

export async function startFeishuReceiver(config: FeishuChannelConfig, deps: ReceiverDeps): Promise<Receiver> {
  const log = deps.logger.child({ adapter: "feishu", accountId: config.id, role: "receiver" });
  const endpoint = await listenWebhook({
    ...config.http,
    health: "feishu events endpoint ready",
    name: "feishu events",
    log,
    async handle(request) {
      const opened = openRequest(request, config);
      if (opened.kind === "refused") {
        log.warn({ reason: opened.reason }, "feishu events request refused");
        return textAnswer(opened.status, opened.reason);
      }
      if (opened.kind === "challenge") return jsonAnswer(200, { challenge: opened.challenge });
      if (opened.kind === "ignore") return jsonAnswer(200, {});
      try {
        await deps.keep(`${KEY}${opened.input.eventId}`, opened.input);
        return jsonAnswer(200, {});
      } catch (error) {
        log.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "feishu event not kept (the database did not answer): Feishu will send it again",
        );
        return textAnswer(500);
      }
    },
  });
  log.info({ url: `${endpoint.url}${config.http.path}` }, "feishu events endpoint listening");
  return endpoint;
}
