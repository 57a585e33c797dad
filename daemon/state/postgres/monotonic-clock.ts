/**
 * A `Clock` whose `now()` never goes backwards (performance.now, not the wall
 * clock): lease deadlines must not move when NTP steps the system time.
 */
import { performance } from "node:perf_hooks";
import { systemClock, type Clock } from "../../../shared/clock.js";

export const monotonicClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  setTimeout: (fn, ms) => systemClock.setTimeout(fn, ms),
  sleep: (ms) => systemClock.sleep(ms),
};
