/**
 * Telegram forum topics as conversations of their own (issue #27): two topics
 * of one forum keep two sessions, two group contexts and their own `/new`;
 * every reply, streamed or not, and the typing indicator go back into the
 * topic asked in; General (no thread id on its messages, and refused as
 * `message_thread_id: 1` on sends) stays the group's own conversation. The
 * daemon, grammY and the emulator over real HTTP against the Bot API fake,
 * which keeps Telegram's topic rules. The emulator runs on a manual clock
 * (`!stream` moves only when the test advances it); the daemon and the fake
 * share a second one, moved on while the test waits.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { threadParameters } from "../../daemon/adapters/telegram/outbound.js";
import { CONTEXT_HEADER } from "../../daemon/core/group-context.js";
import { createDaemon } from "../../daemon/daemon.js";
import { streamText } from "../../emulator/gateway/model.js";
import { telegramMarkdownToHtml } from "../../daemon/adapters/telegram/index.js";
import { createManualClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { advanceUntil } from "../helpers/advance-until.js";
import { startServiceFixture } from "../helpers/bridge.js";

const TOKEN = "987654321:ZZZyyyXXXwwwVVVuuuTTTsssRRRqqqPPPoo";
const alice = { id: 5001, username: "alice" };
const bob = { id: 5002, username: "bob" };
const FORUM = -1005555;

async function bridge(channel: Record<string, unknown> = {}) {
  const service = await startServiceFixture("telegram-topics-");
  const time = createManualClock();
  const fake = await createFakeTelegram({ token: TOKEN, now: () => time.now() });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "telegram",
    id: "tg",
    token: TOKEN,
    apiRoot: fake.url,
    streaming: "off",
    access: { users: [String(alice.id), String(bob.id)], groups: { [String(FORUM)]: {} } },
    ...channel,
  });
  // Typing at once (no queue.typingDelayMs): these turns answer within any delay, and the cases check where typing goes.
  config.queue = { ...config.queue, typingDelayMs: 0 };
  const daemon = createDaemon({ config, clock: time, random: seededRandom(11) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const until = <T>(check: () => T | undefined | null | false) => advanceUntil(time, check, "the forum to show it");
  return { fake, until, emulatorClock: service.emulator.clock };
}

/** The bot's messages in one topic of the forum (undefined: General), as they look now. */
const inTopic = (fake: FakeTelegram, topic: number | undefined) => {
  const ids = new Set(
    fake
      .sentMessages(FORUM)
      .filter((m) => m.thread === topic)
      .map((m) => m.message_id),
  );
  return fake.shownMessages(FORUM).filter((m) => ids.has(m.message_id));
};
const textsIn = (fake: FakeTelegram, topic: number | undefined) => inTopic(fake, topic).map((m) => m.text);

/** Asks the bot in a topic and waits for the reply there: the reply's text. */
async function ask(fake: FakeTelegram, until: (check: () => string | undefined) => Promise<string>, topic: number | undefined, text: string) {
  const before = textsIn(fake, topic).length;
  fake.groupText(FORUM, alice, text, { mention: true, ...(topic !== undefined ? { topic } : {}) });
  return until(() => textsIn(fake, topic)[before]);
}

describe("the Bot API fake keeps Telegram's topic rules", () => {
  it("refuses message_thread_id 1 (General) and an unknown topic; a send quoting a topic message lands in its topic", async () => {
    const fake = await createFakeTelegram({ token: TOKEN });
    onTestFinished(() => fake.close());
    const topic = fake.createTopic(FORUM, "Plans", alice);
    const call = (method: string, body: Record<string, unknown>) =>
      fetch(`${fake.url}/bot${TOKEN}/${method}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(
        (r) => r.json() as Promise<{ ok: boolean; description?: string }>,
      );
    for (const thread of [1, 424242]) {
      expect(await call("sendMessage", { chat_id: FORUM, text: "x", message_thread_id: thread })).toEqual({
        ok: false,
        error_code: 400,
        description: "Bad Request: message thread not found",
      });
      expect((await call("sendChatAction", { chat_id: FORUM, action: "typing", message_thread_id: thread })).ok).toBe(false);
    }
    expect(fake.sentMessages(FORUM)).toEqual([]);
    fake.groupText(FORUM, alice, "in the topic", { topic });
    const asked = topic + 1;
    expect((await call("sendMessage", { chat_id: FORUM, text: "quoting", reply_parameters: { message_id: asked } })).ok).toBe(true);
    expect((await call("sendMessage", { chat_id: FORUM, text: "plain" })).ok).toBe(true);
    expect(fake.sentMessages(FORUM).map((m) => [m.text, m.thread])).toEqual([
      ["quoting", topic],
      ["plain", undefined],
    ]);
  });
});

describe("the bridge in a forum", () => {
  it("keeps two topics as two conversations: each !recall shows only its own, each reply and the typing go into the topic asked in", async () => {
    const { fake, until } = await bridge();
    const plans = fake.createTopic(FORUM, "Plans", alice);
    const bugs = fake.createTopic(FORUM, "Bugs", bob);
    expect(await ask(fake, until, plans, "apples")).toBe("You said: apples");
    expect(await ask(fake, until, bugs, "bananas")).toBe("You said: bananas");
    const plansRecall = await ask(fake, until, plans, "!recall");
    const bugsRecall = await ask(fake, until, bugs, "!recall");
    expect(plansRecall).toContain("apples");
    expect(plansRecall).not.toContain("bananas");
    expect(bugsRecall).toContain("bananas");
    expect(bugsRecall).not.toContain("apples");
    // Nothing went to General; every send named its topic, and so did typing (it quotes nothing: only the thread id puts it there).
    expect(textsIn(fake, undefined)).toEqual([]);
    for (const sent of fake.sentMessages(FORUM)) expect(sent.message_thread_id).toBe(sent.thread);
    const typing = fake.chatActions.filter((a) => a.chat_id === String(FORUM));
    expect(new Set(typing.map((a) => a.thread))).toEqual(new Set([plans, bugs]));
    // The 👀 on each question, taken off once answered.
    expect(fake.reactionLog.filter((r) => r.emoji === "👀")).toHaveLength(4);
  });

  it("answers in General without a thread id (Telegram refuses General's 1), as the group's own conversation apart from the topics", async () => {
    const { fake, until } = await bridge();
    const plans = fake.createTopic(FORUM, "Plans", alice);
    expect(await ask(fake, until, undefined, "general words")).toBe("You said: general words");
    expect(await ask(fake, until, plans, "topic words")).toBe("You said: topic words");
    const recall = await ask(fake, until, undefined, "!recall");
    expect(recall).toContain("general words");
    expect(recall).not.toContain("topic words");
    expect(fake.chatActions.filter((a) => a.chat_id === String(FORUM) && a.thread === undefined).length).toBeGreaterThan(0);
    for (const sent of fake.sentMessages(FORUM).filter((m) => m.thread === undefined)) expect(sent).not.toHaveProperty("message_thread_id");
  });

  it("keeps each topic's unaddressed messages as that topic's context, and /new starts afresh in one topic only", async () => {
    const { fake, until } = await bridge();
    const plans = fake.createTopic(FORUM, "Plans", alice);
    const bugs = fake.createTopic(FORUM, "Bugs", alice);
    fake.groupText(FORUM, bob, "lunch at noon?", { topic: plans });
    expect(await ask(fake, until, bugs, "any news?")).toBe("You said: any news?");
    expect(await ask(fake, until, plans, "what do you think?")).toBe(
      `You said: ${CONTEXT_HEADER}\n[bob] lunch at noon?\n\nAddressed to you by [alice]:\nwhat do you think?`,
    );
    await ask(fake, until, plans, "/new");
    expect(await ask(fake, until, plans, "!recall")).not.toContain("what do you think?");
    expect(await ask(fake, until, bugs, "!recall")).toContain("any news?");
  });

  it("does not take a topic the bot opened as a reply to the bot: an unaddressed message there is context, not a question", async () => {
    const { fake, until } = await bridge();
    const opened = fake.createTopic(FORUM, "Bot's topic");
    fake.groupText(FORUM, bob, "just chatting", { topic: opened });
    expect(await ask(fake, until, opened, "and you?")).toBe(`You said: ${CONTEXT_HEADER}\n[bob] just chatting\n\nAddressed to you by [alice]:\nand you?`);
    expect(textsIn(fake, opened)).toHaveLength(1);
  });

  it("sends a file the agent names into the topic asked in, naming it", async () => {
    const { fake, until } = await bridge();
    const plans = fake.createTopic(FORUM, "Plans", alice);
    fake.groupText(FORUM, alice, "!file chart.png", { mention: true, topic: plans });
    const file = await until(() => fake.sentFiles(FORUM)[0]);
    expect(file).toMatchObject({ method: "sendPhoto", file_name: "chart.png", thread: plans, message_thread_id: plans });
    expect(textsIn(fake, plans)).toEqual(["Here is chart.png."]);
  });

  it("streams a reply in place inside its topic: the preview and the answer are one message there", async () => {
    const { fake, until, emulatorClock } = await bridge({ streaming: "partial" });
    const plans = fake.createTopic(FORUM, "Plans", alice);
    fake.groupText(FORUM, alice, "!stream 4", { mention: true, topic: plans });
    const first = await until(() => inTopic(fake, plans)[0]);
    emulatorClock.advance(4000);
    const answer = telegramMarkdownToHtml(streamText(600));
    await until(() => inTopic(fake, plans)[0]?.text === answer || undefined);
    expect(inTopic(fake, plans).map((m) => m.message_id)).toEqual([first.message_id]);
    expect(fake.sentMessages(FORUM)[0]!.message_thread_id).toBe(plans);
    expect(fake.sentMessages(FORUM)).toHaveLength(1);
  });
});

it("names a topic on every send, but never General's id 1 nor a chat without topics", () => {
  expect(threadParameters({ threadId: "9" })).toEqual({ message_thread_id: 9 });
  expect(threadParameters({ threadId: "1" })).toEqual({});
  expect(threadParameters({})).toEqual({});
});
