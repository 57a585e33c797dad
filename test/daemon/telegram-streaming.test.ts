/**
 * Streamed replies on Telegram, end to end: the Bot API fake (grammY's real
 * client), the daemon's relay and journal, the emulator over real HTTP. The
 * emulator runs on a manual clock, so the gateway's `!stream S` moves only
 * when the test advances it: text seen before the clock reaches S was seen
 * before the gateway completed the answer. The daemon and the Bot API fake
 * share a second manual clock (`time`), moved on while the test waits: the
 * one-second edit pace and Telegram's retry_after are kept exactly, in
 * daemon time, without waiting for them in real time.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it, onTestFinished, vi } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { splitReply } from "../../daemon/core/chunking.js";
import { telegramMarkdownToHtml, telegramVisibleLength } from "../../daemon/adapters/telegram/index.js";
import { streamText } from "../../emulator/gateway/model.js";
import { createManualClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { advanceUntil, advanceUntilSettled } from "../helpers/advance-until.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { testHandle } from "../../daemon/test-handle.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };

async function bridge(channel: Record<string, unknown> = {}) {
  const service = await startServiceFixture("telegram-stream-");
  const time = createManualClock();
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN, now: () => time.now() });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "telegram",
    id: "tg",
    token: TELEGRAM_BOT_TOKEN,
    apiRoot: fake.url,
    access: { users: [String(alice.id)] },
    ...channel,
  });
  const launch = async (): Promise<Daemon> => {
    const daemon = createDaemon({ config, clock: time, random: seededRandom(3) });
    onTestFinished(() => daemon.stop({ graceMs: 0 }));
    await daemon.start();
    return daemon;
  };
  /** A fault rule through the emulator's control plane. */
  const fault = async (rule: Record<string, unknown>) => {
    const res = await fetch(`${config.service.baseUrl}/_emulator/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(rule),
    });
    expect(res.status).toBeLessThan(300);
  };
  /** Waits for `check`, moving the daemon's clock on meanwhile. */
  const until = <T>(check: () => T | undefined | null | false, timeout?: number) =>
    advanceUntil(time, check, "the chat to show it", timeout ? { timeout } : {});
  const idle = (daemon: Daemon) => advanceUntilSettled(time, daemon.whenIdle(), "the daemon idle");
  return { fake, launch, clock: service.emulator.clock, time, until, idle, fault, dataDir: config.dataDir };
}

/** What the non-streamed path sends for `text`: its measure-aware chunks, rendered. */
const expectedMessages = (text: string) =>
  splitReply(text, 4096, (c) => telegramVisibleLength(telegramMarkdownToHtml(c))).map((c) => telegramMarkdownToHtml(c));

const shown = (fake: FakeTelegram) => fake.shownMessages(alice.id);

/** Every operation (send or edit) in the chat, in time order. */
const operationTimes = (fake: FakeTelegram) =>
  shown(fake)
    .flatMap((m) => m.versions.map((v) => v.at))
    .sort((a, b) => a - b);

it("!stream 6: the first text shows before the gateway completes, the message is edited in place (a second apart at most once), and ends as the answer exactly", async () => {
  const { fake, launch, clock, until } = await bridge();
  await launch();
  fake.privateText(alice, "!stream 6");
  // The gateway sends its first delta at once; its clock has not moved, so it cannot have completed.
  const first = await until(() => shown(fake)[0]);
  const answer = streamText(600);
  expect(first.versions[0]!.text.length).toBeLessThan(telegramMarkdownToHtml(answer).length);
  expect(fake.sentMessages(alice.id)).toHaveLength(1);

  // Half the answer: the same message grows.
  clock.advance(3000);
  await until(() => (shown(fake)[0]?.versions.length ?? 0) >= 2 || undefined);
  clock.advance(3000);
  const final = expectedMessages(answer);
  await until(() => JSON.stringify(shown(fake).map((m) => m.text)) === JSON.stringify(final) || undefined);

  const messages = shown(fake);
  expect(messages).toHaveLength(1); // one message per chunk, nothing sent twice
  expect(messages[0]!.message_id).toBe(first.message_id); // the preview became the answer
  expect(messages[0]!.parse_mode).toBe("HTML");
  expect(fake.sentMessages(alice.id)).toHaveLength(1);
  const times = operationTimes(fake);
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(950); // 1 s throttle, network jitter aside
});

it("a 9,000-character streamed reply ends as the same formatted messages as the non-streamed split", async () => {
  const { fake, launch, clock, until } = await bridge();
  await launch();
  fake.privateText(alice, "!stream 2 9000");
  await until(() => shown(fake)[0]);
  clock.advance(2000);
  const final = expectedMessages(streamText(9000));
  expect(final.length).toBeGreaterThanOrEqual(3);
  await until(() => JSON.stringify(shown(fake).map((m) => m.text)) === JSON.stringify(final) || undefined, 20_000);
  expect(fake.sentMessages(alice.id)).toHaveLength(final.length); // exactly one message per chunk
  for (const m of shown(fake)) expect(m.parse_mode).toBe("HTML");
  const times = operationTimes(fake);
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(950);
});

it("an edit refused with 429 waits out retry_after, and the answer still ends complete in the same message", async () => {
  const { fake, launch, clock, until } = await bridge();
  await launch();
  // Telegram's flood limit, stricter than the daemon's pace: edits closer than 2.5 s get a 429 retry_after.
  fake.setEditInterval(2500);
  fake.privateText(alice, "!stream 4");
  const first = await until(() => shown(fake)[0]);
  clock.advance(1000);
  await until(() => fake.edits.length >= 1 || undefined);
  clock.advance(1000);
  // The next edit comes a second later and is refused (2.5 s since the last one).
  await until(() => fake.calls("editMessageText") > fake.edits.length || undefined);
  clock.advance(2000);
  const final = expectedMessages(streamText(600));
  await until(() => JSON.stringify(shown(fake).map((m) => m.text)) === JSON.stringify(final) || undefined, 15_000);
  expect(shown(fake).map((m) => m.message_id)).toEqual([first.message_id]);
  expect(fake.sentMessages(alice.id)).toHaveLength(1);
  // Each refused edit was tried again only after its retry_after (2 s): a second a try would be refused more.
  expect(fake.calls("editMessageText") - fake.edits.length).toBeLessThanOrEqual(2);
});

it("a stream cut after text was shown is asked again: the same message ends as the answer, nothing shown twice, the input once in !recall", async () => {
  const { fake, launch, clock, time, until, fault } = await bridge();
  const daemon = await launch();
  await fault({ target: "gateway", error: "reset", after_deltas: 4, times: 1 });
  fake.privateText(alice, "!stream 2");
  const first = await until(() => shown(fake)[0]);
  const final = expectedMessages(streamText(600));
  // Moves the gateway on until the cut attempt is retried and the retry completes.
  await vi.waitFor(
    () => {
      clock.advance(250);
      time.advance(250); // the daemon's retry backoff and edit pace
      expect(shown(fake).map((m) => m.text)).toEqual(final);
    },
    { timeout: 20_000, interval: 5 },
  );
  expect(shown(fake).map((m) => m.message_id)).toEqual([first.message_id]);
  expect(fake.sentMessages(alice.id)).toHaveLength(1);
  expect(await daemon.metrics.text()).toMatch(/retries_total\{[^}]*reason="network"[^}]*\} 1/); // the cut happened, and was retried once
  fake.privateText(alice, "!recall");
  await until(() => (shown(fake)[1]?.text === "!stream 2" ? true : undefined));
});

it("an edit refused for good (the preview was deleted) degrades to sending the final text once, never silence", async () => {
  const { fake, launch, clock, until, idle } = await bridge();
  const daemon = await launch();
  fake.injectError("editMessageText", 400, { ok: false, error_code: 400, description: "Bad Request: message to edit not found" }, 100);
  fake.privateText(alice, "!stream 2");
  await until(() => shown(fake)[0]);
  clock.advance(1000);
  await until(() => fake.calls("editMessageText") >= 1 || undefined);
  clock.advance(1000);
  const final = expectedMessages(streamText(600));
  await until(() => (fake.sentMessages(alice.id).length === 2 ? true : undefined));
  await idle(daemon);
  const sent = fake.sentMessages(alice.id);
  expect(sent[1]!.text).toBe(final[0]); // the final text, once, in a new message
  expect(sent).toHaveLength(2);
  expect(fake.calls("editMessageText")).toBe(1); // no further edits after a permanent refusal
});

it("a crash after the answer was recorded, before the last edit: the restart finishes the same message without asking again", async () => {
  const { fake, launch, clock, until, dataDir } = await bridge();
  const first = await launch();
  fake.privateText(alice, "!stream 2");
  const preview = await until(() => shown(fake)[0]);
  clock.advance(1000);
  await until(() => fake.edits.length >= 1 || undefined);
  // From now on Telegram refuses edits for a minute: the final edit waits, and the daemon dies meanwhile.
  fake.setEditInterval(60_000);
  clock.advance(1000);
  await until(() => fake.calls("editMessageText") > fake.edits.length || undefined);
  expect(readFileSync(join(dataDir, "journal.jsonl"), "utf8")).toContain('{"t":"reply"');
  await testHandle(first).crash();
  const halfway = shown(fake)[0]!.text;

  fake.setEditInterval(0);
  // The emulator's clock does not move again: a second call for `!stream 2` could never complete,
  // so the final text below can only come from the recorded answer.
  await launch();
  const final = expectedMessages(streamText(600));
  expect(halfway).not.toBe(final[0]);
  await until(() => JSON.stringify(shown(fake).map((m) => m.text)) === JSON.stringify(final) || undefined);
  expect(shown(fake).map((m) => m.message_id)).toEqual([preview.message_id]);
  expect(fake.sentMessages(alice.id)).toHaveLength(1);
  // The conversation holds the input once, and the chain goes on from the recorded answer.
  fake.privateText(alice, "!recall");
  await until(() => (shown(fake)[1]?.text === "!stream 2" ? true : undefined));
});

it("/stop during !stream 30 ends the turn at once, marks the preview stopped, drops the queued messages and says how many", async () => {
  const { fake, launch, until, idle } = await bridge();
  const daemon = await launch();
  fake.privateText(alice, "!stream 30");
  const first = await until(() => shown(fake)[0]);
  fake.privateText(alice, "queued one");
  fake.privateText(alice, "queued two");
  await until(() => Number(daemon.health().queued) >= 2 || undefined);
  fake.privateText(alice, "/stop");
  // The emulator's clock never moves: the answer cannot complete, only the stop ends it.
  await until(() => shown(fake).some((m) => m.text.includes("Dropped 2 queued messages")) || undefined);
  await until(() => shown(fake)[0]!.text.endsWith("(stopped)") || undefined);
  await idle(daemon);
  expect(shown(fake)[0]!.message_id).toBe(first.message_id);
  // The stream was closed before it completed: the gateway stored nothing of it.
  fake.privateText(alice, "!recall");
  await until(() => shown(fake).some((m) => m.text === "(nothing yet)") || undefined);
  expect(shown(fake).some((m) => m.text.includes("queued one"))).toBe(false);
});

it('with streaming "off", /stop still ends a slow turn at once: no answer comes, and the person is told', async () => {
  const { fake, launch, until, idle } = await bridge({ streaming: "off" });
  const daemon = await launch();
  // Not streamed, `!stream 30` is an answer after 30 s of the emulator's clock, which never moves here.
  fake.privateText(alice, "!stream 30");
  await until(() => fake.chatActions.length > 0 || undefined);
  fake.privateText(alice, "/stop");
  await until(() => shown(fake).find((m) => m.text.startsWith("Stopped the answer in progress.")));
  await idle(daemon);
  expect(shown(fake)).toHaveLength(1);
});
