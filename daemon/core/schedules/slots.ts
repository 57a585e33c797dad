/**
 * Which slot of a schedule is due, as a pure function of the cron expression,
 * the last slot recorded and the time: the runner (runner.ts) does the I/O.
 * A schedule fires its newest due slot once; older slots missed meanwhile
 * are not made up one by one (a morning summary missed three times is one
 * summary), and a slot older than the grace time is skipped.
 */
import { Cron } from "croner";

/** A cron expression read in its time zone; nothing runs on its own (`paused`). */
export const cronOf = (pattern: string, timeZone: string): Cron => new Cron(pattern, { paused: true, timezone: timeZone });

export type SlotDecision =
  /** Fire this slot now. */
  | { kind: "fire"; slot: number }
  /** This slot (the newest due one) is past the grace time: record it without firing. */
  | { kind: "skip"; slot: number; lateMs: number }
  /** Nothing due. */
  | { kind: "wait" };

/** The newest slot in (`last`, `now`], and what to do with it. Pure. */
export function decide(cron: Cron, last: number, now: number, graceMs: number): SlotDecision {
  const newest = cron.previousRuns(1, new Date(now + 1))[0]?.getTime();
  if (newest === undefined || newest <= last) return { kind: "wait" };
  const lateMs = now - newest;
  return lateMs > graceMs ? { kind: "skip", slot: newest, lateMs } : { kind: "fire", slot: newest };
}

/** The first slot after `after`, or undefined when the expression has no more. Pure. */
export function nextSlot(cron: Cron, after: number): number | undefined {
  return cron.nextRun(new Date(after))?.getTime();
}
