/**
 * Waiting on an event while moving a manual clock: for a daemon on a manual
 * clock, whose paced edits, retry-afters and backoffs then happen as soon as
 * the code under test gets to them, never after real-time waiting.
 */
import { vi } from "vitest";
import type { ManualClock } from "../../shared/clock.js";

export interface AdvanceOptions {
  /** How far the clock moves between two looks, ms (default 100: finer than any pace the daemon keeps). */
  stepMs?: number;
  /** Real time to give up after, ms (default 15 000). */
  timeout?: number;
}

/**
 * Looks at `check` and, until it gives something truthy, moves `clock` on by
 * `stepMs` and looks again a few real milliseconds later (so I/O started by
 * the timers that fired can happen). The clock never moves once `check` holds.
 */
export async function advanceUntil<T>(
  clock: ManualClock,
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  label: string,
  options: AdvanceOptions = {},
): Promise<T> {
  const { stepMs = 100, timeout = 15_000 } = options;
  return vi.waitFor(
    async () => {
      const value = await check();
      if (value) return value;
      clock.advance(stepMs);
      throw new Error(`timed out waiting for ${label}`);
    },
    { timeout, interval: 5 },
  );
}

/** Moves `clock` on until `promise` settles, e.g. `daemon.whenIdle()` when what is left waits on the clock. */
export async function advanceUntilSettled<T>(clock: ManualClock, promise: Promise<T>, label: string, options?: AdvanceOptions): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => (settled = true));
  await advanceUntil(clock, () => settled, label, options);
  return watched;
}
