/**
 * The scheduler's queue depth per instance (the queue-depth gauge and `/status`
 * read it): it is kept as a running count, and must always equal the sum of
 * what each of the instance's sessions has waiting.
 */
import { describe, expect, it } from "vitest";
import { createManualClock } from "../../../shared/clock.js";
import { createScheduler, type Reservation, type Scheduler } from "../../../daemon/core/scheduler.js";

const SESSIONS = ["s1", "s2", "s3"];

/** Waits until the queue has started what it can (p-queue starts tasks on a microtask). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup(debounceMs = 0) {
  const clock = createManualClock();
  const finishers: (() => void)[] = [];
  const started: string[] = [];
  const scheduler: Scheduler<string> = createScheduler<string>({
    clock,
    concurrencyPerInstance: 1,
    maxPendingPerSession: 10,
    maxPendingTotal: 100,
    debounceMs,
    run: (turn) => {
      started.push(turn.items.join("+"));
      return new Promise<void>((resolve) => finishers.push(resolve));
    },
  });
  /** The per-instance count must be the sum over the instance's sessions, whatever happened before. */
  const expectConsistent = (instanceId: string) => {
    const sum = SESSIONS.reduce((n, s) => n + scheduler.depth(instanceId, s).sessionWaiting, 0);
    expect(scheduler.depth(instanceId).instanceWaiting).toBe(sum);
    return sum;
  };
  const finishNext = async () => {
    finishers.shift()?.();
    await settle();
  };
  return { clock, scheduler, started, expectConsistent, finishNext };
}

describe("scheduler depth per instance", () => {
  it("counts reserved, queued and handed-over messages, and not the running turn", async () => {
    const { scheduler, started, expectConsistent, finishNext } = setup();
    const reserved = SESSIONS.map((s) => scheduler.reserve("a", s) as Reservation<string>);
    expect(expectConsistent("a")).toBe(3);
    for (const [i, r] of reserved.entries()) r.submit(`m${i}`);
    await settle();
    // One runs (concurrency 1), two wait.
    expect(started).toEqual(["m0"]);
    expect(expectConsistent("a")).toBe(2);
    expect(scheduler.depth("a").instanceRunning).toBe(1);
    scheduler.enqueue("a", "s1", "m3");
    expect(expectConsistent("a")).toBe(3);
    await finishNext();
    expect(started).toEqual(["m0", "m1"]);
    expect(expectConsistent("a")).toBe(2);
    await finishNext();
    await finishNext();
    await finishNext();
    expect(started).toEqual(["m0", "m1", "m2", "m3"]);
    expect(expectConsistent("a")).toBe(0);
    expect(scheduler.depth().totalWaiting).toBe(0);
  });

  it("keeps instances apart, and follows cancel, drop and a debounced burst", async () => {
    const { clock, scheduler, started, expectConsistent, finishNext } = setup(100);
    const first = scheduler.reserve("a", "s1") as Reservation<string>;
    first.submit("a1");
    const cancelled = scheduler.reserve("a", "s2") as Reservation<string>;
    scheduler.enqueue("b", "s1", "b1");
    expect(expectConsistent("a")).toBe(2);
    expect(expectConsistent("b")).toBe(1);
    cancelled.cancel();
    expect(expectConsistent("a")).toBe(1);

    // A burst in s3 is one buffered turn until the debounce ends.
    scheduler.enqueue("a", "s3", "a2");
    scheduler.enqueue("a", "s3", "a3");
    expect(expectConsistent("a")).toBe(3);
    clock.advance(100);
    await settle();
    expect(started).toEqual(["a1", "b1"]);
    expect(expectConsistent("a")).toBe(2);

    // /stop in s3: its waiting turn (handed to the queue, not started) is taken.
    expect(scheduler.drop("a", "s3")).toEqual(["a2", "a3"]);
    expect(expectConsistent("a")).toBe(scheduler.depth("a", "s3").sessionWaiting);
    await finishNext();
    await finishNext();
    await finishNext();
    expect(expectConsistent("a")).toBe(0);
    expect(expectConsistent("b")).toBe(0);
  });
});
