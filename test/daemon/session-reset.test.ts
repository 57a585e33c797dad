/**
 * Session resets end to end on Telegram (the Bot API fake over real HTTP,
 * grammY's client, the emulator): the first message after the idle time or
 * the daily hour starts a fresh conversation and says so in one line; one
 * a minute earlier does not; a restart remembers when the last turn was.
 * The clock is moved, never waited on.
 */
import { expect, it, onTestFinished } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { nextDailyBoundary } from "../../daemon/core/session-reset.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };
const NOTICE = "(New conversation: the previous one was reset.)";
const MINUTE = 60_000;

async function bridge(sessionReset: Record<string, unknown>) {
  const service = await startServiceFixture("session-reset-");
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "telegram",
    id: "tg",
    token: TELEGRAM_BOT_TOKEN,
    apiRoot: fake.url,
    streaming: "off",
    access: { users: [String(alice.id)] },
    sessionReset,
  });
  const clock = createSteppableClock();
  let daemon: Daemon | undefined;
  const launch = async () => {
    daemon = createDaemon({ config, clock, random: seededRandom(5) });
    onTestFinished(() => daemon?.stop({ graceMs: 0 }));
    await daemon.start();
  };
  const restart = async () => {
    await daemon?.stop({ graceMs: 0 });
    await launch();
  };
  return { fake, clock, launch, restart };
}

/** Sends `text` and resolves with the next reply in alice's chat. */
async function ask(fake: FakeTelegram, text: string): Promise<string> {
  const before = fake.sentMessages(alice.id).length;
  fake.privateText(alice, text);
  await fake.waitFor(() => fake.sentMessages(alice.id).length > before);
  return fake.sentMessages(alice.id).at(-1)!.text;
}

it("resets after the idle time, not a minute before, and a restart remembers the last turn", async () => {
  const { fake, clock, launch, restart } = await bridge({ idleMinutes: 30 });
  await launch();
  expect(await ask(fake, "one")).toBe("You said: one");
  clock.advance(29 * MINUTE);
  // Still within the idle time: the conversation goes on, no notice.
  expect(await ask(fake, "!recall")).toBe("one");
  await restart();
  clock.advance(30 * MINUTE);
  expect(await ask(fake, "!recall")).toBe(`${NOTICE}\n\n(nothing yet)`);
  // The fresh chain goes on as usual, without the notice again, and "one" is gone from it.
  expect(await ask(fake, "two")).toBe("You said: two");
  expect(await ask(fake, "!recall")).toBe("!recall\ntwo");
});

it("resets at the daily hour in its time zone, with the notice of the config", async () => {
  const hour = (new Date().getUTCHours() + 3) % 24;
  const { fake, clock, launch } = await bridge({ daily: { atHour: hour, timeZone: "UTC" }, notice: "Fresh start." });
  await launch();
  expect(await ask(fake, "one")).toBe("You said: one");
  const boundary = nextDailyBoundary({ atHour: hour, timeZone: "UTC" }, clock.now());
  clock.advance(boundary - clock.now() - MINUTE);
  expect(await ask(fake, "!recall")).toBe("one");
  expect(await ask(fake, "/status")).toMatch(/Session resets: \d{4}-\d\d-\d\d \d\d:00 \(UTC\), the daily reset, unless \/new comes first/);
  clock.advance(MINUTE);
  expect(await ask(fake, "/status")).toContain("Session resets: with your next message (the daily reset)");
  expect(await ask(fake, "!recall")).toBe("Fresh start.\n\n(nothing yet)");
});

it("says nothing when the notice is off, and never resets without a policy", async () => {
  const { fake, clock, launch } = await bridge({ idleMinutes: 5, notice: "" });
  await launch();
  await ask(fake, "one");
  clock.advance(6 * MINUTE);
  expect(await ask(fake, "!recall")).toBe("(nothing yet)");
  expect(await ask(fake, "/status")).toMatch(/Session resets: .*after 5 minutes idle/);
});
