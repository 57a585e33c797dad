/**
 * Several machines, HTTP Events API: the endpoint every node serves, whoever
 * owns the account. A request is verified as the owner's own endpoint would
 * (events-http.ts: path, size, signature, `url_verification`); an event or
 * slash command is then kept in the bridge's inbox (one row per `event_id`,
 * so Slack's retries are one row) and Slack is told "received" only once the
 * row is committed; when it could not be kept, 500, and Slack retries. The
 * owner takes the rows into its journal (inbox-intake.ts).
 */
import { createHash } from "node:crypto";
import type { Receiver, ReceiverDeps } from "../platform.js";
import type { SlackChannelConfig } from "./config.js";
import type { EventVerdict } from "./events.js";
import { listenForEvents } from "./events-http.js";

/** How a kept row says what it holds (inbox-intake.ts reads it back). */
export const EVENT_KEY = "event:";
export const COMMAND_KEY = "command:";
export const ACTION_KEY = "action:";

export async function startSlackReceiver(config: SlackChannelConfig, deps: ReceiverDeps): Promise<Receiver> {
  if (!config.signingSecret) throw new Error('the slack channel needs signingSecret in mode "http"');
  const log = deps.logger.child({ adapter: "slack", accountId: config.id, role: "receiver" });
  const keep = async (key: string, body: unknown): Promise<EventVerdict> => {
    try {
      await deps.keep(key, body);
      return "ack";
    } catch (error) {
      log.warn({ err: error instanceof Error ? error.message : String(error) }, "slack event not kept (the database did not answer): Slack will send it again");
      return "retry";
    }
  };
  const endpoint = await listenForEvents({
    http: config.http,
    signingSecret: config.signingSecret,
    clock: deps.clock,
    log,
    handle: (body) => (hasEventId(body) ? keep(`${EVENT_KEY}${body.event_id}`, body) : Promise.resolve("ack")),
    // Slack does not retry a command; its trigger_id names it (else its fields do).
    handleCommand: (fields) => keep(`${COMMAND_KEY}${fields.trigger_id ?? createHash("sha256").update(JSON.stringify(fields)).digest("hex")}`, fields),
    // A tap: Slack does not send it again either; its trigger id names it.
    handleAction: (payload) => keep(`${ACTION_KEY}${triggerIdOf(payload) ?? createHash("sha256").update(JSON.stringify(payload)).digest("hex")}`, payload),
  });
  log.info({ url: `${endpoint.url}${config.http.path}` }, "slack events endpoint listening");
  return endpoint;
}

const triggerIdOf = (payload: unknown): string | undefined =>
  payload && typeof payload === "object" && "trigger_id" in payload && typeof payload.trigger_id === "string" ? payload.trigger_id : undefined;

/** Anything with an event id is kept; whether it is a turn is the owner's to decide. */
function hasEventId(body: unknown): body is { event_id: string } {
  return !!body && typeof body === "object" && "event_id" in body && typeof body.event_id === "string" && body.event_id.length > 0;
}
