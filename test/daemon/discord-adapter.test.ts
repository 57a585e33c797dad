/**
 * The Discord adapter with a real discord.js client against the local fake
 * of Discord's REST API and gateway (test/fakes/discord.ts).
 */
import { testSink } from "../fakes/sink.js";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import timersPromises from "node:timers/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { beforeEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { createManualClock, systemClock, type Clock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { Client, Events } from "discord.js";
import { dropLatePackets } from "../../daemon/adapters/discord/gateway-client.js";
import { createDiscordAdapter, DiscordAdapterError, type DiscordAdapterOptions } from "../../daemon/adapters/discord/index.js";
import { discordChannelSchema, type DiscordChannelConfig } from "../../daemon/adapters/discord/config.js";
import type { AdapterStatusEvent, ChatAdapter, ChatTarget, InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { createFakeDiscord, waitFor, type FakeDiscord, type FakeUser } from "../fakes/discord.js";

const TOKEN = "MTA0NjY5.fake-bot.token-value-that-must-stay-secret";
const GUILD = "800000000000000001";
const GENERAL = "800000000000000002";
const QUIET = "800000000000000003";
const alice: FakeUser = { id: "700000000000000001", username: "alice", global_name: "Alice A." };
const bob: FakeUser = { id: "700000000000000002", username: "bob" };
const otherBot: FakeUser = { id: "700000000000000099", username: "other-bot", bot: true };
const noThrottle = { waitForIdentify: async () => undefined };

interface Harness {
  adapter: ChatAdapter;
  received: InboundMessage[];
  statuses: AdapterStatusEvent[];
  logs: string[];
}

let fake: FakeDiscord;
let dataDir: string;

beforeEach(async () => {
  fake = await createFakeDiscord({
    token: TOKEN,
    guilds: [
      {
        id: GUILD,
        name: "Test Guild",
        channels: [
          { id: GENERAL, name: "general" },
          { id: QUIET, name: "quiet" },
        ],
      },
    ],
  });
  dataDir = mkdtempSync(join(tmpdir(), "discord-adapter-"));
  // Registered first, so it runs after the test's own (its adapters stop before the fake goes).
  const [made, dir] = [fake, dataDir];
  onTestFinished(async () => {
    await made.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

function makeConfig(overrides: Record<string, unknown> = {}): DiscordChannelConfig {
  const parsed = discordChannelSchema.parse({
    type: "discord",
    token: TOKEN,
    api: fake.apiBase,
    access: { mode: "open" },
    ...overrides,
  });
  return { ...parsed, id: "discord-main" };
}

async function startAdapter(
  opts: { config?: DiscordChannelConfig; clock?: Clock; options?: DiscordAdapterOptions; maxAttachmentBytes?: number } = {},
): Promise<Harness> {
  const logs: string[] = [];
  const logger = pino({ level: "trace" }, { write: (line: string) => void logs.push(line) });
  const state = new Map<string, unknown>();
  const adapter = createDiscordAdapter(
    opts.config ?? makeConfig(),
    {
      logger,
      state: { get: <T>(key: string) => state.get(key) as T | undefined, set: async (key, value) => void state.set(key, value) },
      dataDir,
      clock: opts.clock ?? systemClock,
      maxAttachmentBytes: opts.maxAttachmentBytes ?? 1024 * 1024,
    },
    { identifyThrottler: noThrottle, random: seededRandom("discord"), backoffInitialMs: 20, ...opts.options },
  );
  const received: InboundMessage[] = [];
  const statuses: AdapterStatusEvent[] = [];
  onTestFinished(() => adapter.stop());
  await adapter.start(
    testSink({
      accept: (message) => void received.push(message),
      status: (event) => void statuses.push(event),
      maxAttachmentBytes: opts.maxAttachmentBytes ?? 1024 * 1024,
    }),
  );
  return { adapter, received, statuses, logs };
}

const mention = (user: FakeUser, style: "plain" | "nick" = "plain") => (style === "nick" ? `<@!${user.id}>` : `<@${user.id}>`);
const byId = (h: Harness, id: unknown) => waitFor(() => h.received.find((m) => m.messageId === id), `message ${String(id)}`);
const guildMessage = (
  author: FakeUser,
  content: string,
  extra: { mentions?: FakeUser[]; replyTo?: string; channelId?: string; mentionRoles?: string[] } = {},
) => fake.dispatchMessage({ channelId: extra.channelId ?? GENERAL, guildId: GUILD, author, content, ...extra });

describe("discord adapter: direct messages", () => {
  it("turns a DM into an InboundMessage and sends the reply to the DM channel", async () => {
    const h = await startAdapter();
    expect(h.adapter.limits).toEqual({ maxMessageLength: 2000, typingRefreshMs: 8000, minEditIntervalMs: 1000 });
    const dm = fake.dispatchDirectMessage(alice, "hello there");
    const msg = await byId(h, dm.id);
    expect(msg).toEqual({
      platform: "discord",
      accountId: "discord-main",
      chatId: fake.dmChannelFor(alice),
      chatType: "direct",
      userId: alice.id,
      userName: "Alice A.",
      messageId: dm.id,
      text: "hello there",
      sentAt: Date.parse(dm.timestamp as string),
    });

    const target: ChatTarget = { platform: "discord", accountId: "discord-main", chatId: msg.chatId, chatType: "direct", replyToMessageId: msg.messageId };
    await h.adapter.send(target, "hi **alice**", { format: "markdown" });
    const sent = fake.sentMessages(msg.chatId);
    expect(sent.map((m) => m.content)).toEqual(["hi **alice**"]);
    // DMs are not threaded, and agent text never pings anyone.
    expect(sent[0]?.replyTo).toBeUndefined();
    expect(sent[0]?.allowedMentions).toEqual({ parse: [], replied_user: true });
  });

  it("sends to a DM channel the client has never seen", async () => {
    const h = await startAdapter();
    const channelId = fake.dmChannelFor(bob);
    await h.adapter.send({ platform: "discord", accountId: "discord-main", chatId: channelId, chatType: "direct" }, "out of the blue", { format: "plain" });
    expect(fake.sentMessages(channelId).map((m) => m.content)).toEqual(["out of the blue"]);
  });

  it("strips a leading bot mention in a DM too", async () => {
    const h = await startAdapter();
    const dm = fake.dispatchDirectMessage(alice, `${mention(fake.bot)} what time is it?`, { mentions: [fake.bot] });
    expect((await byId(h, dm.id)).text).toBe("what time is it?");
  });
});

describe("discord adapter: guild channels", () => {
  it("flags unmentioned messages (the core ignores them) and strips the mention from mentioned ones", async () => {
    const h = await startAdapter();
    const chatting = guildMessage(alice, "just chatting among ourselves");
    const plain = guildMessage(alice, `${mention(fake.bot)} summarise this`, { mentions: [fake.bot] });
    const nick = guildMessage(bob, `${mention(fake.bot, "nick")}, and in French`, { mentions: [fake.bot] });
    const middle = guildMessage(bob, `thanks ${mention(fake.bot)} for that`, { mentions: [fake.bot] });
    await byId(h, middle.id);
    // Same channel, delivered in order.
    expect(h.received.map((m) => [m.messageId, m.mentioned])).toEqual([
      [chatting.id, false],
      [plain.id, true],
      [nick.id, true],
      [middle.id, true],
    ]);
    expect(h.received.filter((m) => m.mentioned).map((m) => [m.messageId, m.text, m.chatType, m.chatId])).toEqual([
      [plain.id, "summarise this", "group", GENERAL],
      [nick.id, "and in French", "group", GENERAL],
      [middle.id, `thanks @${fake.bot.username} for that`, "group", GENERAL],
    ]);
  });

  it("counts a reply to the bot and a mention of its managed role as mentions", async () => {
    const h = await startAdapter();
    const asked = guildMessage(alice, `${mention(fake.bot)} first question`, { mentions: [fake.bot] });
    await byId(h, asked.id);
    await h.adapter.send(
      { platform: "discord", accountId: "discord-main", chatId: GENERAL, chatType: "group", replyToMessageId: String(asked.id) },
      "first answer",
      { format: "markdown" },
    );
    const answer = fake.sentMessages(GENERAL)[0]!;
    expect(answer.replyTo).toBe(asked.id);

    const reply = guildMessage(alice, "a follow-up without any mention", { replyTo: answer.id });
    const roleId = fake.botRoleId(GUILD);
    const role = guildMessage(bob, `<@&${roleId}> via the role`, { mentionRoles: [roleId] });
    await byId(h, role.id);
    expect(h.received.slice(1).map((m) => [m.messageId, m.text, m.mentioned])).toEqual([
      [reply.id, "a follow-up without any mention", true],
      [role.id, "via the role", true],
    ]);
  });

  it("a reply to someone else is not a mention", async () => {
    const h = await startAdapter();
    const first = guildMessage(bob, "bob says something");
    guildMessage(alice, "alice answers bob", { replyTo: String(first.id) });
    const sentinel = guildMessage(alice, `${mention(fake.bot)} sentinel`, { mentions: [fake.bot] });
    await byId(h, sentinel.id);
    expect(h.received.filter((m) => m.mentioned).map((m) => m.messageId)).toEqual([sentinel.id]);
    expect(h.received.find((m) => m.text === "alice answers bob")?.mentioned).toBe(false);
  });

  it("names a thread's parent channel and guild as group aliases, so the core finds group settings keyed by either", async () => {
    const h = await startAdapter();
    const inGuild = guildMessage(bob, "guild-wide setting applies", { channelId: QUIET });
    const got = await byId(h, inGuild.id);
    expect(got.groupAliases).toContain(GUILD);
    expect(got.mentioned).toBe(false);
  });

  it("ignores its own messages and other bots, even when they mention it", async () => {
    const h = await startAdapter({ config: makeConfig({ requireMention: false }) });
    guildMessage(fake.bot, "my own echo");
    guildMessage(otherBot, `${mention(fake.bot)} bot to bot`, { mentions: [fake.bot] });
    fake.dispatchDirectMessage(otherBot, "a bot in my DMs");
    const human = guildMessage(alice, "a human");
    await byId(h, human.id);
    const dmSentinel = fake.dispatchDirectMessage(alice, "human DM");
    await byId(h, dmSentinel.id);
    expect(h.received.map((m) => m.messageId)).toEqual([human.id, dmSentinel.id]);
  });
});

describe("discord adapter: sending", () => {
  const general: ChatTarget = { platform: "discord", accountId: "discord-main", chatId: GENERAL, chatType: "group" };

  it("sends a full 2,000-character message and refuses a longer one without calling Discord", async () => {
    const h = await startAdapter();
    const full = `${"x".repeat(1999)}y`;
    await h.adapter.send(general, full, { format: "plain" });
    expect(fake.sentMessages(GENERAL).map((m) => m.content)).toEqual([full]);

    const tooLong = h.adapter.send(general, "z".repeat(2001), { format: "plain" });
    await expect(tooLong).rejects.toBeInstanceOf(DiscordAdapterError);
    await expect(tooLong).rejects.toMatchObject({ status: 400 });
    expect(fake.sentMessages(GENERAL)).toHaveLength(1);
  });

  it("rejects with Discord's status when the channel does not exist", async () => {
    const h = await startAdapter();
    const missing = h.adapter.send({ ...general, chatId: "123456789012345678" }, "anyone?", { format: "plain" });
    await expect(missing).rejects.toMatchObject({ name: "SendError", status: 404, code: 10003, permanent: true });
  });

  it("shows typing, and swallows a typing failure", async () => {
    const h = await startAdapter();
    await h.adapter.sendTyping(general);
    expect(fake.typingCount(GENERAL)).toBe(1);

    fake.failNext("POST", /\/typing$/, 403);
    await expect(h.adapter.sendTyping(general)).resolves.toBeUndefined();
    await expect(h.adapter.sendTyping({ ...general, chatId: "123456789012345678" })).resolves.toBeUndefined();
    expect(fake.typingCount(GENERAL)).toBe(1);
    // Typing failing says nothing about sending.
    await h.adapter.send(general, "still here", { format: "plain" });
    expect(fake.sentMessages(GENERAL).map((m) => m.content)).toEqual(["still here"]);
  });
});

describe("discord adapter: attachments", () => {
  it("downloads attachments into the message, in order with the text that follows", async () => {
    const h = await startAdapter();
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
    const withFile = fake.dispatchDirectMessage(alice, "see picture", {
      attachments: [{ filename: "../../etc/cat.png", contentType: "image/png", data: png }],
    });
    const after = fake.dispatchDirectMessage(alice, "and this text came after");
    await byId(h, after.id);
    expect(h.received.map((m) => m.messageId)).toEqual([withFile.id, after.id]);
    expect(h.received[0]?.attachments).toEqual([{ kind: "photo", fileName: "cat.png", mimeType: "image/png", data: png }]);
  });

  it("refuses attachments over the limit, names them for the core to tell the sender, and still passes the text on", async () => {
    const h = await startAdapter({ maxAttachmentBytes: 1024 });
    const big = fake.dispatchDirectMessage(alice, "two files", {
      attachments: [
        { filename: "big.pdf", contentType: "application/pdf", data: Buffer.alloc(4096, 1) },
        // Claims to be small, is not: the download is cut off at the limit.
        { filename: "liar.bin", data: Buffer.alloc(4096, 2), size: 10 },
        { filename: "notes.txt", contentType: "text/plain", data: Buffer.from("ok") },
      ],
    });
    const msg = await byId(h, big.id);
    expect(msg.text).toBe("two files");
    expect(msg.attachments).toEqual([{ kind: "document", fileName: "notes.txt", mimeType: "text/plain", data: Buffer.from("ok") }]);
    expect(msg.droppedAttachments).toEqual([
      { fileName: "big.pdf", reason: "too_large" },
      { fileName: "liar.bin", reason: "too_large" },
    ]);
    expect(fake.sentMessages(fake.dmChannelFor(alice))).toEqual([]); // the adapter itself says nothing
  });

  it("hands over a message whose only content was a refused file, so the core can tell the sender", async () => {
    const h = await startAdapter({ maxAttachmentBytes: 10 });
    const only = fake.dispatchDirectMessage(alice, "", { attachments: [{ filename: "huge.zip", data: Buffer.alloc(100) }] });
    const next = fake.dispatchDirectMessage(alice, "next");
    await byId(h, next.id);
    expect(h.received.map((m) => m.messageId)).toEqual([only.id, next.id]);
    expect(h.received[0]).toMatchObject({ text: "", droppedAttachments: [{ fileName: "huge.zip", reason: "too_large" }] });
    expect(h.received[0]!.attachments).toBeUndefined();
  });
});

describe("discord adapter: connection", () => {
  it("asks the gateway for API v10, JSON and no compression, and honours a gateway override", async () => {
    const override = `${fake.gatewayUrl}/override`;
    const h = await startAdapter({ config: makeConfig({ gatewayUrl: override }) });
    expect(fake.connections[0]).toEqual({ path: "/override", query: { v: "10", encoding: "json" } });
    expect(fake.identifyPayloads[0]?.compress).toBe(false);
    expect(h.statuses.map((s) => s.state)).toEqual(["starting", "connected"]);
  });

  it("resumes after a dropped connection and still hears messages", async () => {
    const h = await startAdapter();
    fake.dropConnection();
    await waitFor(() => fake.stats.resumes === 1 && fake.isLive(), "resume");
    const dm = fake.dispatchDirectMessage(alice, "after the drop");
    await byId(h, dm.id);
    expect(fake.stats.identifies).toBe(1);
    expect(fake.connections.at(-1)?.path).toBe("/resume");
    await waitFor(() => h.statuses.at(-1)?.state === "connected", "connected status");
    expect(h.statuses.map((s) => s.state)).toEqual(["starting", "connected", "reconnecting", "connected"]);
  });

  it("hears messages sent while it was away, replayed on resume", async () => {
    const h = await startAdapter();
    fake.dropConnection();
    const missed = fake.dispatchDirectMessage(alice, "sent during the outage");
    await byId(h, missed.id);
    expect(fake.stats.resumes).toBe(1);
  });

  it("re-identifies after an invalidated session and still hears messages", async () => {
    const h = await startAdapter();
    fake.invalidateSession();
    await waitFor(() => fake.stats.identifies === 2 && fake.isLive(), "re-identify");
    const msg = guildMessage(alice, `${mention(fake.bot)} still there?`, { mentions: [fake.bot] });
    expect((await byId(h, msg.id)).text).toBe("still there?");
  });

  it("rebuilds the client when discord.js gives up on a close code", async () => {
    const h = await startAdapter();
    // 4010 (invalid shard) ends discord.js's own reconnecting for good.
    fake.closeGateway(4010);
    await waitFor(() => fake.stats.identifies === 2 && fake.isLive(), "new client identified");
    const dm = fake.dispatchDirectMessage(bob, "heard by the new client");
    await byId(h, dm.id);
    await waitFor(() => h.statuses.at(-1)?.state === "connected", "connected status");
    expect(h.statuses.some((s) => s.state === "reconnecting" && /code 4010/.test(s.detail ?? ""))).toBe(true);
  });

  it("rebuilds the client when a reconnect hangs past the grace period", async () => {
    // @discordjs/ws (the copy discord.js loads) reconnects a destroyed shard after
    // `await setTimeout(500)` from node:timers/promises, through the shard's internalConnect:
    // watch both, so the test waits for that moment instead of sleeping past it. Those 500 ms
    // waits (fixed in the library, on the real clock) end at once here: only their order matters.
    const { WebSocketShard } = createRequire(createRequire(import.meta.url).resolve("discord.js"))("@discordjs/ws") as {
      WebSocketShard: { prototype: { internalConnect(): Promise<void> } };
    };
    const connects = vi.spyOn(WebSocketShard.prototype, "internalConnect");
    const realSetTimeout = timersPromises.setTimeout;
    const reconnectWaits: Promise<unknown>[] = [];
    const waits = vi.spyOn(timersPromises, "setTimeout").mockImplementation(((...args: Parameters<typeof realSetTimeout>) => {
      if (args[0] !== 500) return realSetTimeout(...args);
      const wait = realSetTimeout(0, args[1], args[2]);
      reconnectWaits.push(wait);
      return wait;
    }) as typeof realSetTimeout);
    try {
      await hungReconnectIsRebuilt(connects, reconnectWaits);
    } finally {
      connects.mockRestore();
      waits.mockRestore();
    }
  });

  async function hungReconnectIsRebuilt(connects: { mock: { calls: unknown[] } }, reconnectWaits: Promise<unknown>[]): Promise<void> {
    const clock = createManualClock();
    const h = await startAdapter({ clock, options: { reconnectGraceMs: 30_000, stableAfterMs: 1_000 } });
    // The resume socket opens but the gateway never says HELLO: discord.js would wait 60 s.
    fake.silenceNextConnections(1);
    fake.dropConnection();
    await waitFor(() => fake.connections.length === 2 && h.statuses.at(-1)?.state === "reconnecting", "hung resume");
    clock.advance(30_000);
    await waitFor(() => fake.stats.identifies === 2 && fake.isLive(), "new client identified");
    const dm = fake.dispatchDirectMessage(alice, "heard after the rebuild");
    await byId(h, dm.id);
    expect(h.statuses.some((s) => s.state === "reconnecting" && /not back after 30000 ms/.test(s.detail ?? ""))).toBe(true);
    // @discordjs/ws would reconnect the destroyed client 500 ms after its destroy; the adapter stops
    // that. Wait for that moment: the reconnect call would be made as the wait ends.
    await vi.waitFor(() => expect(reconnectWaits.length).toBeGreaterThan(0), { timeout: 10_000 });
    for (let seen = 0; seen < reconnectWaits.length; seen = reconnectWaits.length) await Promise.allSettled(reconnectWaits);
    // The first client's connect, its resume, the new client's connect: no fourth.
    expect(connects.mock.calls).toHaveLength(3);
    expect(fake.stats.connections).toBe(3);
    expect(fake.stats.identifies).toBe(2);
  }

  it("starts when Discord is briefly unreachable and connects once it answers", async () => {
    // @discordjs/rest retries a 5xx three times, so four failures end the first attempt.
    fake.failNext("GET", /^\/gateway\/bot$/, 502, 4);
    const h = await startAdapter();
    expect(h.statuses.map((s) => s.state).slice(0, 2)).toEqual(["starting", "reconnecting"]);
    await waitFor(() => h.statuses.at(-1)?.state === "connected" && fake.isLive(), "connected after retry");
    const dm = fake.dispatchDirectMessage(alice, "made it");
    await byId(h, dm.id);
  });

  it("reports failure on a rejected token, without the token in errors or logs", async () => {
    const wrong = "wrong.token.value-that-must-not-leak";
    const logs: string[] = [];
    const statuses: AdapterStatusEvent[] = [];
    const adapter = createDiscordAdapter(
      makeConfig({ token: wrong }),
      {
        logger: pino({ level: "trace" }, { write: (line: string) => void logs.push(line) }),
        state: { get: () => undefined, set: async () => undefined },
        dataDir,
        clock: systemClock,
        maxAttachmentBytes: 1024,
      },
      { identifyThrottler: noThrottle },
    );
    onTestFinished(() => adapter.stop());
    const error: unknown = await adapter.start(testSink({ status: (e) => void statuses.push(e) })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).message)).not.toContain(wrong);
    expect(statuses.at(-1)?.state).toBe("failed");
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join("\n")).not.toContain(wrong);
  });

  it("reports failure when the gateway revokes authentication", async () => {
    const h = await startAdapter();
    fake.closeGateway(4004);
    await waitFor(() => h.statuses.at(-1)?.state === "failed", "failed status");
    expect(h.statuses.at(-1)?.detail).toMatch(/authentication failed/);
    expect(fake.stats.identifies).toBe(1);
  });

  it("keeps the token out of every log line through a busy session", async () => {
    const h = await startAdapter();
    const dm = fake.dispatchDirectMessage(alice, "hi");
    await byId(h, dm.id);
    fake.dropConnection();
    await waitFor(() => fake.stats.resumes === 1 && fake.isLive(), "resume");
    fake.invalidateSession();
    await waitFor(() => fake.stats.identifies === 2 && fake.isLive(), "re-identify");
    await h.adapter
      .send({ platform: "discord", accountId: "discord-main", chatId: "1", chatType: "direct" }, "to nowhere", { format: "plain" })
      .catch(() => undefined);
    await h.adapter.stop();
    // The gateway did get the token; the logs (trace level, discord.js debug included) did not.
    expect(fake.identifyPayloads[0]?.token).toBe(TOKEN);
    expect(h.logs.length).toBeGreaterThan(20);
    expect(h.logs.join("\n")).not.toContain(TOKEN);
    expect(h.logs.join("\n")).not.toContain(TOKEN.split(".").slice(1).join("."));
  });

  it("stops idempotently and closes the gateway", async () => {
    const h = await startAdapter();
    await Promise.all([h.adapter.stop(), h.adapter.stop()]);
    await h.adapter.stop();
    expect(h.statuses.filter((s) => s.state === "stopped")).toHaveLength(1);
    await waitFor(() => !fake.isLive(), "gateway closed");
  });
});

describe("a late RESUMED (discord.js reads the session the destroy cleared)", () => {
  const resumed = (client: Client) => {
    const replayed: number[] = [];
    client.on(Events.ShardResume, (_id, n) => replayed.push(n));
    return replayed;
  };
  const handle = (client: Client, shard: object) =>
    (client.ws as unknown as { handlePacket(packet: object, shard: object): boolean }).handlePacket({ t: "RESUMED", d: {} }, shard);

  it("throws in discord.js itself, so the guard is needed", async () => {
    const client = new Client({ intents: [] });
    expect(() => handle(client, { id: 0, sessionInfo: null, closeSequence: 0 })).toThrow(TypeError);
    await client.destroy();
  });

  it("is dropped once the session is gone or the client destroyed; a live resume still counts its replayed events", async () => {
    let destroyed = false;
    const client = new Client({ intents: [] });
    dropLatePackets(client, () => destroyed);
    const replayed = resumed(client);
    expect(() => handle(client, { id: 0, sessionInfo: null, closeSequence: 0 })).not.toThrow();
    handle(client, { id: 0, sessionInfo: { sequence: 12 }, closeSequence: 10 });
    expect(replayed).toEqual([2]);
    destroyed = true;
    handle(client, { id: 0, sessionInfo: { sequence: 15 }, closeSequence: 12 });
    expect(replayed).toEqual([2]);
    await client.destroy();
  });
});
