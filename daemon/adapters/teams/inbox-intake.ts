/**
 * Several machines: the owner's intake of the activities any node kept
 * (receiver.ts), through the one intake of kept events (../inbox-intake.ts):
 * each row parsed again (read, never trusted as cast) and handed to the
 * connection's handler; a row that is not an activity can never be taken,
 * so it is removed rather than retried for ever.
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import { KeptEventIntake } from "../inbox-intake.js";
import { TeamsActivity } from "./inbound.js";

/** What became of one activity: answered to the connector as 200, or 500 (it may come again). */
export type ActivityVerdict = "ack" | "retry";

export interface TeamsInboxIntakeDeps {
  inbox: EventInbox;
  handle(activity: TeamsActivity): Promise<ActivityVerdict>;
  clock: Clock;
  log: Logger;
  pollMs: number;
}

export class TeamsInboxIntake extends KeptEventIntake {
  constructor(deps: TeamsInboxIntakeDeps) {
    super({
      inbox: deps.inbox,
      clock: deps.clock,
      log: deps.log,
      pollMs: deps.pollMs,
      name: "teams",
      take: async (_key, body) => {
        const activity = TeamsActivity.safeParse(body);
        return !activity.success || (await deps.handle(activity.data)) === "ack";
      },
    });
  }
}
