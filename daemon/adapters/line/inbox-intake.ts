/**
 * Several machines: the owner's intake of the LINE events any node kept
 * (receiver.ts), through the one intake of kept events (../inbox-intake.ts):
 * each row to the event handler (events.ts: a repeated `webhookEventId` is
 * answered once).
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import { KeptEventIntake } from "../inbox-intake.js";
import type { LineEventHandler } from "./events.js";

export interface InboxIntakeDeps {
  inbox: EventInbox;
  /** Built without an acknowledgement budget: its verdict is the hand-over's own. */
  events: LineEventHandler;
  clock: Clock;
  log: Logger;
  pollMs: number;
}

export class LineInboxIntake extends KeptEventIntake {
  constructor(deps: InboxIntakeDeps) {
    super({
      inbox: deps.inbox,
      clock: deps.clock,
      log: deps.log,
      pollMs: deps.pollMs,
      name: "line",
      take: async (_key, body) => (await deps.events.handle(body)) === "ack",
    });
  }
}
