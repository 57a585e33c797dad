/**
 * A held lease's local deadline is final: once `valid()` has said false (its
 * deadline passed while the event loop was held, its timer not yet run), a
 * renewal answered late must not bring it back, because the account's sends
 * were refused and halted on that answer and only a new lease resumes them.
 */
import { describe, expect, it } from "vitest";
import type { Clock } from "../../../shared/clock.js";
import { Held } from "../../../daemon/state/postgres/leases.js";

/** A clock whose timers never fire on their own: time moves, the event loop is "held". */
function heldLoop(): Clock & { at: number } {
  const clock = {
    at: 1_000,
    now: () => clock.at,
    setTimeout: () => ({ cancel() {} }),
    sleep: () => new Promise<void>(() => {}),
  };
  return clock;
}

describe("a held lease", () => {
  it("is extended by a renewal before its deadline", () => {
    const clock = heldLoop();
    const lease = new Held("telegram:bot", 1, clock, 2_000);
    clock.at = 1_900;
    lease.extend(3_000);
    clock.at = 2_500;
    expect(lease.valid()).toBe(true);
    expect(lease.signal.aborted).toBe(false);
  });

  it("ends, and stays ended, when a renewal answers after its deadline passed", () => {
    const clock = heldLoop();
    const lease = new Held("telegram:bot", 1, clock, 2_000);
    clock.at = 2_100; // the deadline passed; its timer has not run
    expect(lease.valid()).toBe(false);
    lease.extend(5_000); // a renewal started before the stall answers now
    expect(lease.signal.aborted).toBe(true);
    expect(lease.valid()).toBe(false);
    expect(String(lease.signal.reason)).toMatch(/self-fenced/);
  });
});
