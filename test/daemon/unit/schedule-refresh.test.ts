/**
 * A reload's schedules on the accounts a node holds (several machines: each
 * account's schedules run with its lease), on the real file store and a
 * manual clock: `refresh` starts what is new on a held account, leaves
 * other accounts' alone, and stops what is gone; an account handed over
 * gets nothing back from a reload.
 */
import { pino } from "pino";
import { expect, it, onTestFinished } from "vitest";
import { scheduleSchema, type ScheduleConfig } from "../../../daemon/config/schedules.js";
import { ScheduleRunner } from "../../../daemon/core/schedules/runner.js";
import { openStore } from "../../../daemon/state/store.js";
import type { Store } from "../../../daemon/vocabulary/store.js";
import { createManualClock } from "../../../shared/clock.js";
import { tempDir } from "../../helpers/emulator.js";
import { waitUntil } from "../../helpers/wait.js";

const schedule = (id: string, channel: string): ScheduleConfig =>
  scheduleSchema.parse({ id, channel, chatId: "1", cron: "0 * * * *", timeZone: "UTC", prompt: id });

async function runner(first: ScheduleConfig[]) {
  const dir = tempDir("schedule-refresh-");
  const clock = createManualClock(Date.parse("2026-11-25T10:30:00Z"));
  const store: Store = await openStore({ dataDir: dir.path, clock });
  onTestFinished(dir.remove);
  onTestFinished(() => store.close());
  const config = { schedules: first };
  const schedules = new ScheduleRunner({
    get schedules() {
      return config.schedules;
    },
    platformOf: () => "telegram",
    store,
    clock,
    logger: pino({ level: "silent" }),
    fire: async () => "fired",
    count() {},
  });
  onTestFinished(() => schedules.stop());
  const armed = (id: string) => waitUntil(() => schedules.nextCheck(id) !== undefined, `${id}'s timer`);
  return { schedules, config, armed };
}

it("starts a reload's new schedules on the accounts held here only, and stops the removed ones", async () => {
  const { schedules, config, armed } = await runner([schedule("held", "tg"), schedule("elsewhere", "tg2")]);
  schedules.startAccount("telegram", "tg");
  await armed("held");
  expect(schedules.nextCheck("elsewhere")).toBeUndefined();

  config.schedules = [schedule("fresh", "tg"), schedule("other", "tg2")];
  await schedules.refresh();
  await armed("fresh");
  expect(schedules.nextCheck("held")).toBeUndefined();
  expect(schedules.nextCheck("other")).toBeUndefined();

  // Handed over: a later reload starts nothing of that account here.
  schedules.stopAccount("telegram", "tg");
  config.schedules = [schedule("fresh", "tg"), schedule("later", "tg")];
  await schedules.refresh();
  expect(schedules.nextCheck("fresh")).toBeUndefined();
  expect(schedules.nextCheck("later")).toBeUndefined();
  expect(schedules.list("tg").map((s) => [s.id, s.running])).toEqual([
    ["fresh", false],
    ["later", false],
  ]);
});
