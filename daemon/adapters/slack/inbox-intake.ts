/**
 * Several machines, HTTP Events API: the owner's intake of the events any
 * node kept (receiver.ts), through the one intake of kept events
 * (../inbox-intake.ts): a row is an event, a slash command or a tap, each to
 * its handler (events.ts: a repeated `event_id` is answered once).
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import { KeptEventIntake } from "../inbox-intake.js";
import type { EventVerdict, SlackEventHandler } from "./events.js";
import { ACTION_KEY, COMMAND_KEY } from "./receiver.js";

function takeSlack(events: SlackEventHandler, key: string, body: unknown): Promise<EventVerdict> {
  if (key.startsWith(COMMAND_KEY)) return events.handleCommand(body);
  return key.startsWith(ACTION_KEY) ? events.handleAction(body) : events.handle(body);
}

export interface InboxIntakeDeps {
  inbox: EventInbox;
  /** Built without an acknowledgement budget: its verdict is the hand-over's own. */
  events: SlackEventHandler;
  clock: Clock;
  log: Logger;
  pollMs: number;
}

export class InboxIntake extends KeptEventIntake {
  constructor(deps: InboxIntakeDeps) {
    super({
      inbox: deps.inbox,
      clock: deps.clock,
      log: deps.log,
      pollMs: deps.pollMs,
      name: "slack",
      take: async (key, body) => (await takeSlack(deps.events, key, body)) === "ack",
    });
  }
}
