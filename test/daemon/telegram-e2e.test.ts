/**
 * The whole chain for Telegram: updates from the local Bot API fake, through
 * the adapter the daemon builds from its config (grammY's real client), the
 * journal, queue and relay, to the emulator over real HTTP, and the fake
 * model's answers back through sendMessage.
 */
import { expect, it, onTestFinished, vi } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeTelegram, parseTelegramHtml, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { exerciseQueueModes } from "../helpers/queue-modes.js";
import { testHandle } from "../../daemon/test-handle.js";
import { createSteppableClock, type SteppableClock } from "../helpers/steppable-clock.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };
const bob = { id: 5002, username: "bob" };
const stranger = { id: 5066, username: "stranger" };
const GROUP = -1001234;

/** The whole-reply path (`streaming: "off"`); streamed replies are tested in telegram-streaming.test.ts. */
async function bridge() {
  const service = await startServiceFixture("telegram-e2e-");
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "telegram",
    id: "tg",
    token: TELEGRAM_BOT_TOKEN,
    apiRoot: fake.url,
    streaming: "off",
    // These tests are about the answer itself: group context (its own tests: telegram-group.test.ts) stays out of the echo.
    groupContext: { enabled: false },
    access: { users: [String(alice.id), String(bob.id)], groups: { [String(GROUP)]: {} } },
  });
  const daemons: Daemon[] = [];
  // Real time, but a Bot API retry_after (whole seconds) is skipped once the daemon waits on it.
  const clock = createSteppableClock();
  const launch = async (logger?: import("pino").Logger) => {
    const daemon = createDaemon({ config, clock, random: seededRandom(3), ...(logger ? { logger } : {}) });
    daemons.push(daemon);
    onTestFinished(() => daemon.stop({ graceMs: 0 }));
    await daemon.start();
    return daemon;
  };
  return { fake, launch, clock, service, files: service.emulator.emulator.env.workspaces, instanceId: service.instanceId };
}

const texts = (fake: FakeTelegram, chat: number) => fake.sentMessages(chat).map((m) => m.text);

/**
 * Waits until the daemon waits `ms` on its clock (a 429's retry_after; none of its other
 * timers is that long here), then skips that wait. The callers count the sends afterwards:
 * one retry, no more.
 */
async function retryAfterWaited(clock: SteppableClock, ms: number): Promise<void> {
  await vi.waitFor(() => expect(clock.delays()).toContain(ms));
  clock.advance(ms);
}

it("answers a private chat with continuity, and only allowlisted people", async () => {
  const { fake, launch } = await bridge();
  await launch();
  fake.privateText(stranger, "let me in");
  for (const word of ["one", "two", "three"]) {
    fake.privateText(alice, word);
    await fake.waitFor(() => texts(fake, alice.id).some((t) => t.includes(word)));
  }
  fake.privateText(alice, "!recall");
  await fake.waitFor(() => texts(fake, alice.id).length === 4);
  expect(texts(fake, alice.id)[3]).toBe("one\ntwo\nthree");
  fake.privateText(bob, "!recall");
  await fake.waitFor(() => texts(fake, bob.id).length === 1);
  expect(texts(fake, bob.id)).toEqual(["(nothing yet)"]);
  expect(fake.sentMessages(stranger.id)).toEqual([]);
});

it("delivers a 9,000-character reply as 3 messages in order, through a 429", async () => {
  const { fake, launch, clock } = await bridge();
  const daemon = await launch();
  fake.inject429("sendMessage", 1, 1);
  fake.privateText(alice, "!long 9000");
  await retryAfterWaited(clock, 1000);
  await fake.waitFor(() => texts(fake, alice.id).length === 3, 20_000);
  const parts = fake.sentMessages(alice.id);
  expect(parts).toHaveLength(3);
  for (const p of parts) expect(p.text.length).toBeLessThanOrEqual(4096);
  // Message ids grow: the chunks went out one after another, in order.
  expect(parts.map((p) => p.message_id)).toEqual([...parts.map((p) => p.message_id)].sort((a, b) => a - b));
  await daemon.whenIdle(); // the turn is journaled as answered: whatever it sends is out
  expect(texts(fake, alice.id)).toHaveLength(3); // nothing doubled by the retry
  expect(fake.calls("sendMessage")).toBe(4); // one retry, by the core alone
});

it("a 9,000-character reply full of bold, inline code, links and & arrives as valid HTML of at most 4,096 visible characters each, no Markdown showing", async () => {
  const { fake, launch } = await bridge();
  await launch();
  const paragraphs: string[] = [];
  for (let i = 0; paragraphs.join("\n\n").length < 9000; i++) {
    paragraphs.push(
      `Step ${i}: use **bold ${i}** and \`code_${i} && x < y\` with [the docs ${i}](https://example.com/docs?a=${i}&b=2) for R&D & more, then *stress* it.`,
    );
  }
  const input = paragraphs.join("\n\n");
  expect(input.length).toBeGreaterThanOrEqual(9000);
  fake.privateText(alice, input);
  await fake.waitFor(
    () =>
      texts(fake, alice.id)
        .join("")
        .includes(`docs ${paragraphs.length - 1}`) || undefined,
    20_000,
  );
  const parts = fake.sentMessages(alice.id);
  expect(parts.length).toBeGreaterThanOrEqual(3);
  const visible = parts.map((p) => {
    expect(p.parse_mode).toBe("HTML");
    const shown = parseTelegramHtml(p.text); // throws on HTML Telegram would refuse
    expect(shown.length).toBeLessThanOrEqual(4096);
    expect(shown).not.toMatch(/\*\*|`|\]\(/);
    return shown;
  });
  const all = parts.map((p) => p.text).join("\n");
  for (let i = 0; i < paragraphs.length; i++) {
    expect(all).toContain(`<b>bold ${i}</b>`);
    expect(all).toContain(`<a href="https://example.com/docs?a=${i}&amp;b=2">the docs ${i}</a>`);
  }
  for (let i = 0; i < paragraphs.length; i++) expect(all).toContain(`<code>code_${i} &amp;&amp; x &lt; y</code>`);
  expect(all).toContain("R&amp;D &amp; more");
  expect(visible.join("")).toContain(`Step ${paragraphs.length - 1}: use bold ${paragraphs.length - 1} and code_`);
});

it("retries honour retry_after, and a permanent refusal (bot blocked) is not retried", async () => {
  const { fake, launch, clock } = await bridge();
  const daemon = await launch();
  const sendTimes: number[] = [];
  fake.onCall = (method) => {
    if (method === "sendMessage") sendTimes.push(clock.now());
  };
  fake.inject429("sendMessage", 1, 1);
  fake.privateText(alice, "after the flood");
  await retryAfterWaited(clock, 1000);
  await fake.waitFor(() => texts(fake, alice.id).length === 1);
  expect(sendTimes).toHaveLength(2);
  expect(sendTimes[1]! - sendTimes[0]!).toBeGreaterThanOrEqual(1000); // retry_after 1 s, waited by the core

  fake.injectError("sendMessage", 403, { ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" }, 10);
  fake.privateText(bob, "hello?");
  await fake.waitFor(() => sendTimes.length === 3);
  await daemon.whenIdle(); // the turn is over: nothing is left to retry
  expect(sendTimes).toHaveLength(3); // tried once, never again
  expect(await daemon.metrics.text()).toMatch(/turns_total\{instance="[^"]+",outcome="undeliverable"\} 1/);
});

it("a restart neither replays nor skips updates", async () => {
  const { fake, launch } = await bridge();
  const first = await launch();
  fake.privateText(alice, "before");
  await fake.waitFor(() => texts(fake, alice.id).length === 1);
  await first.stop({ graceMs: 1000 });
  const last = fake.privateText(alice, "while down");
  const second = await launch();
  await fake.waitFor(() => texts(fake, alice.id).length === 2);
  // Everything up to "while down" is confirmed to Telegram and answered: a replay would have been handed over and answered by now.
  await fake.waitFor(() => fake.offsets.includes(last + 1));
  await second.whenIdle();
  expect(texts(fake, alice.id)).toEqual(["You said: before", "You said: while down"]);
});

it("in a group answers only when mentioned or replied to", async () => {
  const { fake, launch } = await bridge();
  await launch();
  fake.groupText(GROUP, alice, "people talking");
  fake.groupText(GROUP, alice, "hi bot", { mention: true });
  await fake.waitFor(() => texts(fake, GROUP).length === 1);
  fake.groupText(GROUP, bob, "and me", { replyToBot: true });
  await fake.waitFor(() => texts(fake, GROUP).length === 2);
  expect(texts(fake, GROUP)).toEqual(["You said: hi bot", "You said: and me"]);
});

it("uploads a document to the instance's inbox and names it in the turn", async () => {
  const { fake, launch, files, instanceId } = await bridge();
  await launch();
  fake.document(alice, "notes.txt", Buffer.from("shopping list\n"), "read this");
  await fake.waitFor(() => texts(fake, alice.id).length === 1);
  const reply = texts(fake, alice.id)[0]!;
  const path = /inbox\/telegram\/5001\/\d+-notes\.txt/.exec(reply)?.[0];
  expect(reply.startsWith("You said: read this")).toBe(true);
  expect(path).toBeDefined();
  const { readFile } = await import("node:fs/promises");
  const { join } = await import("node:path");
  expect(await readFile(join(files.rootOf(instanceId), path!), "utf8")).toBe("shopping list\n");
});

it("logs a refused sender at info, naming their id, so the operator can allow them (README Telegram step 3)", async () => {
  const { fake, launch } = await bridge();
  const lines: string[] = [];
  const { default: pino } = await import("pino");
  const { Writable } = await import("node:stream");
  await launch(pino({ level: "info" }, new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) })));
  const id = fake.privateText(stranger, "let me in");
  await fake.waitFor(() => fake.offsets.includes(id + 1));
  await fake.waitFor(() => lines.find((l) => l.includes(String(stranger.id)) && /refused/.test(l)));
  const line = JSON.parse(lines.find((l) => l.includes(String(stranger.id)) && /refused/.test(l))!) as { level: number; msg: string; userId: string };
  expect(line.level).toBeGreaterThanOrEqual(30); // info or above: seen at the default level
  expect(line.userId).toBe(String(stranger.id));
  expect(line.msg).toContain(String(stranger.id));
  expect(fake.sentMessages(stranger.id)).toEqual([]);
});

it("queue modes: /queue collect answers what came meanwhile as one turn; /queue interrupt stops the answer for the newer message", async () => {
  const { fake, launch, service } = await bridge();
  const daemon = await launch();
  await exerciseQueueModes({
    service,
    send: (text) => fake.privateText(alice, text),
    replies: () => texts(fake, alice.id),
    queued: () => testHandle(daemon).scheduler?.depth().totalWaiting ?? 0,
  });
});
