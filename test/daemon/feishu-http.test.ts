/**
 * What is particular to Feishu/Lark over HTTP, against the fake Feishu
 * (test/fakes/feishu.ts) with the real SDK client and the shared endpoint:
 * the URL verification, forged requests refused, redeliveries answered
 * once, rate limits, the tenant token's renewal, files both ways, card
 * updates and taps.
 */
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import pino from "pino";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { feishuChannelSchema, type FeishuChannelConfig } from "../../daemon/adapters/feishu/config.js";
import { createFeishuAdapter, FeishuAdapterError } from "../../daemon/adapters/feishu/index.js";
import { feishuPlatform } from "../../daemon/adapters/feishu/platform.js";
import { undiciHttp } from "../../daemon/helpers/probe.js";
import type { AcceptOutcome, ChatAdapter, ChatTarget, InboundMessage } from "../../daemon/vocabulary/adapter.js";
import type { Clock } from "../../shared/clock.js";
import { systemClock } from "../../shared/clock.js";
import { createFakeFeishu, type FakeFeishu, type FakeFeishuOptions } from "../fakes/feishu.js";
import { testSink } from "../fakes/sink.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";

const APP_ID = "cli_0123456789abcdef";
const APP_SECRET = "httpTestAppSecretStaysSecret0001";
const ENCRYPT_KEY = "httpTestEncryptKeyStaysSecret";
const TOKEN = "httpTestVerificationToken01";
const ALICE = "ou_alice00000000000000000000000001";
const BOB = "ou_bob0000000000000000000000000001";
const DM = "oc_dm_alice0000000000000000000001";
const GROUP = "oc_group0000000000000000000000001";
/** A 1x1 PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");

interface Started {
  fake: FakeFeishu;
  adapter: ChatAdapter;
  accepted: InboundMessage[];
  offered: InboundMessage[];
  logs: string[];
  endpoint: string;
  /** Stops the adapter, then the fake, and checks no secret reached the adapter's logs. */
  close(): Promise<void>;
}

async function start(
  options: {
    fake?: Partial<FakeFeishuOptions>;
    channel?: Record<string, unknown>;
    clock?: Clock;
    accept?: (m: InboundMessage) => AcceptOutcome | Promise<AcceptOutcome>;
  } = {},
): Promise<Started> {
  const fake = await createFakeFeishu({
    appId: APP_ID,
    appSecret: APP_SECRET,
    encryptKey: ENCRYPT_KEY,
    verificationToken: TOKEN,
    retryDelaysMs: [20, 20, 20],
    ...options.fake,
  });
  const channel: FeishuChannelConfig = {
    ...feishuChannelSchema.parse({
      type: "feishu",
      app_id: APP_ID,
      app_secret: APP_SECRET,
      encrypt_key: ENCRYPT_KEY,
      verification_token: TOKEN,
      api: fake.apiBase,
      mode: "http",
      http: { port: 0 },
      access: { mode: "open" },
      ...options.channel,
    }),
    id: "fs",
  };
  const logs: string[] = [];
  let endpoint = "";
  const adapter = createFeishuAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, { write: (line: string) => void logs.push(line) }),
      state: { get: () => undefined, set: async () => undefined },
      dataDir: "/nonexistent",
      clock: options.clock ?? systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    {
      onListening: (url) => {
        endpoint = `${url}${channel.http.path}`;
      },
    },
  );
  const accepted: InboundMessage[] = [];
  const offered: InboundMessage[] = [];
  const starting = adapter.start(
    testSink({
      accept: async (m) => {
        offered.push(m);
        const outcome = options.accept ? await options.accept(m) : ({ status: "accepted", acknowledge: true } as const);
        if (outcome.status === "accepted") accepted.push(m);
        return outcome;
      },
    }),
  );
  await starting.catch(async (error: unknown) => {
    await fake.close();
    throw error;
  });
  fake.setRequestUrl(endpoint);
  const close = async () => {
    await adapter.stop();
    await fake.close();
    const all = logs.join("");
    for (const secret of [APP_SECRET, ENCRYPT_KEY, TOKEN]) expect(all.includes(secret), "a secret in the logs").toBe(false);
  };
  return { fake, adapter, accepted, offered, logs, endpoint, close };
}

const targetOf = (m: InboundMessage): ChatTarget => ({
  platform: m.platform,
  accountId: m.accountId,
  chatId: m.chatId,
  chatType: m.chatType,
  ...(m.threadId ? { threadId: m.threadId } : {}),
  replyToMessageId: m.messageId,
});

function encryptWith(key: string, plain: string): string {
  const iv = randomBytes(16);
  const cipher = createCipheriv("aes-256-cbc", createHash("sha256").update(key).digest(), iv);
  return JSON.stringify({ encrypt: Buffer.concat([iv, cipher.update(plain, "utf8"), cipher.final()]).toString("base64") });
}

const messageEvent = (text: string, token = TOKEN) =>
  JSON.stringify({
    schema: "2.0",
    header: { event_id: randomBytes(16).toString("hex"), event_type: "im.message.receive_v1", token, create_time: "1700000000000" },
    event: {
      sender: { sender_id: { open_id: ALICE }, sender_type: "user" },
      message: {
        message_id: `om_${randomBytes(8).toString("hex")}`,
        chat_id: DM,
        chat_type: "p2p",
        message_type: "text",
        content: JSON.stringify({ text }),
        create_time: "1700000000000",
      },
    },
  });

describe("verification", () => {
  let s: Started;
  beforeAll(async () => {
    s = await start();
    return () => s.close();
  });

  it("answers the URL verification with its challenge (encrypted, unsigned, as Feishu sends it)", async () => {
    const got = await s.fake.verifyUrl();
    expect(got.status).toBe(200);
    expect(JSON.parse(got.body)).toEqual({ challenge: expect.stringMatching(/^[0-9a-f]{16}$/) });
  });

  it("refuses forged events with 401 and hands nothing over: unsigned, bad signature, another key, not encrypted, another verification token", async () => {
    const sealed = s.fake.seal(messageEvent("forged 1"));
    const unsigned = await s.fake.post(sealed.body, { "content-type": "application/json" });
    const badSignature = await s.fake.post(sealed.body, { ...sealed.headers, "x-lark-signature": "0".repeat(64) });
    // Signed over other bytes: the signature covers the raw body.
    const otherBody = await s.fake.post(s.fake.seal(messageEvent("forged 2")).body, sealed.headers);
    const ts = String(Math.floor(Date.now() / 1000));
    const forgedBody = encryptWith("anotherAppsEncryptKey", messageEvent("forged 3"));
    const otherKey = await s.fake.post(forgedBody, {
      "content-type": "application/json",
      "x-lark-request-timestamp": ts,
      "x-lark-request-nonce": "n1",
      "x-lark-signature": createHash("sha256").update(`${ts}n1anotherAppsEncryptKey${forgedBody}`).digest("hex"),
    });
    const plain = await s.fake.post(messageEvent("forged 4"), { "content-type": "application/json" });
    const otherToken = s.fake.seal(messageEvent("forged 5", "someoneElsesToken01"));
    const wrongToken = await s.fake.post(otherToken.body, otherToken.headers);
    expect([unsigned, badSignature, otherBody, otherKey, plain, wrongToken].map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 401]);
    // The real event, signed and sealed the same way, goes through: the refusals were the forgeries'.
    const real = await s.fake.post(sealed.body, sealed.headers);
    expect(real.status).toBe(200);
    await waitUntil(() => s.accepted.some((m) => m.text === "forged 1"), "the genuine event");
    expect(s.offered.map((m) => m.text)).toEqual(["forged 1"]);
  });
});

describe("redelivery", () => {
  it("a journal that failed is answered 500, Feishu's redelivery (same event_id) is taken once; a delivery of a taken event again is not taken twice", async () => {
    let failures = 1;
    const s = await start({
      accept: (m) => {
        if (m.text === "retry me" && failures-- > 0) throw new Error("journal unavailable");
        onTestFinished(() => s.close());
        return { status: "accepted", acknowledge: true };
      },
    });
    const said = s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "retry me" });
    const delivered = await said.delivered;
    expect(delivered).toMatchObject({ status: 200, attempt: 2 });
    expect(s.fake.deliveries().map((d) => [d.eventId, d.status])).toEqual([
      [said.eventId, 500],
      [said.eventId, 200],
    ]);
    expect(s.accepted.map((m) => m.text)).toEqual(["retry me"]);
    // Feishu delivers an answered event again sometimes (its 3 s passed on its side): answered 200, not handed over again.
    const event = messageEvent("once only");
    const first = s.fake.seal(event);
    const again = s.fake.seal(event);
    expect((await s.fake.post(first.body, first.headers)).status).toBe(200);
    expect((await s.fake.post(again.body, again.headers)).status).toBe(200);
    expect(s.offered.filter((m) => m.text === "once only")).toHaveLength(1);
  });
});

describe("deferred", () => {
  it("a message the core does not take now (stopping) is answered 500 and taken when Feishu delivers it again", async () => {
    let deferrals = 1;
    const s = await start({
      accept: () => (deferrals-- > 0 ? { status: "deferred", reason: "stopping", acknowledge: false } : { status: "accepted", acknowledge: true }),
    });
    onTestFinished(() => s.close());
    const said = s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "later" });
    expect(await said.delivered).toMatchObject({ status: 200, attempt: 2 });
    expect(s.fake.deliveries().map((d) => d.status)).toEqual([500, 200]);
    expect(s.accepted.map((m) => m.text)).toEqual(["later"]);
  });
});

describe("sending", () => {
  let s: Started;
  let asked: InboundMessage;
  beforeAll(async () => {
    s = await start();
    s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "hello" });
    asked = await waitUntil(() => s.accepted.find((m) => m.text === "hello"), "hello");
    return () => s.close();
  });

  it("a rate limit (429, 99991400) is a transient SendError waiting x-ogw-ratelimit-reset, and nothing was posted", async () => {
    const before = s.fake.messages(DM).length;
    s.fake.limitNext(1, 7);
    const refused = await s.adapter.send(targetOf(asked), "limited", { format: "plain" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(FeishuAdapterError);
    expect(refused).toMatchObject({ permanent: false, retryAfterMs: 7000, status: 429, code: 99991400 });
    expect(s.fake.messages(DM)).toHaveLength(before);
    await s.adapter.send(targetOf(asked), "limited", { format: "plain" });
    expect(s.fake.messages(DM).filter((m) => s.fake.textOf(m) === "limited")).toHaveLength(1);
  });

  it("a reply goes as a shared card answering the message; edits patch the same card; a refused message id is a permanent SendError", async () => {
    const receipt = await s.adapter.send(targetOf(asked), "**first**", { format: "markdown" });
    const id = receipt?.messageId ?? "";
    const sent = s.fake.messages(DM).find((m) => m.id === id);
    expect(sent).toMatchObject({ msgType: "interactive", parentId: asked.messageId });
    await s.adapter.edits?.edit(targetOf(asked), id, "**first** and more", { format: "markdown" });
    expect(s.fake.textOf(s.fake.messages(DM).find((m) => m.id === id)!)).toBe("**first** and more");
    const refused = await s.adapter.edits?.edit(targetOf(asked), "om_nosuchmessage", "x", { format: "plain" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toMatchObject({ permanent: true, code: 230001 });
  });

  it("Feishu's five updates a second per message: a sixth is refused as transient (the core's pace, 1 s, stays well within)", async () => {
    const receipt = await s.adapter.send(targetOf(asked), "v0", { format: "plain" });
    const id = receipt?.messageId ?? "";
    const results: unknown[] = [];
    for (let i = 1; i <= 6; i++)
      results.push(
        await s.adapter.edits?.edit(targetOf(asked), id, `v${i}`, { format: "plain" }).then(
          () => "ok",
          (e: unknown) => e,
        ),
      );
    expect(results.slice(0, 5)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(results[5]).toMatchObject({ permanent: false, code: 230020 });
  });

  it("sends a photo as an image message and a voice note as audio, and a document as a file", async () => {
    await s.adapter.files?.send(targetOf(asked), { path: "w/chart.png", fileName: "chart.png", mimeType: "image/png", kind: "photo", data: PNG });
    await s.adapter.files?.send(targetOf(asked), {
      path: "w/hi.ogg",
      fileName: "hi.ogg",
      mimeType: "audio/ogg",
      kind: "voice",
      data: Buffer.from("OggS-voice"),
    });
    await s.adapter.files?.send(targetOf(asked), {
      path: "w/r.txt",
      fileName: "r.txt",
      mimeType: "text/plain",
      kind: "document",
      data: Buffer.from("numbers\n"),
    });
    const kinds = s.fake
      .messages(DM)
      .filter((m) => ["image", "audio", "file"].includes(m.msgType))
      .map((m) => m.msgType);
    expect(kinds).toEqual(["image", "audio", "file"]);
    expect(s.fake.fileData("r.txt")?.toString()).toBe("numbers\n");
    expect(s.fake.fileData("hi.ogg")?.toString()).toBe("OggS-voice");
  });

  it("sets a reaction by Feishu's emoji type and removes it", async () => {
    await s.adapter.reactions?.react(targetOf(asked), asked.messageId, "👀", { remove: false });
    expect(s.fake.reactions(asked.messageId)).toEqual(["GLANCE"]);
    await s.adapter.reactions?.react(targetOf(asked), asked.messageId, "👀", { remove: true });
    expect(s.fake.reactions(asked.messageId)).toEqual([]);
  });
});

describe("receiving", () => {
  let s: Started;
  beforeAll(async () => {
    // As the core keys a tap by its question: a second answer to one question is a duplicate.
    const answered = new Set<string>();
    s = await start({
      accept: (m) => {
        if (!m.answers) return { status: "accepted", acknowledge: true };
        if (answered.has(m.answers.questionId)) return { status: "duplicate", acknowledge: true };
        answered.add(m.answers.questionId);
        return { status: "accepted", acknowledge: true };
      },
    });
    return () => s.close();
  });

  it("a group message without a mention is not addressed; with one it is, the mention taken out", async () => {
    s.fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text: "just talking" });
    s.fake.say({ user: BOB, chatId: GROUP, chatType: "group", text: "are you there?", mentionBot: true });
    const talk = await waitUntil(() => s.accepted.find((m) => m.text === "just talking"), "the talk");
    const asked = await waitUntil(() => s.accepted.find((m) => m.text === "are you there?"), "the mention");
    expect(talk).toMatchObject({ chatType: "group", chatId: GROUP, mentioned: false });
    expect(asked).toMatchObject({ chatType: "group", chatId: GROUP, mentioned: true, userId: BOB });
  });

  it("a reply in a thread is a thread of its own, answered into the thread", async () => {
    const root = s.fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text: "root", mentionBot: true }).message;
    s.fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text: "in the thread", mentionBot: true, threadOf: root.id });
    const inThread = await waitUntil(() => s.accepted.find((m) => m.text === "in the thread"), "the thread message");
    expect(inThread.threadId).toMatch(/^omt_/);
    // No message named: the reply still goes into the thread, under its root.
    const { replyToMessageId: _, ...noReply } = targetOf(inThread);
    const receipt = await s.adapter.send(noReply, "into the thread", { format: "plain" });
    expect(s.fake.messages(GROUP).find((m) => m.id === receipt?.messageId)).toMatchObject({ threadId: inThread.threadId, rootId: root.id });
  });

  it("an image and a voice note arrive downloaded: a photo, and audio with its seconds (transcription's input)", async () => {
    s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", file: { kind: "image", name: "pic.png", data: PNG } });
    s.fake.say({
      user: ALICE,
      chatId: DM,
      chatType: "p2p",
      file: { kind: "audio", name: "voice.opus", data: Buffer.from("OggS-opus-voice"), durationMs: 2500 },
    });
    const photo = await waitUntil(() => s.accepted.find((m) => m.attachments?.[0]?.kind === "photo"), "the photo");
    const voice = await waitUntil(() => s.accepted.find((m) => m.attachments?.[0]?.kind === "audio"), "the voice note");
    expect(photo.attachments?.[0]?.data.equals(PNG)).toBe(true);
    expect(voice.attachments?.[0]).toMatchObject({ kind: "audio", seconds: 2.5 });
    expect(voice.attachments?.[0]?.data.toString()).toBe("OggS-opus-voice");
  });

  it("a tap on a question's button is the answer; a second tap on the same question is told 'Already answered'", async () => {
    s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "ask me" });
    const asked = await waitUntil(() => s.accepted.find((m) => m.text === "ask me"), "ask me");
    const receipt = await s.adapter.buttons?.ask(targetOf(asked), { id: "q123", text: "Deploy?", options: ["yes", "no"], allowText: false });
    expect(s.fake.buttonsOf(receipt?.messageId ?? "")).toEqual(["yes", "no"]);
    const tap = s.fake.tap({ user: ALICE, messageId: receipt?.messageId ?? "", index: 0 });
    expect((await tap.delivered).status).toBe(200);
    expect(s.accepted.find((m) => m.answers)).toMatchObject({ chatId: DM, chatType: "direct", text: "1", answers: { questionId: "q123" }, userId: ALICE });
    expect(JSON.parse((await tap.delivered).body)).toEqual({});
    const second = await s.fake.tap({ user: ALICE, messageId: receipt?.messageId ?? "", index: 1 }).delivered;
    expect(second.status).toBe(200);
    expect(JSON.parse(second.body)).toEqual({ toast: { type: "info", content: "Already answered." } });
    expect(s.accepted.filter((m) => m.answers)).toHaveLength(1);
  });
});

describe("card streaming (CardKit)", () => {
  it("pushes the text with growing sequences; once Feishu closed streaming mode by itself (10 minutes) the whole card is replaced; the end closes it", async () => {
    const clock = createSteppableClock();
    const s = await start({ clock, fake: { now: () => clock.now() } });
    onTestFinished(() => s.close());
    s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "stream" });
    const asked = await waitUntil(() => s.accepted.find((m) => m.text === "stream"), "the message");
    const receipt = await s.adapter.send(targetOf(asked), "Once", { format: "markdown", final: false });
    const id = receipt?.messageId ?? "";
    expect(s.fake.streamingOf(id)).toBe(true);
    clock.advance(1000);
    await s.adapter.edits?.edit(targetOf(asked), id, "Once upon", { format: "markdown", final: false });
    expect(s.fake.textOf(s.fake.messages(DM).find((m) => m.id === id)!)).toBe("Once upon");
    // Eleven minutes on, Feishu has turned streaming mode off: the push is refused, the whole card goes instead.
    clock.advance(11 * 60 * 1000);
    expect(s.fake.streamingOf(id)).toBe(false);
    await s.adapter.edits?.edit(targetOf(asked), id, "Once upon a time", { format: "markdown", final: false });
    expect(s.fake.textOf(s.fake.messages(DM).find((m) => m.id === id)!)).toBe("Once upon a time");
    expect(s.adapter.edits?.mayBeOpen?.(id)).toBe(true);
    await s.adapter.edits?.end?.(targetOf(asked), id, "Once upon a time.");
    expect(s.fake.streamingOf(id)).toBe(false);
    expect(s.adapter.edits?.mayBeOpen?.(id)).toBe(false);
    expect(s.fake.textOf(s.fake.messages(DM).find((m) => m.id === id)!)).toBe("Once upon a time.");
    const cardkit = s.fake.calls().filter((c) => c.path.startsWith("/open-apis/cardkit/"));
    expect(cardkit.map((c) => [c.method, c.status])).toEqual([
      ["POST", 200],
      ["PUT", 200],
      ["PUT", 400],
      ["PUT", 200],
      ["PUT", 200],
    ]);
  });
});

describe("the tenant access token", () => {
  it("is fetched once, kept while it lives, renewed once it expires on the clock, and fetched anew when Feishu refuses it", async () => {
    const clock = createSteppableClock();
    const s = await start({ clock, fake: { now: () => clock.now() } });
    onTestFinished(() => s.close());
    s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "token" });
    const asked = await waitUntil(() => s.accepted.find((m) => m.text === "token"), "the message");
    expect(s.fake.tokensIssued()).toBe(1);
    await s.adapter.send(targetOf(asked), "one", { format: "plain" });
    await s.adapter.send(targetOf(asked), "two", { format: "plain" });
    expect(s.fake.tokensIssued()).toBe(1);
    // Two hours on: the SDK's cache dropped it three minutes before Feishu would refuse it.
    clock.advance(2 * 60 * 60 * 1000 - 2 * 60 * 1000);
    await s.adapter.send(targetOf(asked), "three", { format: "plain" });
    expect(s.fake.tokensIssued()).toBe(2);
    expect(s.fake.calls().filter((c) => c.status === 400)).toEqual([]);
  });
});

describe("agent-bridge check", () => {
  it("asks for a tenant token and the bot's info: ok with the right credentials, a failure naming the fix (and no secret) without", async () => {
    const fake = await createFakeFeishu({ appId: APP_ID, appSecret: APP_SECRET });
    onTestFinished(() => fake.close());
    const channelOf = (secret: string, extra: Record<string, unknown> = {}) =>
      feishuPlatform.finalize(feishuChannelSchema.parse({ type: "feishu", app_id: APP_ID, app_secret: secret, api: fake.apiBase, ...extra }), {
        id: "fs",
        dataDir: "/x",
      })!;
    const deps = { http: undiciHttp, timeoutMs: 5000, readFile: async () => "" };
    const ok = await feishuPlatform.check(channelOf(APP_SECRET), deps);
    expect(ok).toMatchObject({ status: "ok", message: expect.stringContaining("Fake Bot") });
    const wrong = await feishuPlatform.check(channelOf("aWrongAppSecretThatIsNotIt00001"), deps);
    expect(wrong).toMatchObject({ status: "fail", message: expect.stringContaining("code 10014"), fix: expect.stringContaining("app_secret") });
    expect(JSON.stringify(wrong)).not.toContain("aWrongAppSecretThatIsNotIt00001");
    // HTTP mode without an Encrypt Key works, but is said to be weaker.
    const plain = await feishuPlatform.check(channelOf(APP_SECRET, { mode: "http", verification_token: TOKEN }), deps);
    expect(plain).toMatchObject({ status: "warn", message: expect.stringContaining("no encrypt_key") });
  });

  it("the config refuses what cannot work: HTTP mode with nothing to verify events by, a malformed App ID, a reaction Feishu cannot name", () => {
    const base = { type: "feishu", app_id: APP_ID, app_secret: APP_SECRET };
    expect(feishuChannelSchema.safeParse({ ...base, mode: "http" }).error?.issues.map((i) => i.path.join("."))).toEqual(["verification_token"]);
    expect(feishuChannelSchema.safeParse({ ...base, app_id: "cli_short" }).success).toBe(false);
    expect(feishuChannelSchema.safeParse({ ...base, ackReaction: { emoji: "🦄" } }).error?.issues.map((i) => i.path.join("."))).toEqual(["ackReaction.emoji"]);
    expect(feishuChannelSchema.parse({ ...base, domain: "lark" })).toMatchObject({ domain: "lark", mode: "websocket" });
  });
});
