/**
 * The firing of one slot of a schedule: journaled as an inbound message of
 * its chat (its dedupe key is the slot, so a slot fired twice, by a restart or
 * another node, is one entry), then queued like one. The runner (runner.ts)
 * decides when; this decides what a firing is. A thread's session stored
 * under its name before the one thread rule moves first, as for the thread's
 * next message (former-sessions.ts), so a schedule that speaks first after the
 * upgrade goes on with the thread's conversation instead of taking its key.
 */
import type { Logger } from "pino";
import { formerPlaceOf } from "../../config/former-places.js";
import type { DaemonConfig, ScheduleConfig } from "../../config/schema.js";
import { dedupeKeyOf } from "../../vocabulary/keys.js";
import type { JournalEntry } from "../../vocabulary/records.js";
import { DuplicateEntryError } from "../../vocabulary/state-errors.js";
import type { Store } from "../../vocabulary/store.js";
import { carriedOverRoute } from "../former-sessions.js";
import { resolveRoute } from "../routing.js";
import type { Scheduler } from "../scheduler.js";
import { ownSessionBase, scheduledMessage } from "./message.js";
import type { FiringOutcome } from "./runner.js";

export interface FireDeps {
  config: DaemonConfig;
  store: Store;
  scheduler: Scheduler<string>;
  logger: Pick<Logger, "info">;
}

/** Fires one slot: "no_route" when no route takes the chat, "duplicate" when the slot is journaled already, "busy" when the queue is full. */
export type Fire = (schedule: ScheduleConfig, platform: string, slot: number) => Promise<Exclude<FiringOutcome, "skipped">>;

export function createFire(deps: FireDeps): Fire {
  const { config, store, scheduler, logger: log } = deps;
  /** One slot of a schedule, journaled as an inbound message of its chat (its dedupe key is the slot), then queued like one. */
  return async function fireScheduled(schedule, platform, slot) {
    const formerly = await formerPlaceOf({ platform, chatId: schedule.chatId, chatType: schedule.chatType, threadId: schedule.threadId });
    const message = scheduledMessage(schedule, platform, slot, formerly);
    const resolved = resolveRoute(config, message);
    if (!resolved) return "no_route";
    const within = schedule.session === "own" ? (chatBase: string) => ownSessionBase(chatBase, schedule.id) : undefined;
    const key = dedupeKeyOf(message);
    if (store.has(key)) return "duplicate";
    const route = await carriedOverRoute({ store, log }, message, within ? { ...resolved, sessionBase: within(resolved.sessionBase) } : resolved, within);
    const reserved = scheduler.reserve(route.instanceId, route.sessionBase);
    if (!reserved.ok) return "busy";
    let entry: JournalEntry;
    try {
      entry = await store.add({ kind: "turn", key, message, route });
    } catch (error) {
      reserved.cancel();
      if (error instanceof DuplicateEntryError) return "duplicate";
      throw error;
    }
    reserved.submit(entry.id);
    return "fired";
  };
}
