/**
 * A manual clock that also counts its live timers: a test can wait (on
 * events, via `vi.waitFor`) until whoever was waiting on the clock has stopped,
 * e.g. a gateway stream that noticed its client left.
 */
import { createManualClock, sleepOn, type ManualClock } from "../../shared/clock.js";

export interface CountedClock extends ManualClock {
  /** Timers set and neither fired nor cancelled. */
  live(): number;
  /** The delays (ms) those live timers were set with, e.g. to see that a 5000 ms sleep has begun. */
  delays(): number[];
}

export function createCountedClock(start?: number): CountedClock {
  const manual = createManualClock(start);
  const live = new Map<object, number>();
  const clock: CountedClock = {
    ...manual,
    setTimeout(fn, ms) {
      const token = {};
      live.set(token, ms);
      const timer = manual.setTimeout(() => {
        live.delete(token);
        fn();
      }, ms);
      return {
        cancel() {
          live.delete(token);
          timer.cancel();
        },
      };
    },
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
    live: () => live.size,
    delays: () => [...live.values()],
  };
  return clock;
}
