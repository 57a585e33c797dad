/**
 * What is particular to Matrix, against the fake homeserver with a person on the other side
 * using matrix-js-sdk: the access token checked at start, the sync token kept only once what it
 * delivered is taken, repeats and dropped connections, rate limits (`M_LIMIT_EXCEEDED`), mentions
 * (`m.mentions` and the bot's name), replies and threads, files both ways through the
 * authenticated media endpoints, voice messages, invites by the access rules, typing, and
 * encrypted rooms refused with a notice.
 */
import type { MatrixClient } from "matrix-js-sdk";
import pino from "pino";
import { beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { type MatrixChannelConfig, matrixChannelSchema } from "../../daemon/adapters/matrix/config.js";
import { createMatrixAdapter, ENCRYPTED_NOTICE } from "../../daemon/adapters/matrix/index.js";
import { SINCE_KEY } from "../../daemon/adapters/matrix/sync.js";
import { type AdapterStatusEvent, type ChatAdapter, type InboundMessage, SendError } from "../../daemon/vocabulary/adapter.js";
import { systemClock } from "../../shared/clock.js";
import { createFakeMatrix, type FakeMatrix } from "../fakes/matrix.js";
import { testSink } from "../fakes/sink.js";
import { waitUntil } from "../helpers/wait.js";
import { logCollector } from "./adapters/harness/harness.js";
import { personClient, say } from "./adapters/harness/matrix.js";

let fake: FakeMatrix;
let bot: { userId: string; token: string };
let alice: { userId: string; token: string };
let mallory: { userId: string; token: string };
let person: MatrixClient;

beforeAll(async () => {
  fake = await createFakeMatrix();
  bot = fake.register("bridgebot", "Bridge Bot");
  alice = fake.register("alice", "Alice");
  mallory = fake.register("mallory", "Mallory");
  person = personClient(fake, alice);
  return () => fake.close();
});

interface Started {
  adapter: ChatAdapter;
  received: InboundMessage[];
  offered: InboundMessage[];
  statuses: AdapterStatusEvent[];
  state: Map<string, unknown>;
  logs: () => string;
}

function channel(overrides: Record<string, unknown> = {}): MatrixChannelConfig {
  const parsed = matrixChannelSchema.parse({
    type: "matrix",
    homeserver: fake.url,
    user_id: bot.userId,
    access_token: bot.token,
    access: { mode: "open" },
    ...overrides,
  });
  return { ...parsed, id: "mx" };
}

/** A started adapter; `refuse` makes accept throw (the journal is down) while it returns true. */
async function start(
  options: { overrides?: Record<string, unknown>; state?: Map<string, unknown>; refuse?: (m: InboundMessage) => boolean } = {},
): Promise<Started> {
  const state = options.state ?? new Map<string, unknown>();
  const logs = logCollector();
  const adapter = createMatrixAdapter(
    channel(options.overrides),
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { pollTimeoutMs: 1000, retryPauseMs: 20 },
  );
  const received: InboundMessage[] = [];
  const offered: InboundMessage[] = [];
  const statuses: AdapterStatusEvent[] = [];
  const sink = testSink({
    accept(message) {
      offered.push(message);
      if (options.refuse?.(message)) throw new Error("journal unavailable");
      received.push(message);
    },
    status: (event) => void statuses.push(event),
  });
  onTestFinished(() => adapter.stop());
  await adapter.start(sink);
  return { adapter, received, offered, statuses, state, logs: logs.text };
}

const arrived = (s: Started, text: string) => waitUntil(() => s.received.find((m) => m.text === text), `"${text}" to reach the sink`);

/** A direct room alice opens with the bot (who joins it on its next sync). */
async function directRoom(): Promise<string> {
  const room = fake.createRoom(alice.userId, { direct: true, invite: [bot.userId] });
  await waitUntil(() => fake.members(room).includes(bot.userId), "the bot to join");
  return room;
}

async function groupRoom(): Promise<string> {
  const room = fake.createRoom(alice.userId, { name: "team", invite: [bot.userId] });
  await waitUntil(() => fake.members(room).includes(bot.userId), "the bot to join the group");
  return room;
}

describe("the access token", () => {
  it("is refused at start when the homeserver does not know it, and never reaches the logs", async () => {
    const logs = logCollector();
    const adapter = createMatrixAdapter(
      { ...channel(), access_token: "syt_forged_token_0123456789" },
      {
        logger: pino({ level: "trace" }, logs),
        state: { get: () => undefined, set: async () => undefined },
        dataDir: "/nonexistent",
        clock: systemClock,
        maxAttachmentBytes: 1,
      },
    );
    const statuses: AdapterStatusEvent[] = [];
    await expect(adapter.start(testSink({ status: (e) => void statuses.push(e) }))).rejects.toThrow(/M_UNKNOWN_TOKEN/);
    expect(statuses.at(-1)?.state).toBe("failed");
    expect(logs.text()).not.toContain("syt_forged_token_0123456789");
    expect(logs.text()).not.toContain(bot.token);
  });

  it("is refused when it belongs to another user than user_id", async () => {
    const adapter = createMatrixAdapter(
      { ...channel(), access_token: mallory.token },
      {
        logger: pino({ level: "silent" }),
        state: { get: () => undefined, set: async () => undefined },
        dataDir: "/x",
        clock: systemClock,
        maxAttachmentBytes: 1,
      },
    );
    await expect(adapter.start(testSink({}))).rejects.toThrow(/belongs to @mallory:fake.test, not to the configured user_id @bridgebot:fake.test/);
  });
});

describe("the sync token", () => {
  it("is kept only once what it delivered is taken: a refused message comes again, then the token moves", async () => {
    let refusing = true;
    const s = await start({ refuse: (m) => m.text === "keep me" && refusing });
    const room = await directRoom();
    await waitUntil(() => s.state.get(SINCE_KEY), "a first token");
    await say(person, room, { msgtype: "m.text", body: "keep me" });
    await waitUntil(() => s.offered.filter((m) => m.text === "keep me").length >= 2, "the refused message offered again");
    const stuck = s.state.get(SINCE_KEY);
    expect(s.received).toEqual([]);
    // While it is refused, the token stays where it was (a restart would ask for it again).
    await waitUntil(() => s.offered.filter((m) => m.text === "keep me").length >= 3, "a third offer");
    expect(s.state.get(SINCE_KEY)).toBe(stuck);
    refusing = false;
    await arrived(s, "keep me");
    await waitUntil(() => s.state.get(SINCE_KEY) !== stuck, "the token to move");
    expect(s.received.filter((m) => m.text === "keep me")).toHaveLength(1);
  });

  it("resumes from the kept token in a new life: nothing lost, nothing repeated", async () => {
    const state = new Map<string, unknown>();
    const first = await start({ state });
    const room = await directRoom();
    await say(person, room, { msgtype: "m.text", body: "first life" });
    await arrived(first, "first life");
    await waitUntil(() => fake.requests.filter((r) => r.path.endsWith("/sync") && r.user === bot.userId).length > 0, "a sync");
    await first.adapter.stop();
    await say(person, room, { msgtype: "m.text", body: "while down" });
    const second = await start({ state });
    await arrived(second, "while down");
    expect(second.received.map((m) => m.text)).not.toContain("first life");
  });

  it("drops an event the homeserver delivers again", async () => {
    const s = await start();
    const room = await directRoom();
    const id = await say(person, room, { msgtype: "m.text", body: "only once" });
    await arrived(s, "only once");
    fake.repeat(bot.userId, id);
    await say(person, room, { msgtype: "m.text", body: "after the repeat" });
    await arrived(s, "after the repeat");
    expect(s.offered.filter((m) => m.text === "only once")).toHaveLength(1);
  });

  it("reconnects after a dropped connection without losing what came meanwhile", async () => {
    const s = await start();
    const room = await directRoom();
    fake.dropNextSync(bot.userId);
    await say(person, room, { msgtype: "m.text", body: "across the drop" });
    await arrived(s, "across the drop");
    await waitUntil(() => s.statuses.some((e) => e.state === "reconnecting"), "a reconnecting status");
    await waitUntil(() => s.statuses.at(-1)?.state === "connected", "connected again");
  });

  it("waits out a rate-limited sync (M_LIMIT_EXCEEDED) for as long as it says", async () => {
    const s = await start();
    const room = await directRoom();
    fake.rateLimit("/sync", 1, 1200);
    const syncs = () => fake.requests.filter((r) => r.user === bot.userId && r.path.endsWith("/sync"));
    // The long poll under way ends on this message; the next one is refused.
    await say(person, room, { msgtype: "m.text", body: "before the limit" });
    await waitUntil(() => syncs().some((r) => r.limited), "a rate-limited sync");
    await say(person, room, { msgtype: "m.text", body: "after the limit" });
    await arrived(s, "after the limit");
    const limited = syncs().findIndex((r) => r.limited);
    // The next sync waited: the SDK reads Retry-After (whole seconds: 2) over retry_after_ms (1200).
    expect((syncs()[limited + 1]?.at ?? 0) - (syncs()[limited]?.at ?? 0)).toBeGreaterThanOrEqual(1200);
    expect(s.logs()).toContain("matrix sync rate-limited; waiting");
  });
});

describe("rooms, mentions, replies and threads", () => {
  it("tells direct rooms from groups, and a group message's mention by m.mentions or by name", async () => {
    const s = await start();
    const dm = await directRoom();
    const group = await groupRoom();
    await say(person, dm, { msgtype: "m.text", body: "in private" });
    expect(await arrived(s, "in private")).toMatchObject({ chatType: "direct", chatId: dm, userId: alice.userId });
    await say(person, group, { msgtype: "m.text", body: "Bridge Bot: with a pill", "m.mentions": { user_ids: [bot.userId] } });
    expect(await arrived(s, "with a pill")).toMatchObject({ chatType: "group", chatId: group, mentioned: true });
    await say(person, group, { msgtype: "m.text", body: "bridgebot, by name from an old client" });
    expect(await arrived(s, "by name from an old client")).toMatchObject({ mentioned: true });
    // A client with m.mentions that names someone else does not address the bot, whatever the text says.
    await say(person, group, { msgtype: "m.text", body: "talking about Bridge Bot", "m.mentions": { user_ids: [mallory.userId] } });
    expect(await arrived(s, "talking about Bridge Bot")).toMatchObject({ mentioned: false });
    await say(person, group, { msgtype: "m.text", body: "just chatting" });
    expect(await arrived(s, "just chatting")).toMatchObject({ mentioned: false });
  });

  it("answers a group message as a Matrix reply, a thread inside its thread, and a direct one plainly", async () => {
    const s = await start();
    const dm = await directRoom();
    const group = await groupRoom();
    await say(person, group, { msgtype: "m.text", body: "Bridge Bot: question", "m.mentions": { user_ids: [bot.userId] } });
    const question = await arrived(s, "question");
    await s.adapter.send({ ...question, replyToMessageId: question.messageId }, "**answer**", { format: "markdown" });
    const answer = await waitUntil(() => fake.shown(group, bot.userId).find((m) => m.body === "**answer**"), "the answer");
    expect(answer.event.content["m.relates_to"]).toEqual({ "m.in_reply_to": { event_id: question.messageId } });
    expect(answer.html).toBe("<strong>answer</strong>");

    const root = await say(person, group, { msgtype: "m.text", body: "thread root" });
    await say(person, group, { msgtype: "m.text", body: "Bridge Bot: in thread", "m.mentions": { user_ids: [bot.userId] } }, root);
    const inThread = await arrived(s, "in thread");
    expect(inThread.threadId).toBe(root);
    await s.adapter.send({ ...inThread, replyToMessageId: inThread.messageId }, "thread answer", { format: "plain" });
    const threaded = await waitUntil(() => fake.shown(group, bot.userId).find((m) => m.body === "thread answer"), "the thread answer");
    expect(threaded.event.content["m.relates_to"]).toEqual({
      rel_type: "m.thread",
      event_id: root,
      is_falling_back: false,
      "m.in_reply_to": { event_id: inThread.messageId },
    });

    await say(person, dm, { msgtype: "m.text", body: "privately" });
    const direct = await arrived(s, "privately");
    await s.adapter.send({ ...direct, replyToMessageId: direct.messageId }, "plain answer", { format: "plain" });
    const plain = await waitUntil(() => fake.shown(dm, bot.userId).find((m) => m.body === "plain answer"), "the direct answer");
    expect(plain.event.content["m.relates_to"]).toBeUndefined();
  });

  it("takes a thread marked the way clients did before v1.4 (io.element.thread) as the same thread", async () => {
    const s = await start();
    const group = await groupRoom();
    const root = await say(person, group, { msgtype: "m.text", body: "old thread root" });
    fake.inject(group, alice.userId, "m.room.message", {
      msgtype: "m.text",
      body: "Bridge Bot: from an older client",
      "m.mentions": { user_ids: [bot.userId] },
      "m.relates_to": { rel_type: "io.element.thread", event_id: root, is_falling_back: true, "m.in_reply_to": { event_id: root } },
    });
    expect(await arrived(s, "from an older client")).toMatchObject({ threadId: root, mentioned: true });
  });

  it("edits by m.replace, reports a rate-limited send with its wait, shows typing and sets its reaction as an annotation", async () => {
    const s = await start();
    const dm = await directRoom();
    await say(person, dm, { msgtype: "m.text", body: "stream to me" });
    const message = await arrived(s, "stream to me");
    const receipt = await s.adapter.send(message, "partial", { format: "plain", final: false });
    await s.adapter.edits?.edit(message, receipt?.messageId ?? "", "partial and complete", { format: "plain", final: true });
    await waitUntil(() => fake.shown(dm, bot.userId).some((m) => m.body === "partial and complete"), "the edit shown");
    const edit = fake.events(dm).find((e) => (e.content["m.relates_to"] as { rel_type?: string } | undefined)?.rel_type === "m.replace");
    expect(edit?.content["m.new_content"]).toMatchObject({ msgtype: "m.text", body: "partial and complete" });

    fake.rateLimit("/send/", 1, 3000);
    const limited = await s.adapter.send(message, "too fast", { format: "plain" }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(SendError);
    expect(limited).toMatchObject({ permanent: false, status: 429, retryAfterMs: 3000 });

    await s.adapter.sendTyping(message);
    expect(fake.typing.at(-1)).toEqual({ roomId: dm, userId: bot.userId, typing: true });
    // A reply sent ends the bot's typing notification (the homeserver would show it until its timeout).
    await s.adapter.send(message, "done", { format: "plain" });
    await waitUntil(() => fake.typing.at(-1)?.typing === false, "typing ended");
    await s.adapter.reactions?.react(message, message.messageId, "👀", { remove: false });
    expect(fake.reactions(dm, message.messageId, bot.userId)).toEqual(["👀"]);
  });

  it("removes a reaction a previous life set, found through the relations endpoint", async () => {
    const first = await start();
    const dm = await directRoom();
    await say(person, dm, { msgtype: "m.text", body: "react and forget" });
    const message = await arrived(first, "react and forget");
    await first.adapter.reactions?.react(message, message.messageId, "👀", { remove: false });
    await first.adapter.stop();
    const second = await start();
    await second.adapter.reactions?.react(message, message.messageId, "👀", { remove: true });
    expect(fake.reactions(dm, message.messageId, bot.userId)).toEqual([]);
    expect(fake.requests.some((r) => r.path.includes("/relations/"))).toBe(true);
  });
});

describe("files", () => {
  it("takes a person's file and voice message through the authenticated media endpoint", async () => {
    const s = await start();
    const dm = await directRoom();
    const doc = await person.uploadContent(Buffer.from("quarterly numbers"), { name: "report.txt", type: "text/plain" });
    await say(person, dm, { msgtype: "m.file", body: "report.txt", filename: "report.txt", url: doc.content_uri, info: { mimetype: "text/plain", size: 17 } });
    const withFile = await waitUntil(() => s.received.find((m) => m.attachments?.[0]?.fileName === "report.txt"), "the file");
    expect(withFile.attachments?.[0]).toMatchObject({ kind: "document", mimeType: "text/plain" });
    expect(withFile.attachments?.[0]?.data.toString()).toBe("quarterly numbers");

    const ogg = Buffer.from("OggS fake opus");
    const voice = await person.uploadContent(ogg, { name: "Voice message.ogg", type: "audio/ogg" });
    await say(person, dm, {
      msgtype: "m.audio",
      body: "Voice message.ogg",
      url: voice.content_uri,
      info: { mimetype: "audio/ogg", size: ogg.length, duration: 4200 },
      "org.matrix.msc1767.audio": { duration: 4200 },
      "org.matrix.msc3245.voice": {},
    });
    const spoken = await waitUntil(() => s.received.find((m) => m.attachments?.[0]?.kind === "audio"), "the voice message");
    expect(spoken.attachments?.[0]).toMatchObject({ kind: "audio", seconds: 4, mimeType: "audio/ogg" });
    // Never the frozen unauthenticated endpoint.
    expect(fake.requests.filter((r) => r.user === bot.userId).some((r) => r.path.startsWith("/_matrix/media/v3/download"))).toBe(false);
    expect(fake.requests.some((r) => r.user === bot.userId && r.path.startsWith("/_matrix/client/v1/media/download/"))).toBe(true);
  });

  it("sends a photo, a voice note and a document as m.image, m.audio (voice) and m.file", async () => {
    const s = await start();
    const dm = await directRoom();
    await say(person, dm, { msgtype: "m.text", body: "files please" });
    const message = await arrived(s, "files please");
    const send = s.adapter.files?.send;
    if (!send) throw new Error("no files");
    await send(message, { path: "a.png", fileName: "a.png", mimeType: "image/png", kind: "photo", data: Buffer.from("png") });
    await send(message, { path: "v.ogg", fileName: "v.ogg", mimeType: "audio/ogg", kind: "voice", data: Buffer.from("ogg") });
    await send(message, { path: "r.pdf", fileName: "r.pdf", mimeType: "application/pdf", kind: "document", data: Buffer.from("pdf") });
    const sent = fake.events(dm).filter((e) => e.sender === bot.userId && typeof e.content.url === "string");
    expect(sent.map((e) => e.content.msgtype)).toEqual(["m.image", "m.audio", "m.file"]);
    expect(sent[1]?.content["org.matrix.msc3245.voice"]).toEqual({});
    expect(fake.media(String(sent[2]?.content.url))?.data.toString()).toBe("pdf");
  });
});

describe("invites", () => {
  it("joins a direct invite from an allowed user, declines a stranger's and an unlisted group", async () => {
    const s = await start({ overrides: { access: { mode: "allowlist", users: [alice.userId] } } });
    const fromAlice = fake.createRoom(alice.userId, { direct: true, invite: [bot.userId] });
    const fromMallory = fake.createRoom(mallory.userId, { direct: true, invite: [bot.userId] });
    const group = fake.createRoom(alice.userId, { name: "unlisted", invite: [bot.userId] });
    await waitUntil(() => fake.members(fromAlice).includes(bot.userId), "the allowed invite joined");
    await waitUntil(() => fake.events(fromMallory).some((e) => e.state_key === bot.userId && e.content.membership === "leave"), "the stranger's declined");
    await waitUntil(() => fake.events(group).some((e) => e.state_key === bot.userId && e.content.membership === "leave"), "the unlisted group declined");
    // Logged once the homeserver answered the leave, which may be after the fake recorded it.
    await waitUntil(() => s.logs().includes("matrix invite declined by the access rules"), "the decline logged");
  });
});

describe("encrypted rooms", () => {
  it("says once, in the room, that it cannot read it and why; a person's encrypting client gets nothing else", { timeout: 60_000 }, async () => {
    const s = await start();
    const erin = fake.register("erin", "Erin");
    const room = fake.createRoom(erin.userId, { direct: true, invite: [bot.userId], encrypted: true });
    await waitUntil(() => fake.shown(room, bot.userId).length > 0, "the notice");
    // Erin's client is matrix-js-sdk with its Rust crypto (the WebAssembly build), as Element's: it encrypts with Megolm.
    const quiet = ["debug", "info", "log", "warn", "error", "trace"].map((method) => vi.spyOn(console, method as "log").mockImplementation(() => {}));
    const client = personClient(fake, erin);
    try {
      await client.initRustCrypto({ useIndexedDB: false });
      await client.startClient({ initialSyncLimit: 10 });
      await waitUntil(
        async () => client.getRoom(room) && (await client.getCrypto()?.isEncryptionEnabledInRoom(room)),
        "Erin's client to know the room encrypted",
      );
      await say(client, room, { msgtype: "m.text", body: "a secret for the bot" });
      await say(client, room, { msgtype: "m.text", body: "and another" });
    } finally {
      client.stopClient();
      for (const spy of quiet) spy.mockRestore();
    }
    const sent = fake.events(room).filter((e) => e.sender === erin.userId && e.type === "m.room.encrypted");
    expect(sent).toHaveLength(2);
    expect(sent[0]?.content.algorithm).toBe("m.megolm.v1.aes-sha2");
    // Handled (the token moves past them) without a word more, and nothing for the core.
    const at = fake.position();
    await waitUntil(() => Number(String(s.state.get(SINCE_KEY)).slice(1)) >= at, "the sync token past the encrypted messages");
    const notices = fake.shown(room, bot.userId);
    expect(notices.map((m) => m.body)).toEqual([ENCRYPTED_NOTICE]);
    expect(notices[0]?.event.content.msgtype).toBe("m.notice");
    expect(s.received).toEqual([]);
    expect(s.logs()).toContain("matrix encrypted message not readable");
  });

  it("says it once per room also when the first sign of encryption is an encrypted message in a room it joined without", async () => {
    const s = await start();
    const room = await directRoom();
    const megolm = { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "AwgAEnA", device_id: "ALICEDEV", sender_key: "c2VuZGVy", session_id: "c2Vzc2lvbg" };
    fake.inject(room, alice.userId, "m.room.encrypted", megolm);
    fake.inject(room, alice.userId, "m.room.encrypted", megolm);
    await say(person, room, { msgtype: "m.text", body: "and in the clear" });
    await arrived(s, "and in the clear");
    expect(fake.shown(room, bot.userId).map((m) => m.body)).toEqual([ENCRYPTED_NOTICE]);
    expect(s.received.map((m) => m.text)).toEqual(["and in the clear"]);
  });
});
