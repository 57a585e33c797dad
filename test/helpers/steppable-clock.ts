/**
 * Real time that a test can also jump forward. Timers fire on their own like
 * the system clock's (so retries, backoffs and I/O timeouts of a daemon under
 * test run as usual), and `advance(ms)` moves `now()` on and fires at once
 * every timer that has come due: a one-minute cooldown ends the moment the
 * test has seen what it needs, instead of after a real-time wait chosen long
 * enough for a loaded machine.
 */
import { sleepOn, type Clock } from "../../shared/clock.js";

export interface SteppableClock extends Clock {
  /** Moves time forward by `ms`, firing every timer now due, in order. */
  advance(ms: number): void;
  /** The delays (ms) of the timers set and neither fired nor cancelled, e.g. to see that a retry-after wait has begun. */
  delays(): number[];
}

export function createSteppableClock(): SteppableClock {
  let offset = 0;
  let seq = 0;
  const timers = new Map<number, { at: number; delay: number; fn: () => void; handle: NodeJS.Timeout }>();
  const clock: SteppableClock = {
    now: () => Date.now() + offset,
    setTimeout(fn, ms) {
      const id = ++seq;
      const delay = Math.max(0, ms);
      const handle = setTimeout(() => {
        timers.delete(id);
        fn();
      }, delay);
      timers.set(id, { at: clock.now() + delay, delay, fn, handle });
      return {
        cancel() {
          const timer = timers.get(id);
          if (!timer) return;
          clearTimeout(timer.handle);
          timers.delete(id);
        },
      };
    },
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
    delays: () => [...timers.values()].map((t) => t.delay),
    advance(ms) {
      offset += ms;
      const now = clock.now();
      const due = [...timers].filter(([, t]) => t.at <= now).sort((a, b) => a[1].at - b[1].at || a[0] - b[0]);
      for (const [id, timer] of due) {
        // A timer fired earlier in this loop may have cancelled this one.
        if (!timers.delete(id)) continue;
        clearTimeout(timer.handle);
        timer.fn();
      }
    },
  };
  return clock;
}
