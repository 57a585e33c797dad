/**
 * The schedule runner on the real file store and a clock that keeps time as
 * Node's does at its worst: a timer may fire a millisecond before the time it
 * was set for, or late, and the time moves while the runner works (here each
 * look at it takes a millisecond). Every slot fires exactly once; a slot not
 * fired is logged with the reason.
 */
import pino from "pino";
import { expect, it, onTestFinished } from "vitest";
import { scheduleSchema, type ScheduleConfig } from "../../../daemon/config/schedules.js";
import { ScheduleRunner } from "../../../daemon/core/schedules/runner.js";
import { openStore } from "../../../daemon/state/store.js";
import type { Store } from "../../../daemon/vocabulary/store.js";
import { sleepOn, type Clock } from "../../../shared/clock.js";
import { tempDir } from "../../helpers/emulator.js";
import { waitUntil } from "../../helpers/wait.js";

interface SloppyClock extends Clock {
  /** Fires the earliest timer, moving the time to when it actually fires; false when none is set. */
  fireNext(): boolean;
}

/**
 * Time as the runner sees it on a busy machine: every reading of the time costs a millisecond, and
 * the n-th timer set fires `errorMs(n)` off the time it was set for (negative: early). The runner
 * reads the time and then sets its timer, a millisecond later: a timer with error -1 fires when the
 * runner meant it to, one with -2 a millisecond before.
 */
function sloppyClock(start: number, errorMs: (n: number) => number): SloppyClock {
  let current = start;
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const clock: SloppyClock = {
    now: () => current++,
    setTimeout(fn, ms) {
      const id = ++seq;
      timers.set(id, { at: current + Math.max(0, ms) + errorMs(id), fn });
      return { cancel: () => void timers.delete(id) };
    },
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
    fireNext() {
      const next = [...timers].sort((a, b) => a[1].at - b[1].at)[0];
      if (!next) return false;
      timers.delete(next[0]);
      current = Math.max(current, next[1].at);
      next[1].fn();
      return true;
    },
  };
  return clock;
}

const START = Date.parse("2026-11-25T10:00:00.500Z");
const SECOND = 1000;

async function setup(errorMs: (n: number) => number) {
  const dir = tempDir("schedule-runner-");
  onTestFinished(dir.remove);
  const clock = sloppyClock(START, errorMs);
  const store: Store = await openStore({ dataDir: dir.path, clock });
  onTestFinished(() => store.close());
  const schedule: ScheduleConfig = scheduleSchema.parse({ id: "tick", cron: "* * * * * *", timeZone: "UTC", channel: "tg", chatId: "1", prompt: "tick" });
  const fired: number[] = [];
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  const runner = new ScheduleRunner({
    schedules: [schedule],
    platformOf: () => "telegram",
    store,
    clock,
    logger,
    fire: async (_s, _p, slot) => {
      fired.push(slot);
      return "fired";
    },
    count: () => {},
  });
  onTestFinished(() => runner.stop());
  runner.startAll();
  /** Fires the schedule's timer once it is armed (the check before it has finished its write). */
  const fireTimer = async () => {
    await waitUntil(() => runner.nextCheck("tick") !== undefined, "the schedule's timer");
    expect(clock.fireNext()).toBe(true);
  };
  return { clock, fired, logs, fireTimer };
}

/** The slots from `first`, one a second, `count` of them. */
const slotsFrom = (first: number, count: number) => Array.from({ length: count }, (_, i) => first + i * SECOND);

it("fires every slot exactly once when its timer fires a millisecond early or some way late", async () => {
  // Timers take turns: 1 ms early, on time, 2 ms early, 400 ms late.
  const { fired, logs, fireTimer } = await setup((n) => [400, -2, -1, -3][n % 4] ?? 0);
  while (fired.length < 20) await fireTimer();
  // The schedule was first seen at 10:00:00.5: its first slot is 10:00:01.
  console.log(fired.map((f) => new Date(f).toISOString()).join(" "));
  expect(fired).toEqual(slotsFrom(Date.parse("2026-11-25T10:00:01Z"), 20));
  expect(logs.filter((l) => String(l.msg).includes("passed over"))).toEqual([]);
});

it("fires the newest slot when its timer comes more than a slot late, and logs the ones passed over with why", async () => {
  // The second timer set (for 10:00:02) fires 2.5 s late; the others on time.
  const { fired, logs, fireTimer } = await setup((n) => (n === 2 ? 2500 : -1));
  while (fired.length < 5) await fireTimer();
  const t = (s: string) => Date.parse(`2026-11-25T10:00:${s}Z`);
  // 01 fires on time; the timer for 02 comes at 04.5: 04 fires, 02 and 03 are passed over (and said so); then on as usual.
  expect(fired).toEqual([t("01"), t("04"), t("05"), t("06"), t("07")]);
  const passed = logs.filter((l) => String(l.msg).includes("passed over"));
  expect(passed).toMatchObject([{ schedule: "tick", firstSlot: "2026-11-25T10:00:02.000Z", slots: 2, newest: "2026-11-25T10:00:04.000Z" }]);
  expect(String(passed[0]?.msg)).toMatch(/only the newest/);
});
