/**
 * `Clock.sleep(ms, signal?)` is the one abortable sleep: every clock (the
 * system's, the manual one, and the two test clocks) resolves after `ms` on
 * its own time, and rejects at once, cancelling its timer, when the signal
 * aborts before or during the wait.
 */
import { describe, expect, it } from "vitest";
import { AbortedError, createManualClock, systemClock, type Clock } from "../../../shared/clock.js";
import { createCountedClock } from "../../helpers/counted-clock.js";
import { createSteppableClock } from "../../helpers/steppable-clock.js";

/** `realTime`: the clock also moves on its own (the steppable one), so "not yet" cannot be asserted to the millisecond. */
const clocks: [string, () => { clock: Clock; advance(ms: number): void; live?: () => number; realTime?: boolean }][] = [
  [
    "manual",
    () => {
      const clock = createManualClock();
      return { clock, advance: (ms) => clock.advance(ms) };
    },
  ],
  [
    "counted",
    () => {
      const clock = createCountedClock();
      return { clock, advance: (ms) => clock.advance(ms), live: () => clock.live() };
    },
  ],
  [
    "steppable",
    () => {
      const clock = createSteppableClock();
      return { clock, advance: (ms) => clock.advance(ms), live: () => clock.delays().length, realTime: true };
    },
  ],
];

describe.each(clocks)("the %s clock's sleep", (_name, make) => {
  it("resolves once its time has passed", async () => {
    const { clock, advance, realTime } = make();
    let done = false;
    const sleeping = clock.sleep(60_000).then(() => (done = true));
    // A real-time clock keeps a second of margin: a loaded machine may stall a few ms here.
    const early = realTime ? 1000 : 1;
    advance(60_000 - early);
    await Promise.resolve();
    expect(done).toBe(false);
    advance(early);
    await sleeping;
    expect(done).toBe(true);
  });

  it("rejects at once with the abort's reason and cancels its timer", async () => {
    const { clock, live } = make();
    const abort = new AbortController();
    const sleeping = clock.sleep(60_000, abort.signal);
    expect(live?.()).not.toBe(0);
    const reason = new Error("stopping");
    abort.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    if (live) expect(live()).toBe(0);
  });

  it("rejects without waiting when the signal is already aborted; a reason that is not an Error becomes an AbortedError", async () => {
    const { clock } = make();
    const abort = new AbortController();
    abort.abort("not an error");
    await expect(clock.sleep(60_000, abort.signal)).rejects.toBeInstanceOf(AbortedError);
  });
});

describe("the system clock's sleep", () => {
  it("ends on an abort long before its time", async () => {
    const abort = new AbortController();
    const sleeping = systemClock.sleep(60_000, abort.signal);
    abort.abort();
    await expect(sleeping).rejects.toMatchObject({ name: "AbortError" });
  });
});
