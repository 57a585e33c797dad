/**
 * The `/stop` command's work: the session's turn in flight is aborted and its
 * queued messages are forgotten (completed in the journal, counted as failed
 * turns), so nothing of them is answered; an open question is closed.
 */
import type { Clock } from "../../shared/clock.js";
import { sessionKeyOf } from "../vocabulary/keys.js";
import type { JournalEntry, StoredRoute } from "../vocabulary/records.js";
import type { Store } from "../vocabulary/store.js";
import type { RelayMetrics } from "./relay-types.js";
import type { Scheduler } from "./scheduler.js";
import type { StoppableTurns } from "./turn.js";

export interface StopSessionDeps {
  store: Store;
  clock: Clock;
  metrics: RelayMetrics;
  scheduler: Scheduler<string>;
  stoppable: StoppableTurns;
  /** Closes the session's open question, if any (its buttons go; the agent is told). */
  closeQuestion(route: StoredRoute): Promise<void>;
}

/** /stop: aborts the session's turn in flight and forgets its queued messages. */
export type StopSession = (route: StoredRoute) => Promise<{ stopped: boolean; dropped: number }>;

export function createStopSession(deps: StopSessionDeps): StopSession {
  const { store, clock, metrics, scheduler, stoppable, closeQuestion } = deps;
  /** /stop: aborts the session's turn in flight and forgets its queued messages. */
  return async function stopSession(route) {
    const dropped = scheduler.drop(route.instanceId, route.sessionBase).filter((id) => store.get(id));
    const stopped = stoppable.stop(sessionKeyOf(route));
    await closeQuestion(route);
    if (dropped.length) {
      const entries = dropped.map((id) => store.get(id)).filter((e): e is JournalEntry => !!e);
      for (const e of entries) metrics.turn(e.route.instanceId, "failed", Math.max(0, clock.now() - e.acceptedAt) / 1000);
      await store.complete(dropped);
    }
    return { stopped, dropped: dropped.length };
  };
}
