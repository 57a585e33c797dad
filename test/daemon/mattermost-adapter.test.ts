/**
 * What is particular to Mattermost, the adapter against the fake server with a
 * test sink: a dropped socket resumes (`connection_id`, `sequence_number`) and
 * the server replays what it missed; a server that forgot the connection
 * answers with a new hello and the adapter fetches the missed posts
 * (`?since=`); every post reaches the sink once. Rate limits (429 with
 * Retry-After) become a retryable SendError; a refused token is a clear error
 * without the token; files come in with their kind.
 */
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { mattermostChannelSchema } from "../../daemon/adapters/mattermost/config.js";
import { createMattermostAdapter } from "../../daemon/adapters/mattermost/index.js";
import { mattermostPlatform } from "../../daemon/adapters/mattermost/platform.js";
import { undiciHttp } from "../../daemon/helpers/probe.js";
import { type ChatAdapter, type InboundMessage, SendError } from "../../daemon/vocabulary/adapter.js";
import { systemClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeMattermost, type FakeMattermost } from "../fakes/mattermost.js";
import { testSink } from "../fakes/sink.js";
import { waitUntil } from "../helpers/wait.js";

const TOKEN = "adaptert0kenmuststaysecre1";
const BOT = { id: "b0tb0tb0tb0tb0tb0tb0tb0tb0", username: "agentbot" };
const ALICE = { id: "a11cea11cea11cea11cea11cea", username: "alice" };
const DM = "d1rectd1rectd1rectd1rectd1";
const TOWN = "t0wnt0wnt0wnt0wnt0wnt0wnt0";
const TEAM = "teamteamteamteamteamteamte";

let fake: FakeMattermost;
let adapter: ChatAdapter;
const received: InboundMessage[] = [];
const logs: string[] = [];

function build(token: string): ChatAdapter {
  const channel = { ...mattermostChannelSchema.parse({ type: "mattermost", bot_token: token, base_url: fake.baseUrl }), id: "mm" };
  const state = new Map<string, unknown>();
  return createMattermostAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, { write: (line: string) => void logs.push(line) }),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { random: seededRandom("mm"), backoffInitialMs: 10, backoffMaxMs: 50 },
  );
}

beforeAll(async () => {
  fake = await createFakeMattermost({
    token: TOKEN,
    bot: BOT,
    users: [ALICE],
    channels: [
      { id: DM, type: "D" },
      { id: TOWN, type: "O", team_id: TEAM, name: "town-square" },
    ],
  });
  adapter = build(TOKEN);
  await adapter.start(testSink({ accept: (m) => void received.push(m) }));
  return async () => {
    await adapter.stop();
    await fake.close();
  };
});
afterAll(() => {
  expect(logs.join("")).not.toContain(TOKEN);
});

const texts = (chatId: string) => received.filter((m) => m.chatId === chatId).map((m) => m.text);

it("reads a channel post's mention, its team and its thread; a direct message is direct", async () => {
  const root = fake.post({ channelId: TOWN, userId: ALICE.id, message: "no mention here" });
  fake.post({ channelId: TOWN, userId: ALICE.id, message: "@agentbot in the thread", rootId: root.id });
  fake.post({ channelId: DM, userId: ALICE.id, message: "hello" });
  await waitUntil(() => texts(DM).includes("hello") && texts(TOWN).length === 2, "the three posts");
  const [plain, threaded] = received.filter((m) => m.chatId === TOWN);
  expect(plain).toMatchObject({ chatType: "group", mentioned: false, groupAliases: [TEAM], userId: ALICE.id, userName: "alice" });
  expect(plain?.threadId).toBeUndefined();
  expect(threaded).toMatchObject({ chatType: "group", mentioned: true, threadId: root.id, text: "in the thread" });
  expect(received.find((m) => m.text === "hello")).toMatchObject({ chatType: "direct", chatId: DM });
  // The bot's own posts come back on its socket and are not taken.
  await adapter.send({ platform: "mattermost", accountId: "mm", chatId: DM, chatType: "direct" }, "my own words", { format: "markdown" });
  fake.post({ channelId: DM, userId: ALICE.id, message: "after" });
  await waitUntil(() => texts(DM).includes("after"), "the next post");
  expect(texts(DM)).not.toContain("my own words");
});

it("a dropped socket resumes its server connection: what was posted meanwhile is replayed, each post once, no catch-up needed", async () => {
  const before = fake.socketLog().length;
  fake.dropSockets();
  fake.post({ channelId: DM, userId: ALICE.id, message: "while dropped 1" });
  fake.post({ channelId: DM, userId: ALICE.id, message: "while dropped 2" });
  await waitUntil(() => texts(DM).includes("while dropped 2"), "the replayed posts");
  expect(
    fake
      .socketLog()
      .slice(before)
      .some((s) => s.resumed),
  ).toBe(true);
  fake.post({ channelId: DM, userId: ALICE.id, message: "live again" });
  await waitUntil(() => texts(DM).includes("live again"), "a live post");
  expect(texts(DM).filter((t) => t.startsWith("while dropped"))).toEqual(["while dropped 1", "while dropped 2"]);
});

it("a server that forgot the connection sends a new hello: the missed posts are fetched by ?since= and each handed over once", async () => {
  const sinceCalls = () => fake.calls().filter((c) => c.method === "GET" && /\/channels\/\w+\/posts$/.test(c.path)).length;
  const calls = sinceCalls();
  fake.forgetConnections();
  fake.postUnannounced({ channelId: DM, userId: ALICE.id, message: "missed 1" });
  fake.postUnannounced({ channelId: TOWN, userId: ALICE.id, message: "@agentbot missed 2" });
  await waitUntil(() => texts(DM).includes("missed 1") && texts(TOWN).includes("missed 2"), "the caught-up posts");
  expect(sinceCalls()).toBeGreaterThanOrEqual(calls + 2);
  fake.post({ channelId: DM, userId: ALICE.id, message: "after the catch-up" });
  await waitUntil(() => texts(DM).includes("after the catch-up"), "a live post");
  // Nothing taken before came again (the catch-up also returned older posts edited or at the mark).
  const ids = received.map((m) => m.messageId);
  expect(new Set(ids).size).toBe(ids.length);
});

it("a direct channel opened while the socket was gone is found by the catch-up (GET /users/me/channels) and its posts handed over once", async () => {
  fake.forgetConnections();
  const opened = fake.openDirect(ALICE.id);
  fake.postUnannounced({ channelId: opened, userId: ALICE.id, message: "in a new channel 1" });
  fake.postUnannounced({ channelId: opened, userId: ALICE.id, message: "in a new channel 2" });
  await waitUntil(() => texts(opened).length === 2, "the new channel's posts");
  expect(received.filter((m) => m.chatId === opened)).toMatchObject([
    { chatType: "direct", text: "in a new channel 1" },
    { chatType: "direct", text: "in a new channel 2" },
  ]);
  // The channel is known now: the next catch-up asks it by its own mark, and nothing comes twice.
  fake.forgetConnections();
  fake.postUnannounced({ channelId: opened, userId: ALICE.id, message: "in a new channel 3" });
  await waitUntil(() => texts(opened).length === 3, "the third post");
  expect(texts(opened)).toEqual(["in a new channel 1", "in a new channel 2", "in a new channel 3"]);
});

it("a 429 is a retryable SendError that waits Retry-After; the next try goes through", async () => {
  const target = { platform: "mattermost", accountId: "mm", chatId: DM, chatType: "direct" as const };
  fake.limitRequests(1, 1, 10, "POST /api/v4/posts");
  const refused = await adapter.send(target, "too soon", { format: "markdown" }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(SendError);
  expect(refused).toMatchObject({ permanent: false, status: 429, retryAfterMs: 1000 });
  // The refusal said the window is spent (X-RateLimit-Remaining 0): the next call waits for it instead of earning another 429.
  const sent = await adapter.send(target, "in time", { format: "markdown" });
  expect(fake.calls().filter((c) => c.status === 429)).toHaveLength(1);
  expect(sent?.messageId).toBe(fake.botPosts(DM).at(-1)?.id);
  // A post Mattermost will never take (a root that is not in the channel) is permanent.
  const bad = await adapter.send({ ...target, threadId: "nosuchrootnosuchrootnosuch" }, "x", { format: "markdown" }).catch((e: unknown) => e);
  expect(bad).toMatchObject({ permanent: true, status: 400 });
});

it("files come in with their kind, fetched with the token; audio is marked for transcription", async () => {
  const png = fake.upload(DM, "chart.png", Buffer.from("png-bytes"));
  const clip = fake.upload(DM, "note.m4a", Buffer.from("audio-bytes"));
  fake.post({ channelId: DM, userId: ALICE.id, message: "two files", fileIds: [png.id, clip.id] });
  const message = await waitUntil(() => received.find((m) => m.text === "two files"), "the post with files");
  expect(message.attachments?.map((a) => [a.kind, a.fileName, a.data.toString()])).toEqual([
    ["photo", "chart.png", "png-bytes"],
    ["audio", "note.m4a", "audio-bytes"],
  ]);
});

it("a refused token: start fails saying so, and check says how to fix it, neither naming the token", async () => {
  const wrong = "wr0ngt0kennevershownanywh1";
  const other = build(wrong);
  const error = await other.start(testSink({})).catch((e: unknown) => e);
  expect(String(error)).toContain("HTTP 401");
  expect(String(error)).not.toContain(wrong);
  const channelWith = (token: string) => ({ ...mattermostChannelSchema.parse({ type: "mattermost", bot_token: token, base_url: fake.baseUrl }), id: "mm" });
  const checkDeps = { http: undiciHttp, timeoutMs: 5000, readFile: async () => "" };
  const channel = channelWith(wrong);
  const checked = await mattermostPlatform.check(channel, checkDeps);
  expect(checked).toMatchObject({ status: "fail" });
  expect(JSON.stringify(checked)).not.toContain(wrong);
  const good = await mattermostPlatform.check(channelWith(TOKEN), checkDeps);
  expect(good).toMatchObject({ status: "ok", message: "token accepted (@agentbot)" });
});

it("typing goes to the channel, and into the thread where there is one; reactions go by emoji name", async () => {
  const target = { platform: "mattermost", accountId: "mm", chatId: TOWN, chatType: "group" as const };
  const root = fake.post({ channelId: TOWN, userId: ALICE.id, message: "a root" });
  await adapter.sendTyping(target);
  await adapter.sendTyping({ ...target, threadId: root.id });
  expect(fake.typing().slice(-2)).toEqual([
    { channel_id: TOWN, parent_id: "" },
    { channel_id: TOWN, parent_id: root.id },
  ]);
  await adapter.reactions?.react(target, root.id, "✅", { remove: false });
  expect(fake.reactionsOn(root.id)).toEqual(["white_check_mark"]);
});
