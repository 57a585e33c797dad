/**
 * Scheduled prompts through the whole daemon on the injected clock: Telegram's
 * fake, the emulator over real HTTP, and time moved slot by slot instead of
 * waited for (a day of hourly slots takes well under a minute). Each slot is
 * answered once in its chat; an answer that is the silent word is not sent;
 * a slot missed while the daemon was down fires once at the next start, or is
 * skipped past the grace time. And on the real clock, where a timer may fire a
 * millisecond early: a dozen schedules firing every second, every slot once.
 */
import pino from "pino";
import { expect, it, onTestFinished } from "vitest";
import type { DaemonConfig } from "../../daemon/config/schema.js";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { scheduleSchema } from "../../daemon/config/schedules.js";
import { testHandle } from "../../daemon/test-handle.js";
import { cronOf, nextSlot } from "../../daemon/core/schedules/slots.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock, type SteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };
const bob = { id: 5002, username: "bob" };
const HOUR = 60 * 60 * 1000;
const hourly = cronOf("0 * * * *", "UTC");

async function bridge(schedules: Record<string, unknown>[]) {
  const service = await startServiceFixture("schedules-");
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  const channel = {
    type: "telegram",
    id: "tg",
    token: TELEGRAM_BOT_TOKEN,
    apiRoot: fake.url,
    streaming: "off",
    setCommands: false,
    access: { users: [String(alice.id), String(bob.id)], owners: [String(alice.id)] },
  };
  const config: DaemonConfig = {
    ...service.configFor(channel),
    schedules: schedules.map((s) => scheduleSchema.parse({ channel: "tg", chatId: String(alice.id), timeZone: "UTC", ...s })),
  };
  const clock = createSteppableClock();
  const launch = async () => {
    const daemon = createDaemon({ config, clock, random: seededRandom(11) });
    onTestFinished(() => daemon.stop({ graceMs: 0 }));
    await daemon.start();
    return daemon;
  };
  return { fake, clock, launch };
}

const texts = (fake: FakeTelegram, chat = alice.id) => fake.sentMessages(chat).map((m) => m.text);
/** Once the schedule's timer is armed, moves the clock to the next hourly slot. */
async function toNextSlot(clock: SteppableClock, daemon: Daemon, id: string): Promise<void> {
  await waitUntil(() => testHandle(daemon).schedules?.nextCheck(id) !== undefined, `${id}'s timer`);
  // A second past the slot: the timer was set a few real milliseconds after the runner read the time.
  clock.advance(nextSlot(hourly, clock.now())! - clock.now() + 1000);
}
const counted = async (daemon: Daemon, outcome: string) =>
  Number(new RegExp(`agent_bridge_scheduled_prompts_total\\{schedule="[^"]+",outcome="${outcome}"\\} (\\d+)`).exec(await daemon.metrics.text())?.[1] ?? 0);

it("answers each of a day of hourly slots once, in the chat, quoting nothing", { timeout: 60_000 }, async () => {
  const { fake, clock, launch } = await bridge([{ id: "pulse", cron: "0 * * * *", prompt: "status check" }]);
  const daemon = await launch();
  for (let slot = 1; slot <= 24; slot++) {
    await toNextSlot(clock, daemon, "pulse");
    await waitUntil(() => texts(fake).length === slot, `slot ${slot} answered`);
  }
  await daemon.whenIdle();
  expect(texts(fake)).toEqual(Array.from({ length: 24 }, () => "You said: status check"));
  expect(fake.sentMessages(alice.id).every((m) => m.reply_to === undefined)).toBe(true);
  expect(await counted(daemon, "fired")).toBe(24);
});

it("sends nothing when the answer is exactly the silent word, and keeps its own conversation apart", { timeout: 30_000 }, async () => {
  // The fake model answers `!recall` with "(nothing yet)" in a fresh conversation: the silent word here.
  const { fake, clock, launch } = await bridge([{ id: "watch", cron: "0 * * * *", prompt: "!recall", session: "own", silentWord: "(nothing yet)" }]);
  const daemon = await launch();
  await toNextSlot(clock, daemon, "watch");
  await waitUntil(async () => (await counted(daemon, "silent")) === 1, "the silent answer");
  expect(texts(fake)).toEqual([]);
  await toNextSlot(clock, daemon, "watch");
  await waitUntil(() => texts(fake).length === 1, "the second slot's answer");
  expect(texts(fake)).toEqual(["!recall"]);
  // The person's own conversation never saw the schedule's prompts.
  fake.privateText(alice, "!count");
  await waitUntil(() => texts(fake).length === 2, "the count");
  expect(texts(fake)[1]).toBe("0");
});

it("fires a slot missed while down once at the next start, and skips one past the grace time", { timeout: 30_000 }, async () => {
  const { fake, clock, launch } = await bridge([{ id: "pulse", cron: "0 * * * *", prompt: "status check", graceMs: HOUR / 2 }]);
  const first = await launch();
  await waitUntil(() => testHandle(first).schedules?.nextCheck("pulse") !== undefined, "the schedule's timer");
  await first.stop({ graceMs: 0 });
  // Down across a slot; back 10 minutes after it (within the grace): it fires once.
  clock.advance(nextSlot(hourly, clock.now())! - clock.now() + 1000);
  clock.advance(10 * 60 * 1000);
  const second = await launch();
  await waitUntil(() => texts(fake).length === 1, "the missed slot fired");
  await second.whenIdle();
  await second.stop({ graceMs: 0 });
  // Down across three slots; back 45 minutes after the last (past the grace): skipped.
  clock.advance(3 * HOUR + 35 * 60 * 1000);
  const third = await launch();
  await waitUntil(async () => (await counted(third, "skipped")) === 1, "the slot skipped");
  expect(texts(fake)).toEqual(["You said: status check"]);
  // The next slot fires as usual.
  await toNextSlot(clock, third, "pulse");
  await waitUntil(() => texts(fake).length === 2, "the next slot");
});

it("lists the schedules to an owner, and to nobody else", { timeout: 30_000 }, async () => {
  const { fake, launch } = await bridge([{ id: "inbox", cron: "0 8 * * 1-5", prompt: "summarise my inbox", timeZone: "Europe/Berlin" }]);
  await launch();
  fake.privateText(alice, "/schedule list");
  await waitUntil(() => texts(fake).length === 1, "the owner's list");
  expect(texts(fake)[0]).toMatch(
    /^Scheduled prompts \(1\):\ninbox: "0 8 \* \* 1-5" in chat 5001 \(direct\), the chat's conversation\n {2}next: \d{4}-\d\d-\d\d 08:00 \(Europe\/Berlin\); last slot: /,
  );
  fake.privateText(bob, "/schedule list");
  await waitUntil(() => texts(fake, bob.id).length === 1, "bob's answer");
  expect(texts(fake, bob.id)[0]).toBe("Only this channel's owners (access.owners) can list its schedules.");
});

it("fires every slot of a dozen every-second schedules exactly once on the real clock, each counted at the service", { timeout: 60_000 }, async () => {
  const service = await startServiceFixture("schedules-dense-");
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  const ids = Array.from({ length: 12 }, (_, i) => `s${String(i).padStart(2, "0")}`);
  const channel = {
    type: "telegram",
    id: "tg",
    token: TELEGRAM_BOT_TOKEN,
    apiRoot: fake.url,
    streaming: "off",
    setCommands: false,
    access: { users: [String(alice.id)] },
  };
  const config: DaemonConfig = {
    ...service.configFor(channel),
    logLevel: "info",
    // Silent, each in a conversation of its own: the service's log of each conversation counts its firings.
    schedules: ids.map((id) =>
      scheduleSchema.parse({
        id,
        cron: "* * * * * *",
        timeZone: "UTC",
        channel: "tg",
        chatId: String(alice.id),
        prompt: `tick ${id}`,
        session: "own",
        silentWord: `You said: tick ${id}`,
      }),
    ),
  };
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  // The real clock (none injected): its timers may fire a little early or late, as in production.
  const daemon = createDaemon({ config, logger, random: seededRandom(11) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const firings = (id: string) => logs.filter((l) => l.msg === "scheduled prompt" && l.schedule === id);
  // Four slots each: at least three slot boundaries crossed by every schedule.
  await waitUntil(() => ids.every((id) => firings(id).length >= 4), "four firings of every schedule", 30_000);
  await testHandle(daemon).schedules?.stop();
  await daemon.whenIdle();

  const answered = (id: string) =>
    Object.values(service.emulator.emulator.store.data.gateway.responses).filter((r) => r.input_text.includes(`tick ${id}`)).length;
  // A slot passed over is logged with its reason: on a starved machine a timer can be more than a
  // period late, and then (as documented) only the newest due slot fires. Every slot is accounted for.
  const passedOver = (id: string) =>
    logs
      .filter((l) => String(l.msg).startsWith("scheduled slots passed over") && l.schedule === id)
      .flatMap((l) => Array.from({ length: Number(l.slots) }, (_, i) => Date.parse(String(l.firstSlot)) + i * 1000));
  for (const id of ids) {
    const slots = firings(id).map((l) => Date.parse(String(l.slot)));
    const accounted = [...slots, ...passedOver(id)].sort((a, b) => a - b);
    // Every slot from the first to the last, once each: fired, or passed over and logged; none twice.
    expect(accounted, id).toEqual(Array.from({ length: accounted.length }, (_, i) => (accounted[0] ?? 0) + i * 1000));
    expect(firings(id).every((l) => l.outcome === "fired")).toBe(true);
    // The service was asked once per slot fired.
    expect(answered(id), id).toBe(slots.length);
  }
  // No slot missed silently, skipped or refused as not due; nothing sent to the chat (every answer was the silent word).
  expect(logs.filter((l) => /skipped|not due/.test(String(l.msg)))).toEqual([]);
  expect(texts(fake)).toEqual([]);
  const silent = [...(await daemon.metrics.text()).matchAll(/agent_bridge_scheduled_prompts_total\{schedule="[^"]+",outcome="silent"\} (\d+)/g)];
  expect(silent.reduce((n, m) => n + Number(m[1]), 0)).toBe(ids.reduce((n, id) => n + firings(id).length, 0));
});
