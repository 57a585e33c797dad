/**
 * What is particular to LINE, against the fake LINE (test/fakes/line.ts) driving
 * the real adapter over real HTTP: signatures refused, redeliveries answered
 * once, the reply token used within its life and once, push only after (with
 * a retry key that keeps a retried push from arriving twice), rate limits and
 * the month's quota, dropped connections, the loading animation, mentions,
 * and content in (audio marked for transcription).
 */
import pino from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLineAdapter, REPLY_TOKEN_LIFE_MS } from "../../daemon/adapters/line/index.js";
import { type ChatTarget, type InboundMessage, type InboundSink, SendError } from "../../daemon/vocabulary/adapter.js";
import { createManualClock } from "../../shared/clock.js";
import { createFakeLine, type FakeLine } from "../fakes/line.js";
import { admitUpTo } from "../fakes/sink.js";
import { lineChannelFor } from "../helpers/line-setup.js";
import { waitUntil } from "../helpers/wait.js";
import { logCollector } from "./adapters/harness/harness.js";

const TOKEN = "lineTestChannelAccessTokenThatMustStaySecret0123456789abcdef=";
const SECRET = "fedcba9876543210fedcba9876543210";
const ALICE = { userId: `U${"1".repeat(32)}` };
const GROUP = { userId: ALICE.userId, group: `C${"2".repeat(32)}` };

const clock = createManualClock(Date.now());
const logs = logCollector();
let fake: FakeLine;
let adapter: ReturnType<typeof createLineAdapter>;
const offered: InboundMessage[] = [];
const accepted: InboundMessage[] = [];
/** Texts whose next accept fails (the journal was down). */
const failOnce = new Set<string>();
/** What the adapter told /metrics (AdapterDeps.countSend). */
const counted: string[] = [];

const sink: InboundSink = {
  async accept(message) {
    offered.push(message);
    if (failOnce.delete(message.text)) throw new Error("journal unavailable");
    if (accepted.some((m) => m.messageId === message.messageId)) return { status: "duplicate", acknowledge: true };
    accepted.push(message);
    return { status: "accepted", acknowledge: true };
  },
  admit: admitUpTo(1024 * 1024),
  status: () => undefined,
};

const targetOf = (m: InboundMessage): ChatTarget => ({
  platform: "line",
  accountId: m.accountId,
  chatId: m.chatId,
  chatType: m.chatType,
  replyToMessageId: m.messageId,
});
const taken = (text: string) => waitUntil(() => accepted.find((m) => m.text === text), `"${text}" taken`);

beforeAll(async () => {
  fake = await createFakeLine({ channelAccessToken: TOKEN, channelSecret: SECRET, redelivery: true, quota: 1000, now: () => clock.now() });
  const channel = lineChannelFor(fake, { token: TOKEN, secret: SECRET }, { webhook_redelivery: true, quota_warning: 0.5 });
  adapter = createLineAdapter(
    channel,
    {
      logger: pino({ level: "debug" }, logs),
      state: { get: () => undefined, set: async () => undefined },
      dataDir: "/nonexistent",
      clock,
      maxAttachmentBytes: 1024 * 1024,
      countSend: (kind) => void counted.push(kind),
    },
    { onListening: (url) => fake.setWebhookUrl(`${url}${channel.http.path}`) },
  );
  await adapter.start(sink);
});

afterAll(async () => {
  await adapter?.stop();
  await fake?.close();
  for (const secret of [TOKEN, SECRET]) expect(logs.text()).not.toContain(secret);
});

beforeEach(() => {
  fake.rateLimit(0);
});

describe("LINE webhook verification", () => {
  const body = (text: string) => ({
    destination: fake.bot.userId,
    events: [
      {
        type: "message",
        mode: "active",
        timestamp: Date.now(),
        source: { type: "user", userId: ALICE.userId },
        webhookEventId: `01FORGED${text.length}`,
        deliveryContext: { isRedelivery: false },
        replyToken: "f".repeat(32),
        message: { type: "text", id: `9${text.length}`, text, quoteToken: "q" },
      },
    ],
  });

  it("refuses a body signed with another secret, or not signed, and takes nothing from it", async () => {
    expect(await fake.post(body("forged one"), { secret: "00000000000000000000000000000000" })).toBe(401);
    expect(await fake.post(body("forged two"), { signature: null })).toBe(401);
    // A signature of another body: the bytes are what is signed.
    expect(await fake.post(body("forged three!"), { signature: "c2lnbmVkIHNvbWV0aGluZyBlbHNl" })).toBe(401);
    expect(offered.filter((m) => m.text.startsWith("forged"))).toEqual([]);
  });

  it("answers LINE's Verify (no events) with 200", async () => {
    expect(await fake.post({ destination: fake.bot.userId, events: [] })).toBe(200);
  });
});

describe("LINE redelivery", () => {
  it("answers a redelivered event once: the core sees it once", async () => {
    const event = await fake.say(ALICE, "only once please");
    expect(event.status).toBe(200);
    await taken("only once please");
    expect(await fake.redeliver(event)).toBe(200);
    expect(offered.filter((m) => m.text === "only once please")).toHaveLength(1);
  });

  it("answers 500 when the core could not take an event, and takes LINE's redelivery; its answer is pushed", async () => {
    failOnce.add("journal was down");
    const event = await fake.say(ALICE, "journal was down");
    expect(fake.deliveries.filter((d) => d.webhookEventId === event.webhookEventId).map((d) => [d.redelivery, d.status])).toEqual([
      [false, 500],
      [true, 200],
    ]);
    const message = await taken("journal was down");
    const before = { ...fake.usage };
    await adapter.send(targetOf(message), "answer to a redelivered event", { format: "plain" });
    // A redelivered event's reply token is not trusted: pushed.
    expect(fake.usage).toMatchObject({ reply: before.reply, push: before.push + 1 });
  });
});

describe("LINE replies: reply token while it lives, push after", () => {
  it("answers with the reply token (free), quoting the message; the token serves once, the next send is pushed", async () => {
    await fake.say(ALICE, "two parts please");
    const message = await taken("two parts please");
    const before = { ...fake.usage };
    await adapter.send(targetOf(message), "part one", { format: "plain" });
    await adapter.send(targetOf(message), "part two", { format: "plain" });
    expect(fake.usage).toMatchObject({ reply: before.reply + 1, push: before.push + 1 });
    const shown = fake.messages(ALICE.userId);
    expect(shown.at(-2)).toMatchObject({ text: "part one", via: "reply" });
    expect(shown.at(-2)?.quoteToken).toMatch(/\S/);
    expect(shown.at(-1)).toMatchObject({ text: "part two", via: "push", quoteToken: undefined });
    // /metrics hears of both kinds.
    expect(counted.slice(-2)).toEqual(["reply", "push"]);
  });

  it("sends a long answer in one call of up to five text objects within 5,000 characters each", async () => {
    await fake.say(ALICE, "a long one");
    const message = await taken("a long one");
    const long = Array.from({ length: 2400 }, (_, i) => `word${i}`).join(" ");
    expect(adapter.measure(long, "plain")).toBeLessThanOrEqual(adapter.limits.maxMessageLength);
    const before = { ...fake.usage };
    const shownBefore = fake.messages(ALICE.userId).length;
    await adapter.send(targetOf(message), long, { format: "plain" });
    expect(fake.usage.reply).toBe(before.reply + 1);
    const parts = fake.messages(ALICE.userId).slice(shownBefore);
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.length).toBeLessThanOrEqual(5);
    for (const part of parts) expect(part.text!.length).toBeLessThanOrEqual(5000);
    expect(parts.map((p) => p.text).join(" ")).toBe(long);
  });

  it("pushes when LINE refuses the token as expired", async () => {
    await fake.say(ALICE, "slow answer at LINE");
    const message = await taken("slow answer at LINE");
    fake.age(61_000);
    const before = { ...fake.usage };
    await adapter.send(targetOf(message), "late but here", { format: "plain" });
    expect(fake.usage).toMatchObject({ reply: before.reply, push: before.push + 1 });
    expect(fake.messages(ALICE.userId).at(-1)).toMatchObject({ text: "late but here", via: "push" });
  });

  it("pushes without trying a token older than its life", async () => {
    await fake.say(ALICE, "slow agent");
    const message = await taken("slow agent");
    clock.advance(REPLY_TOKEN_LIFE_MS + 1000);
    const calls = fake.usage.reply;
    await adapter.send(targetOf(message), "after a long think", { format: "plain" });
    expect(fake.usage.reply).toBe(calls);
    expect(fake.messages(ALICE.userId).at(-1)).toMatchObject({ text: "after a long think", via: "push" });
  });
});

describe("LINE faults", () => {
  it("a push whose answer was lost is retried under the same retry key: LINE answers 409, it shows once", async () => {
    await fake.say(ALICE, "lossy push");
    const message = await taken("lossy push");
    clock.advance(REPLY_TOKEN_LIFE_MS + 1000);
    fake.dropNext();
    const lost = await adapter.send(targetOf(message), "pushed once only", { format: "plain" }).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(SendError);
    expect((lost as SendError).permanent).toBe(false);
    const refused = fake.usage.refused409;
    await adapter.send(targetOf(message), "pushed once only", { format: "plain" });
    expect(fake.usage.refused409).toBe(refused + 1);
    expect(fake.messages(ALICE.userId).filter((m) => m.text === "pushed once only")).toHaveLength(1);
  });

  it("a reply whose answer was lost is not sent again: the token's refusal then means it went through", async () => {
    await fake.say(ALICE, "lossy reply");
    const message = await taken("lossy reply");
    fake.dropNext();
    const lost = await adapter.send(targetOf(message), "replied once only", { format: "plain" }).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(SendError);
    await adapter.send(targetOf(message), "replied once only", { format: "plain" });
    expect(fake.messages(ALICE.userId).filter((m) => m.text === "replied once only")).toHaveLength(1);
  });

  it("a 429 is a transient SendError and sends nothing; the retry goes through", async () => {
    await fake.say(ALICE, "busy LINE");
    const message = await taken("busy LINE");
    fake.rateLimit(1);
    const limited = await adapter.send(targetOf(message), "after the limit", { format: "plain" }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(SendError);
    expect(limited).toMatchObject({ permanent: false, status: 429 });
    expect(fake.messages(ALICE.userId).some((m) => m.text === "after the limit")).toBe(false);
    await adapter.send(targetOf(message), "after the limit", { format: "plain" });
    expect(fake.messages(ALICE.userId).filter((m) => m.text === "after the limit")).toHaveLength(1);
  });

  it("warns when the push quota runs low", async () => {
    // quota_warning 0.5 of 1000: push past half of it.
    fake.usage.push = 600;
    clock.advance(11 * 60 * 1000);
    await fake.say(ALICE, "quota check");
    const message = await taken("quota check");
    clock.advance(REPLY_TOKEN_LIFE_MS + 1000);
    await adapter.send(targetOf(message), "costs quota", { format: "plain" });
    await waitUntil(() => logs.text().includes("quota running low"), "the quota warning");
  });

  it("the month's quota used up is a permanent SendError", async () => {
    fake.usage.push = 1000;
    await fake.say(ALICE, "no quota left");
    const message = await taken("no quota left");
    clock.advance(REPLY_TOKEN_LIFE_MS + 1000);
    const refused = await adapter.send(targetOf(message), "cannot push", { format: "plain" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ permanent: true, status: 429 });
    fake.usage.push = 0;
  });
});

describe("LINE chats", () => {
  it("shows the loading animation in one-to-one chats only", async () => {
    await fake.say(ALICE, "working?");
    const direct = await taken("working?");
    await adapter.sendTyping(targetOf(direct));
    expect(fake.loading.at(-1)).toEqual({ chatId: ALICE.userId, loadingSeconds: 20 });
    const count = fake.loading.length;
    await fake.say(GROUP, "group working?", { mentionBot: true });
    const group = await taken("group working?");
    await adapter.sendTyping(targetOf(group));
    expect(fake.loading).toHaveLength(count);
  });

  it("marks a group message mentioned only when the bot is mentioned, and cuts the mention", async () => {
    await fake.say(GROUP, "talking among ourselves");
    await fake.say(GROUP, "over to you", { mentionBot: true });
    const unaddressed = await taken("talking among ourselves");
    const addressed = await taken("over to you");
    expect(unaddressed).toMatchObject({ chatType: "group", chatId: GROUP.group, mentioned: false, userId: ALICE.userId });
    expect(addressed).toMatchObject({ chatType: "group", chatId: GROUP.group, mentioned: true });
    await adapter.send(targetOf(addressed), "answered in the group", { format: "plain" });
    expect(fake.messages(GROUP.group).at(-1)).toMatchObject({ text: "answered in the group", via: "reply" });
  });

  it("hands over audio marked for transcription with its length, and files with their names", async () => {
    const audio = Buffer.from("fake m4a bytes");
    const voice = await fake.send(ALICE, "audio", audio, { durationMs: 4200 });
    const file = await fake.send(ALICE, "file", Buffer.from("report body"), { fileName: "../report.pdf" });
    const withAudio = await waitUntil(() => accepted.find((m) => m.messageId === voice.messageId), "the audio message");
    expect(withAudio.attachments?.[0]).toMatchObject({ kind: "audio", seconds: 5, data: audio });
    const withFile = await waitUntil(() => accepted.find((m) => m.messageId === file.messageId), "the file message");
    expect(withFile.attachments?.[0]).toMatchObject({ kind: "document", fileName: "report.pdf" });
  });
});
