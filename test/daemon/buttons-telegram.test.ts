/**
 * Questions with buttons on Telegram: the emulator's fake model asks with the
 * bridge's tools (`!ask`, `!confirm`), the real adapter (grammY) shows an
 * inline keyboard on the project's fake Bot API, a tap comes back as a
 * callback query, is answered at once, and goes to the agent as the call's
 * output on the same chain; the keyboard goes and the message says who chose
 * what. Exactly once: a double tap is one answer; someone else's tap in a
 * group never reaches the agent; an unanswered question expires.
 */
import { expect, it, onTestFinished, vi } from "vitest";
import { createDaemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };
const bob = { id: 5002, username: "bob" };
const GROUP = -1001234;

async function bridge(buttons: Record<string, unknown> = { tools: ["choice", "confirm"] }, streaming: "off" | "partial" = "off") {
  const service = await startServiceFixture("buttons-telegram-");
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "telegram",
    id: "tg",
    token: TELEGRAM_BOT_TOKEN,
    apiRoot: fake.url,
    streaming,
    access: { users: [String(alice.id), String(bob.id)], groups: { [String(GROUP)]: {} } },
    buttons,
  });
  const clock = createSteppableClock();
  const daemon = createDaemon({ config, clock, random: seededRandom(3) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const counted = async (event: string) =>
    Number(new RegExp(`agent_bridge_questions_total\\{event="${event}"\\} (\\d+)`).exec(await daemon.metrics.text())?.[1] ?? 0);
  return { fake, clock, counted };
}

const texts = (fake: FakeTelegram, chat: number) => fake.sentMessages(chat).map((m) => m.text);
const questionIn = (fake: FakeTelegram, chat: number) => fake.waitFor(() => fake.sentMessages(chat).find((m) => m.keyboard));

it("a choice: an inline keyboard, a tap answered at once, the agent's next answer, the keyboard replaced by who chose what", async () => {
  const { fake } = await bridge();
  expect(fake.allowedUpdates ?? []).toEqual([]);
  fake.privateText(alice, "!ask Deploy where? | staging | production");
  const question = await questionIn(fake, alice.id);
  expect(fake.allowedUpdates).toContain("callback_query");
  expect(texts(fake, alice.id)).toContain("I need a decision.");
  expect(question.text).toBe("Deploy where?");
  const buttons = question.keyboard!.flat();
  expect(buttons.map((b) => b.text)).toEqual(["staging", "production"]);
  for (const b of buttons) expect(Buffer.byteLength(b.callback_data)).toBeLessThanOrEqual(64);

  const tap = fake.tap(alice.id, question.message_id, alice, buttons[1]!.callback_data);
  await fake.waitFor(() => texts(fake, alice.id).find((t) => /returned: production/.test(t)));
  expect(fake.callbackAnswers).toContainEqual({ id: tap, text: "Got it." });
  const shown = await fake.waitFor(() => fake.shownMessages(alice.id).find((m) => m.message_id === question.message_id && !m.keyboard));
  expect(shown.text).toBe("Deploy where?\nproduction: chosen by alice");

  // A second tap (a double tap, or on the keyboard just removed) is told, and never reaches the agent.
  const again = fake.tap(alice.id, question.message_id, alice, buttons[0]!.callback_data);
  await fake.waitFor(() => fake.callbackAnswers.find((a) => a.id === again));
  expect(fake.callbackAnswers.find((a) => a.id === again)?.text).toBe("Already answered.");
  const before = texts(fake, alice.id).length;
  fake.privateText(alice, "after");
  await fake.waitFor(() => texts(fake, alice.id).length > before || undefined);
  expect(texts(fake, alice.id).filter((t) => /returned:/.test(t))).toHaveLength(1);
});

it("a double tap before the answer is one answer", async () => {
  const { fake } = await bridge();
  fake.privateText(alice, "!confirm Send the report to Ann");
  const question = await questionIn(fake, alice.id);
  const [approve] = question.keyboard!.flat();
  const first = fake.tap(alice.id, question.message_id, alice, approve!.callback_data);
  const second = fake.tap(alice.id, question.message_id, alice, approve!.callback_data);
  await fake.waitFor(() => texts(fake, alice.id).find((t) => /returned: approved/.test(t)));
  await fake.waitFor(() => fake.callbackAnswers.length === 2 || undefined);
  expect(fake.callbackAnswers.map((a) => [a.id, a.text])).toEqual([
    [first, "Got it."],
    [second, "Already answered."],
  ]);
  expect(texts(fake, alice.id).filter((t) => /returned:/.test(t))).toHaveLength(1);
});

it("in a group only the asker may answer: someone else's tap is refused and never reaches the agent", async () => {
  const { fake, counted } = await bridge();
  fake.groupText(GROUP, alice, "!ask Deploy where? | staging | production", { mention: true });
  const question = await questionIn(fake, GROUP);
  const [staging] = question.keyboard!.flat();
  const bobs = fake.tap(GROUP, question.message_id, bob, staging!.callback_data, { group: true });
  await fake.waitFor(() => fake.callbackAnswers.find((a) => a.id === bobs));
  expect(fake.callbackAnswers.find((a) => a.id === bobs)?.text).toBe("This question is not yours to answer.");
  expect(texts(fake, GROUP).some((t) => /returned:/.test(t))).toBe(false);
  // Chatter in the group (kept as context for the next mention) does not spoil the tap.
  fake.groupText(GROUP, bob, "lunch anyone?");
  await fake.waitFor(() => fake.pending() === 0 || undefined);
  fake.tap(GROUP, question.message_id, alice, staging!.callback_data, { group: true });
  await fake.waitFor(() => texts(fake, GROUP).find((t) => /returned: staging/.test(t)));
  await vi.waitFor(async () => expect(await counted("answered")).toBe(1));
  expect(await counted("asked")).toBe(1);
  expect(await counted("refused_tap")).toBe(1);
});

it("an unanswered question expires: its keyboard goes and the agent is told there was no answer", async () => {
  const { fake, clock, counted } = await bridge({ tools: ["choice"], expireMinutes: 1 });
  fake.privateText(alice, "!ask Deploy where? | staging | production");
  const question = await questionIn(fake, alice.id);
  await vi.waitFor(() => expect(clock.delays().some((d) => d > 55_000 && d <= 60_000)).toBe(true));
  clock.advance(60_000);
  await fake.waitFor(() => texts(fake, alice.id).find((t) => /returned: No answer: the person did not answer in time/.test(t)));
  const shown = await fake.waitFor(() => fake.shownMessages(alice.id).find((m) => m.message_id === question.message_id && !m.keyboard));
  expect(shown.text).toBe("Deploy where?\nNo answer in time.");
  const late = fake.tap(alice.id, question.message_id, alice, question.keyboard![0]![0]!.callback_data);
  await fake.waitFor(() => fake.callbackAnswers.find((a) => a.id === late));
  expect(fake.callbackAnswers.find((a) => a.id === late)?.text).toBe("Already answered.");
  expect(await counted("expired")).toBe(1);
  expect(await counted("answered")).toBe(0);
});

it("/new closes an open question: its keyboard goes, and a later tap is told it is answered", async () => {
  const { fake } = await bridge();
  fake.privateText(alice, "!ask Deploy where? | staging | production");
  const question = await questionIn(fake, alice.id);
  fake.privateText(alice, "/new");
  const shown = await fake.waitFor(() => fake.shownMessages(alice.id).find((m) => m.message_id === question.message_id && !m.keyboard));
  expect(shown.text).toBe("Deploy where?\nClosed: a new conversation started.");
  const late = fake.tap(alice.id, question.message_id, alice, question.keyboard![0]![0]!.callback_data);
  await fake.waitFor(() => fake.callbackAnswers.find((a) => a.id === late));
  expect(fake.callbackAnswers.find((a) => a.id === late)?.text).toBe("Already answered.");
  expect(texts(fake, alice.id).some((t) => /returned:/.test(t))).toBe(false);
});

it("with streamed replies (Telegram's default) the question follows the finished reply", async () => {
  const { fake } = await bridge(undefined, "partial");
  fake.privateText(alice, "!ask Deploy where? | staging | production");
  const question = await questionIn(fake, alice.id);
  fake.tap(alice.id, question.message_id, alice, question.keyboard![0]![1]!.callback_data);
  await fake.waitFor(() => fake.shownMessages(alice.id).find((m) => /returned: production/.test(m.text)));
});
