/**
 * Several machines, mode "http": the owner's intake of the events any node
 * kept (receiver.ts), through the one intake of kept events
 * (../inbox-intake.ts): each row read again and handed to the event handler
 * (events.ts: a repeated event id is answered once); a row this version
 * cannot read is dropped rather than blocking the inbox.
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import { KeptEventIntake } from "../inbox-intake.js";
import type { FeishuEventHandler } from "./events.js";
import { keptEvent } from "./receiver.js";

export interface InboxIntakeDeps {
  inbox: EventInbox;
  events: FeishuEventHandler;
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
      name: "feishu",
      take: async (_key, body) => {
        const input = keptEvent(body);
        return !input || (await deps.events.handle(input)).kind === "ack";
      },
    });
  }
}
