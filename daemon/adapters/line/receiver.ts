/**
 * Several machines: the webhook endpoint every node serves, whoever owns the
 * account. A request is verified as the owner's own endpoint would
 * (webhook-http.ts: path, size, signature); each event is then kept in the
 * bridge's inbox, one row per `webhookEventId` (so LINE's redeliveries are
 * one row), and LINE is answered 200 only once every row is committed; 500
 * when one could not be kept. The owner takes the rows into its journal
 * (inbox-intake.ts).
 */
import type { Receiver, ReceiverDeps } from "../platform.js";
import { servedFilesOf } from "../file-links/index.js";
import { listenWebhook } from "../webhook.js";
import type { LineChannelConfig } from "./config.js";
import type { EventVerdict } from "./events.js";
import { LineWebhookBody } from "./inbound.js";
import { onWebhook } from "./webhook-http.js";

export const EVENT_KEY = "event:";

export async function startLineReceiver(config: LineChannelConfig, deps: ReceiverDeps): Promise<Receiver> {
  const log = deps.logger.child({ adapter: "line", accountId: config.id, role: "receiver" });
  const keepAll = async (body: unknown): Promise<EventVerdict> => {
    const parsed = LineWebhookBody.safeParse(body);
    if (!parsed.success) return "ack";
    try {
      for (const event of parsed.data.events) {
        const id = eventIdOf(event);
        // One body per event: the owner reads it as a webhook body of one.
        if (id) await deps.keep(`${EVENT_KEY}${id}`, { destination: parsed.data.destination, events: [event] });
      }
      return "ack";
    } catch (error) {
      log.warn({ err: error instanceof Error ? error.message : String(error) }, "line event not kept (the database did not answer): answered 500");
      return "retry";
    }
  };
  const files =
    deps.fileStores && servedFilesOf({ config: config.file_links, backend: deps.fileStores, platform: "line", accountId: config.id, clock: deps.clock, log });
  await files?.open();
  const endpoint = await listenWebhook({
    ...config.http,
    health: "line webhook endpoint ready",
    name: "line webhook",
    log,
    handle: (request) => onWebhook({ channelSecret: config.channel_secret, log, handle: keepAll }, request),
    routes: files ? [files.route] : [],
  });
  log.info({ url: `${endpoint.url}${config.http.path}` }, "line webhook endpoint listening");
  return { close: () => endpoint.close().finally(() => files?.close()) };
}

function eventIdOf(event: unknown): string | undefined {
  return event && typeof event === "object" && "webhookEventId" in event && typeof event.webhookEventId === "string" && event.webhookEventId !== ""
    ? event.webhookEventId
    : undefined;
}
