/**
 * Which slot of a schedule is due, as a pure function of the cron expression,
 * the last slot recorded and the time: the runner (runner.ts) does the I/O.
 * A schedule fires its newest due slot once; older slots missed meanwhile
 * are not made up one by one (a morning summary missed three times is one
 * summary), and a slot older than the grace time is skipped. What is passed
 * over is said, so the runner can log it: no slot goes unfired in silence.
 */
import { Cron } from "croner";

/** A cron expression read in its time zone; nothing runs on its own (`paused`). */
export const cronOf = (pattern: string, timeZone: string): Cron => new Cron(pattern, { paused: true, timezone: timeZone });

/** Older due slots not fired because a newer one is due too (the catch-up rule): the first of them, and how many (counted up to MAX_COUNTED). */
export interface PassedOver {
  first: number;
  count: number;
}

export type SlotDecision =
  /** Fire this slot now; `passedOver`: older slots since `last` that will not fire. */
  | { kind: "fire"; slot: number; passedOver?: PassedOver }
  /** This slot (the newest due one) is past the grace time: record it without firing. */
  | { kind: "skip"; slot: number; lateMs: number; passedOver?: PassedOver }
  /** Nothing due. */
  | { kind: "wait" };

/** Counting the passed-over slots stops here (a long outage of a per-second schedule): a count this big means "at least". */
export const MAX_COUNTED = 100;

/** The newest slot in (`last`, `now`], and what to do with it. Pure. */
export function decide(cron: Cron, last: number, now: number, graceMs: number): SlotDecision {
  const newest = cron.previousRuns(1, new Date(now + 1))[0]?.getTime();
  if (newest === undefined || newest <= last) return { kind: "wait" };
  const lateMs = now - newest;
  const passedOver = passedOverBetween(cron, last, newest);
  const extra = passedOver ? { passedOver } : {};
  return lateMs > graceMs ? { kind: "skip", slot: newest, lateMs, ...extra } : { kind: "fire", slot: newest, ...extra };
}

/** The slots strictly between `last` and `newest` (none fire: only the newest is looked at). Pure. */
function passedOverBetween(cron: Cron, last: number, newest: number): PassedOver | undefined {
  const first = nextSlot(cron, last);
  if (first === undefined || first >= newest) return undefined;
  let count = 0;
  for (let slot: number | undefined = first; slot !== undefined && slot < newest && count < MAX_COUNTED; slot = nextSlot(cron, slot)) count++;
  return { first, count };
}

/** The first slot after `after`, or undefined when the expression has no more. Pure. */
export function nextSlot(cron: Cron, after: number): number | undefined {
  return cron.nextRun(new Date(after))?.getTime();
}
