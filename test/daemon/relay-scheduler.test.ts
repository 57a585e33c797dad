import { describe, expect, it } from "vitest";
import { createManualClock } from "../../shared/clock.js";
import { createScheduler, type Turn } from "../../daemon/core/scheduler.js";

/** A turn runner whose turns finish only when the test says so. */
function controlledRunner() {
  const started: Turn<string>[] = [];
  const finishers = new Map<string, () => void>();
  let inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();
  const run = (turn: Turn<string>) =>
    new Promise<void>((resolve) => {
      started.push(turn);
      inFlight.set(turn.instanceId, (inFlight.get(turn.instanceId) ?? 0) + 1);
      maxInFlight.set(turn.instanceId, Math.max(maxInFlight.get(turn.instanceId) ?? 0, inFlight.get(turn.instanceId)!));
      finishers.set(turn.items.join("+"), () => {
        inFlight.set(turn.instanceId, inFlight.get(turn.instanceId)! - 1);
        resolve();
      });
    });
  const finish = async (key: string) => {
    const f = finishers.get(key);
    if (!f) throw new Error(`turn ${key} is not running (running: ${[...finishers.keys()].join(", ")})`);
    finishers.delete(key);
    f();
    await settle();
  };
  const reset = () => {
    inFlight = new Map();
  };
  return { run, started, finish, maxInFlight, running: () => [...finishers.keys()], reset };
}

/** Lets queued promise callbacks run. */
const settle = async () => {
  for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r));
};

const base = { concurrencyPerInstance: 2, maxPendingPerSession: 100, maxPendingTotal: 1000, debounceMs: 0 };

describe("scheduler", () => {
  it("collect: what waited while a turn ran starts as one turn, in order; turns that do not join run alone", async () => {
    const clock = createManualClock();
    const r = controlledRunner();
    // Items named x* belong to a session that does not collect (followup).
    const s = createScheduler<string>({ ...base, clock, run: r.run, joins: (items) => items.every((i) => !i.startsWith("x")) });
    s.enqueue("i1", "a", "a1");
    s.enqueue("i1", "b", "x1");
    await settle();
    for (const item of ["a2", "a3", "a4"]) s.enqueue("i1", "a", item);
    for (const item of ["x2", "x3"]) s.enqueue("i1", "b", item);
    expect(s.depth("i1", "a").sessionWaiting).toBe(3);
    await r.finish("a1");
    expect(r.running()).toContain("a2+a3+a4");
    expect(s.depth("i1", "a").sessionWaiting).toBe(0);
    await r.finish("x1");
    expect(r.running()).toContain("x2");
    await r.finish("a2+a3+a4");
    await r.finish("x2");
    await r.finish("x3");
    expect(r.started.map((t) => t.items.join("+"))).toEqual(["a1", "x1", "a2+a3+a4", "x2", "x3"]);
    expect(s.depth().totalWaiting).toBe(0);
  });

  it("putBack: an interrupted turn's items go again first, joined by what waited behind them (a debounced buffer too)", async () => {
    const clock = createManualClock();
    const r = controlledRunner();
    const s = createScheduler<string>({ ...base, debounceMs: 1000, clock, run: r.run, joins: () => true });
    s.enqueue("i1", "a", "a1", { debounce: false });
    await settle();
    s.enqueue("i1", "a", "a2", { debounce: false });
    s.enqueue("i1", "a", "a3"); // still being debounced when a1 ends
    s.putBack("i1", "a", ["a1"]);
    expect(s.depth("i1", "a").sessionWaiting).toBe(3);
    await r.finish("a1");
    expect(r.running()).toEqual(["a1+a2+a3"]);
    clock.advance(5000); // the cancelled debounce timer starts nothing more
    await r.finish("a1+a2+a3");
    expect(r.started.map((t) => t.items.join("+"))).toEqual(["a1", "a1+a2+a3"]);
    expect(s.depth().totalWaiting).toBe(0);
  });

  it("drop (/stop) takes the session's waiting messages, buffered ones included, and leaves its running turn and other sessions alone", async () => {
    const clock = createManualClock();
    const r = controlledRunner();
    const s = createScheduler<string>({ ...base, debounceMs: 1000, clock, run: r.run });
    s.enqueue("i1", "a", "a1", { debounce: false });
    s.enqueue("i1", "b", "b1", { debounce: false });
    await settle();
    s.enqueue("i1", "a", "a2", { debounce: false });
    s.enqueue("i1", "a", "a3"); // still being debounced
    s.enqueue("i1", "b", "b2", { debounce: false });
    expect(s.depth("i1", "a").sessionWaiting).toBe(2);
    expect(s.drop("i1", "a").sort()).toEqual(["a2", "a3"]);
    expect(s.depth("i1", "a")).toMatchObject({ sessionWaiting: 0, sessionBusy: true });
    expect(s.depth().totalWaiting).toBe(1); // b2
    clock.advance(5000);
    await r.finish("a1");
    await r.finish("b1");
    await r.finish("b2");
    expect(r.started.map((t) => t.items.join("+"))).toEqual(["a1", "b1", "b2"]);
    expect(s.drop("i1", "nobody")).toEqual([]);
  });

  it("runs one turn per session at a time, in arrival order, and bounds each instance's concurrency", async () => {
    const clock = createManualClock();
    const r = controlledRunner();
    const s = createScheduler<string>({ ...base, clock, run: r.run });
    for (const session of ["a", "b", "c"]) for (let i = 1; i <= 3; i++) s.enqueue("i1", session, `${session}${i}`);
    s.enqueue("i2", "z", "z1");
    await settle();
    // Two slots on i1 (sessions a and b), one turn of i2: c waits for a slot, a2 waits for a1.
    expect(r.running().sort()).toEqual(["a1", "b1", "z1"]);
    expect(s.depth("i1", "a")).toMatchObject({ sessionWaiting: 2, sessionBusy: true, instanceRunning: 2 });
    await r.finish("a1");
    expect(r.running().sort()).toEqual(["b1", "c1", "z1"]);
    await r.finish("c1");
    await r.finish("b1");
    await r.finish("z1");
    while (r.running().length) await r.finish(r.running()[0]!);
    const order = (session: string) => r.started.filter((t) => t.sessionBase === session).map((t) => t.items.join("+"));
    expect(order("a")).toEqual(["a1", "a2", "a3"]);
    expect(order("b")).toEqual(["b1", "b2", "b3"]);
    expect(order("c")).toEqual(["c1", "c2", "c3"]);
    expect(r.maxInFlight.get("i1")).toBe(2);
    expect(s.depth().totalWaiting).toBe(0);
    await s.whenIdle();
  });

  it("merges a burst within debounceMs into one turn and starts a new turn after a pause", async () => {
    const clock = createManualClock();
    const r = controlledRunner();
    const s = createScheduler<string>({ ...base, debounceMs: 1000, clock, run: r.run });
    for (const item of ["m1", "m2", "m3"]) {
      const slot = s.reserve("i1", "a");
      if (!slot.ok) throw new Error("refused");
      slot.submit(item);
      clock.advance(400); // each within a second of the last
    }
    await settle();
    expect(r.started).toEqual([]);
    clock.advance(600); // a full second after m3
    await settle();
    expect(r.started.map((t) => t.items)).toEqual([["m1", "m2", "m3"]]);
    s.enqueue("i1", "a", "m4");
    clock.advance(1500);
    s.enqueue("i1", "a", "m5");
    clock.advance(1000);
    await r.finish("m1+m2+m3");
    expect(r.started.map((t) => t.items)).toEqual([["m1", "m2", "m3"], ["m4"]]);
    await r.finish("m4");
    expect(r.started.map((t) => t.items).at(-1)).toEqual(["m5"]);
    await r.finish("m5");
    // Another session's messages are never merged in.
    s.enqueue("i1", "b", "b1");
    s.enqueue("i1", "a", "m6");
    clock.advance(1000);
    await settle();
    expect(
      r.started
        .map((t) => t.items)
        .slice(-2)
        .sort(),
    ).toEqual([["b1"], ["m6"]].sort());
  });

  it("does not let a burst that never pauses wait forever", async () => {
    const clock = createManualClock();
    const r = controlledRunner();
    const s = createScheduler<string>({ ...base, debounceMs: 100, maxDebounceMs: 300, clock, run: r.run });
    for (let i = 0; i < 10; i++) {
      s.enqueue("i1", "a", `m${i}`);
      clock.advance(50);
    }
    await settle();
    expect(r.started[0]?.items).toEqual(["m0", "m1", "m2", "m3", "m4", "m5"]);
  });

  it("refuses beyond the per-session and total bounds, and frees slots as turns start", async () => {
    const clock = createManualClock();
    const r = controlledRunner();
    const s = createScheduler<string>({ ...base, concurrencyPerInstance: 1, maxPendingPerSession: 2, maxPendingTotal: 3, clock, run: r.run });
    const take = (session: string, item: string) => {
      const slot = s.reserve("i1", session);
      if (slot.ok) slot.submit(item);
      return slot.ok ? "ok" : slot.reason;
    };
    expect(take("a", "a1")).toBe("ok");
    await settle(); // a1 is in flight: it no longer waits
    expect(take("a", "a2")).toBe("ok");
    expect(take("a", "a3")).toBe("ok");
    expect(take("a", "a4")).toBe("session_full");
    expect(take("b", "b1")).toBe("ok");
    expect(take("c", "c1")).toBe("total_full");
    // A reservation given back frees its slot.
    await r.finish("a1");
    const slot = s.reserve("c", "c1");
    expect(slot.ok).toBe(true);
    if (slot.ok) slot.cancel();
    expect(s.depth().totalWaiting).toBe(2);
  });

  it("holds everything until released, then runs resumed turns before newer ones", async () => {
    const clock = createManualClock();
    const r = controlledRunner();
    const s = createScheduler<string>({ ...base, concurrencyPerInstance: 1, held: true, clock, run: r.run });
    s.enqueueTurn("i1", "a", ["old1", "old1b"]);
    s.enqueue("i1", "a", "old2", { debounce: false });
    s.enqueue("i1", "a", "new1");
    await settle();
    expect(r.started).toEqual([]);
    s.release();
    await settle();
    await r.finish("old1+old1b");
    await r.finish("old2");
    await r.finish("new1");
    expect(r.started.map((t) => t.items.join("+"))).toEqual(["old1+old1b", "old2", "new1"]);
  });

  it("stops starting turns when stopped and reports idle once the running ones end", async () => {
    const clock = createManualClock();
    const r = controlledRunner();
    const s = createScheduler<string>({ ...base, concurrencyPerInstance: 1, clock, run: r.run });
    s.enqueue("i1", "a", "a1");
    s.enqueue("i1", "b", "b1");
    await settle();
    s.stop();
    let idle = false;
    void s.whenIdle().then(() => (idle = true));
    await settle();
    expect(idle).toBe(false);
    await r.finish("a1");
    expect(idle).toBe(true);
    expect(r.started.map((t) => t.items[0])).toEqual(["a1"]);
  });
});
