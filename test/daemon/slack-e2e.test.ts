/**
 * The whole chain for Slack, both delivery modes: an event from the Slack
 * fake (signed HTTP posts, or Socket Mode envelopes over a real WebSocket)
 * goes through the adapter the daemon builds (the real @slack/web-api and
 * @slack/socket-mode clients), the access rules, journal, queue and relay to
 * the emulator over real HTTP, and the fake model's answer comes back through
 * the fake's Web API to the DM or thread it came from.
 */
import { createHmac } from "node:crypto";
import pino from "pino";
import { describe, expect, it, onTestFinished } from "vitest";
import { slackChannelSchema } from "../../daemon/adapters/slack/config.js";
import { createSlackAdapter, markdownToMrkdwn } from "../../daemon/adapters/slack/index.js";
import { streamText } from "../../emulator/gateway/model.js";
import type { SlackChannelConfig } from "../../daemon/adapters/slack/config.js";
import type { AdapterStateStore, InboundSink } from "../../daemon/vocabulary/adapter.js";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { systemClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeSlack, waitFor, type FakeSlack, type FakeSlackOptions } from "../fakes/slack.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { exerciseQueueModes } from "../helpers/queue-modes.js";
import { testHandle } from "../../daemon/test-handle.js";

const BOT_TOKEN = "xoxb-1111-2222-e2eBotTokenThatMustStaySecret";
const APP_TOKEN = "xapp-1-A0APP00001-3333-e2eAppTokenSecret";
const SIGNING_SECRET = "e2eSigningSecret0123456789abcdef";
const ALICE = "U0ALICE001";
const STRANGER = "U0STRANGER";
const DM = "D0ALICE001";
const GENERAL = "C0GENERAL1";

async function bridge(mode: "http" | "socket", channel: Record<string, unknown> = {}, fakeOptions: Partial<FakeSlackOptions> = {}) {
  const service = await startServiceFixture(`slack-e2e-${mode}-`);
  const fake = await createFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SIGNING_SECRET, mode, postBurst: 50, ...fakeOptions });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "slack",
    id: "sl",
    botToken: BOT_TOKEN,
    mode,
    ...(mode === "http" ? { signingSecret: SIGNING_SECRET, http: { port: 0 } } : { appToken: APP_TOKEN }),
    api: fake.apiBase,
    streaming: "off",
    groupContext: { enabled: false },
    access: { users: [ALICE], groups: { [GENERAL]: {} } },
    ...channel,
  });
  // The "is thinking…" status at once (no queue.typingDelayMs): these turns answer within any delay, and the cases check where it goes.
  config.queue = { ...config.queue, typingDelayMs: 0 };
  let endpoint = "";
  const statuses: { state: string; detail?: string | undefined }[] = [];
  const launch = async (): Promise<Daemon> => {
    const daemon = createDaemon({
      config,
      random: seededRandom(7),
      onAdapterStatus: (_adapter, event) => void statuses.push({ state: event.state, detail: event.detail }),
      // The real adapter, told where its endpoint listens (port 0) so the fake can post there.
      createAdapter: (c, deps) =>
        c.type === "slack"
          ? Promise.resolve(
              createSlackAdapter(c as SlackChannelConfig, deps, {
                onListening: (url) => {
                  endpoint = `${url}/slack/events`;
                  fake.setRequestUrl(endpoint);
                },
              }),
            )
          : undefined,
    });
    onTestFinished(() => daemon.stop({ graceMs: 0 }));
    await daemon.start();
    return daemon;
  };
  const daemon = await launch();
  return { fake, daemon, launch, statuses, service, endpoint: () => endpoint };
}

function memoryState(): AdapterStateStore {
  const values = new Map<string, unknown>();
  return { get: <T>(key: string) => values.get(key) as T | undefined, set: async (key, value) => void values.set(key, value) };
}

/** Posts `body` to the endpoint signed as Slack signs (with `secret`, at `at` seconds). */
function signedPost(url: string, body: string, secret = SIGNING_SECRET, at = Math.floor(Date.now() / 1000)): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-slack-request-timestamp": String(at),
      "x-slack-signature": `v0=${createHmac("sha256", secret).update(`v0:${at}:${body}`).digest("hex")}`,
    },
    body,
  });
}

const texts = (fake: FakeSlack, channel: string) => fake.messages(channel).map((m) => m.text);

describe.each(["http", "socket"] as const)("over %s", (mode) => {
  it("answers a DM in the DM and a channel mention once, in its thread; nobody else", async () => {
    const { fake, daemon } = await bridge(mode);
    expect(daemon.health().adapters).toEqual({ "slack:sl": "connected" });
    fake.say({ user: STRANGER, channel: "D0STRANGER", text: "let me in" });
    const hello = fake.say({ user: ALICE, channel: DM, text: "hello *agent* & co" });
    fake.say({ user: ALICE, channel: GENERAL, text: "not for the bot" });
    const asked = fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> in the channel` });
    // The mention came twice (message + app_mention).
    expect(asked.eventIds).toHaveLength(2);

    await waitFor(() => texts(fake, DM).length === 1 && texts(fake, GENERAL).length === 1, "both replies");
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual(["You said: hello _agent_ &amp; co"]);
    expect(fake.messages(GENERAL)).toMatchObject([{ text: "You said: in the channel", threadTs: asked.ts }]);
    expect(fake.messages("D0STRANGER")).toEqual([]);
    // "is thinking..." while the agent worked: in the DM's thread of the message, and in the mention's thread.
    expect(fake.statuses).toEqual(
      expect.arrayContaining([
        { channel: DM, threadTs: hello.ts, status: "is thinking..." },
        { channel: GENERAL, threadTs: asked.ts, status: "is thinking..." },
      ]),
    );
  });

  it("hears a follow-up in the thread it answers in without a new mention", async () => {
    const { fake, daemon } = await bridge(mode);
    const asked = fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> first` });
    await waitFor(() => texts(fake, GENERAL).length === 1, "first reply");
    fake.say({ user: ALICE, channel: GENERAL, text: "second", threadTs: asked.ts });
    await waitFor(() => texts(fake, GENERAL).length === 2, "second reply");
    await daemon.whenIdle();
    expect(fake.messages(GENERAL).map((m) => [m.text, m.threadTs])).toEqual([
      ["You said: first", asked.ts],
      ["You said: second", asked.ts],
    ]);
  });

  it("never answers its own or another bot's messages, edits or joins", async () => {
    const { fake, daemon } = await bridge(mode, { access: { users: ["*"], groups: { [GENERAL]: { requireMention: false } } } });
    fake.say({ user: fake.bot.userId, channel: DM, text: "my own words" });
    fake.say({ user: "U0OTHERBOT", channel: DM, text: "beep", botId: "B0OTHER001" });
    fake.say({ user: ALICE, channel: DM, text: "edited", subtype: "message_changed" });
    fake.say({ user: ALICE, channel: GENERAL, text: "joined", subtype: "channel_join" });
    fake.say({ user: ALICE, channel: DM, text: "a real one" });
    await waitFor(() => texts(fake, DM).length === 1, "the one reply");
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual(["You said: a real one"]);
    expect(texts(fake, GENERAL)).toEqual([]);
  });

  it("fetches a file a person sends with the bot token and hands it to the agent", async () => {
    const { fake, daemon } = await bridge(mode);
    fake.say({ user: ALICE, channel: DM, text: "read this", files: [{ name: "notes.txt", mimetype: "text/plain", data: Buffer.from("hello file") }] });
    await waitFor(() => texts(fake, DM).length === 1, "the reply");
    await daemon.whenIdle();
    expect(texts(fake, DM)[0]).toMatch(/^You said: read this\n\nAttached files \(in the workspace\):\n+• inbox\/slack\/D0ALICE001\/\d+-notes\.txt$/);
    expect(fake.downloads).toEqual([{ fileId: expect.any(String), authorized: true }]);
  });

  it("sends a file the agent made with the three upload steps, into the thread", async () => {
    const { fake, daemon } = await bridge(mode);
    const asked = fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> !file chart.png` });
    await waitFor(() => fake.messages(GENERAL).some((m) => m.files.length === 1), "the file");
    await daemon.whenIdle();
    const file = fake.messages(GENERAL).find((m) => m.files.length === 1);
    expect(file).toMatchObject({ threadTs: asked.ts, files: [{ name: "chart.png" }] });
    expect(file?.files[0]?.data.subarray(0, 4).toString("hex")).toBe("89504e47");
    const steps = fake
      .calls()
      .map((c) => c.call)
      .filter((c) => c.startsWith("files."));
    expect(steps).toEqual(["files.getUploadURLExternal", "files.completeUploadExternal"]);
  });

  it("puts the acknowledgement reaction on a mention and takes it off once answered", async () => {
    const { fake, daemon } = await bridge(mode);
    const asked = fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> react` });
    await waitFor(() => texts(fake, GENERAL).length === 1, "the reply");
    await daemon.whenIdle();
    // Reactions are best effort beside the reply: the removal may come just after it.
    await waitFor(() => fake.calls().some((c) => c.call === "reactions.remove"), "the reaction removed");
    const reactionCalls = fake
      .calls()
      .map((c) => c.call)
      .filter((c) => c.startsWith("reactions."));
    expect(reactionCalls).toEqual(["reactions.add", "reactions.remove"]);
    expect(fake.reactions(GENERAL, asked.ts)).toEqual([]);
  });

  it("takes the bridge's commands through the app's slash command (/agent new), since Slack keeps a leading / for its own", async () => {
    const { fake, daemon } = await bridge(mode);
    fake.say({ user: ALICE, channel: DM, text: "remember me" });
    await waitFor(() => texts(fake, DM).length === 1, "the reply");
    const answered = await fake.slashCommand({ user: ALICE, channel: DM, text: "whoami" });
    // Slack shows nothing for the empty 200; the answer comes as a message in the DM.
    expect(answered).toEqual({ status: 200, body: "" });
    await waitFor(() => texts(fake, DM).length === 2, "the command's answer");
    expect(texts(fake, DM)[1]).toContain(ALICE);
    await fake.slashCommand({ user: ALICE, channel: DM, text: "new" });
    await waitFor(() => texts(fake, DM).length === 3, "the reset");
    await daemon.whenIdle();
    expect(texts(fake, DM)[2]).toMatch(/fresh|new conversation/i);
    // A mention in a channel carries a command too: "@agent /status".
    fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> /status` });
    await waitFor(() => texts(fake, GENERAL).length === 1, "the status in the thread");
    expect(texts(fake, GENERAL)[0]).not.toMatch(/^You said/);
  });

  it("waits out Slack's per-channel 429 and sends each message once", async () => {
    const { fake, daemon } = await bridge(mode, {}, { postBurst: 1 });
    fake.say({ user: ALICE, channel: DM, text: "one" });
    fake.say({ user: ALICE, channel: DM, text: "two" });
    fake.say({ user: ALICE, channel: DM, text: "three" });
    await waitFor(() => texts(fake, DM).length === 3, "three replies", 20_000);
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual(["You said: one", "You said: two", "You said: three"]);
    expect(fake.rateLimited.filter((m) => m === "chat.postMessage").length).toBeGreaterThan(0);
  });
});

describe("group context", () => {
  it("sends the channel's unaddressed top-level talk with the next mention, which starts a thread of its own", async () => {
    const { fake, daemon } = await bridge("http", { groupContext: { enabled: true } });
    const said = [fake.say({ user: ALICE, channel: GENERAL, text: "the deploy is at five" })];
    said.push(fake.say({ user: ALICE, channel: GENERAL, text: "unrelated" }));
    // An unaddressed reply in some thread is that thread's talk, not the channel's.
    said.push(fake.say({ user: ALICE, channel: GENERAL, text: "said in a thread", threadTs: said[1]?.ts ?? "" }));
    // Each acknowledged, so taken in (and kept) before the mention comes.
    const ids = said.flatMap((m) => m.eventIds);
    await waitFor(() => ids.every((id) => fake.deliveries.some((d) => d.eventId === id && d.outcome === 200)), "the talk acknowledged");
    const asked = fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> when is the deploy?` });
    await waitFor(() => texts(fake, GENERAL).length === 1, "the answer");
    await daemon.whenIdle();
    const [answer] = fake.messages(GENERAL);
    expect(answer?.threadTs).toBe(asked.ts);
    expect(answer?.text).toContain("Recent messages in this group");
    expect(answer?.text).toContain("the deploy is at five");
    expect(answer?.text).toContain("unrelated");
    expect(answer?.text).not.toContain("said in a thread");
    expect(answer?.text).toContain("when is the deploy?");
  });
});

describe("threads of one channel", () => {
  it("keep their own conversations when both speak at once; @bot /new resets one thread only, and /agent new in the channel neither", async () => {
    const { fake, daemon } = await bridge("http");
    const a = fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> apples` });
    const b = fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> bananas` });
    await waitFor(() => texts(fake, GENERAL).length === 2, "both threads answered");
    const inThread = (ts: string) =>
      fake
        .messages(GENERAL)
        .filter((m) => m.threadTs === ts)
        .map((m) => m.text);
    // Both threads at once, follow-ups needing no mention: each recalls only its own.
    fake.say({ user: ALICE, channel: GENERAL, text: "!recall", threadTs: a.ts });
    fake.say({ user: ALICE, channel: GENERAL, text: "!recall", threadTs: b.ts });
    await waitFor(() => inThread(a.ts).length === 2 && inThread(b.ts).length === 2, "both recalls");
    expect(inThread(a.ts)[1]).toContain("apples");
    expect(inThread(a.ts)[1]).not.toContain("bananas");
    expect(inThread(b.ts)[1]).toContain("bananas");
    expect(inThread(b.ts)[1]).not.toContain("apples");
    // Slack takes no slash command in a thread: /agent new in the channel is the channel's own conversation, no thread's.
    await fake.slashCommand({ user: ALICE, channel: GENERAL, text: "new" });
    await waitFor(() => fake.messages(GENERAL).some((m) => m.threadTs === undefined), "the channel's reset said in the channel");
    // "@bot /new" in thread A resets A alone.
    fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> /new`, threadTs: a.ts });
    await waitFor(() => inThread(a.ts).length === 3, "the reset in thread A");
    fake.say({ user: ALICE, channel: GENERAL, text: "!recall", threadTs: a.ts });
    fake.say({ user: ALICE, channel: GENERAL, text: "!recall", threadTs: b.ts });
    await waitFor(() => inThread(a.ts).length === 4 && inThread(b.ts).length === 3, "both recalls again");
    await daemon.whenIdle();
    expect(inThread(a.ts)[3]).not.toContain("apples");
    expect(inThread(b.ts)[2]).toContain("bananas");
  });
});

describe("streamed replies", () => {
  it("stream natively in a channel thread: one message started, appended to as the agent writes, stopped with the answer", async () => {
    const { fake, daemon, service } = await bridge("socket", { streaming: "partial", minEditIntervalMs: 50 });
    const asked = fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> !stream 3` });
    const answer = streamText(600);
    // The first words show while the gateway's clock stands still: the reply is mid-stream by construction.
    await waitFor(() => fake.messages(GENERAL)[0]?.stream === "open", "the stream started");
    await waitFor(() => {
      service.emulator.clock.advance(250);
      const last = fake.messages(GENERAL).at(-1);
      return last?.stream === "stopped" && last.text === answer;
    }, "the stream stopped with the whole answer");
    await daemon.whenIdle();
    const [message] = fake.messages(GENERAL);
    expect(fake.messages(GENERAL)).toHaveLength(1);
    expect(message).toMatchObject({ threadTs: asked.ts, text: answer, stream: "stopped" });
    // It grew in place: several texts, each extending the one before, the last the answer.
    expect(message?.history.length).toBeGreaterThan(1);
    for (const [i, text] of (message?.history ?? []).entries()) if (i > 0) expect(text.startsWith(message?.history[i - 1] ?? "")).toBe(true);
    const calls = fake.calls().map((c) => c.call);
    expect(calls.filter((c) => c === "chat.startStream")).toHaveLength(1);
    expect(calls.filter((c) => c === "chat.stopStream")).toHaveLength(1);
    expect(calls).not.toContain("chat.update");
  });

  it("a streamed reply over several messages in a channel thread: every write, stream stops included, paced by minEditIntervalMs", async () => {
    const interval = 200;
    const { fake, daemon, service } = await bridge("socket", { streaming: "partial", minEditIntervalMs: interval });
    fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> !stream 3 9000` });
    await waitFor(() => fake.messages(GENERAL)[0]?.stream === "open", "the stream started");
    // The first message streams natively; the reply goes on in ordinary messages below it.
    await waitFor(() => {
      service.emulator.clock.advance(250);
      return fake.messages(GENERAL)[0]?.stream === "stopped" && texts(fake, GENERAL).join("").length >= 8000;
    }, "the whole reply, its stream stopped");
    await daemon.whenIdle();
    expect(fake.messages(GENERAL).length).toBeGreaterThan(2);
    const writes = fake.writes(GENERAL);
    expect(writes.filter((w) => w.method === "chat.stopStream")).toHaveLength(1);
    for (const [i, w] of writes.entries())
      if (i > 0) expect(w.at - (writes[i - 1]?.at ?? 0), `${w.method} after ${writes[i - 1]?.method}`).toBeGreaterThanOrEqual(interval);
  });

  it("go by chat.update in a DM, and where the workspace refuses streams", async () => {
    const { fake, daemon, service } = await bridge("socket", { streaming: "partial", minEditIntervalMs: 50 });
    fake.failNext("chat.startStream", "feature_not_enabled");
    fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> !stream 2` });
    fake.say({ user: ALICE, channel: DM, text: "!stream 2" });
    // Both previews out before the gateway's clock moves: both replies stream.
    await waitFor(() => texts(fake, GENERAL).length === 1 && texts(fake, DM).length === 1, "both previews");
    await waitFor(() => {
      service.emulator.clock.advance(250);
      return texts(fake, GENERAL)[0] === markdownToMrkdwn(streamText(600)) && texts(fake, DM)[0] === markdownToMrkdwn(streamText(600));
    }, "both answers, updated in place");
    await daemon.whenIdle();
    expect([fake.messages(GENERAL).length, fake.messages(DM).length]).toEqual([1, 1]);
    expect(fake.calls().filter((c) => c.call === "chat.startStream")).toHaveLength(1);
    expect(fake.calls().filter((c) => c.call === "chat.update").length).toBeGreaterThan(0);
  });
});

describe("direct messages", () => {
  it("end a reply that never streamed without an edit, and pace every send and edit in the DM", async () => {
    const interval = 300;
    const { fake, daemon, service } = await bridge("socket", { streaming: "partial", minEditIntervalMs: interval });
    fake.say({ user: ALICE, channel: DM, text: "hello" });
    await waitFor(() => texts(fake, DM).length === 1, "the short reply");
    await daemon.whenIdle();
    fake.say({ user: ALICE, channel: DM, text: "!stream 2" });
    await waitFor(() => {
      service.emulator.clock.advance(250);
      return texts(fake, DM)[1] === markdownToMrkdwn(streamText(600));
    }, "the streamed answer, updated in place");
    await daemon.whenIdle();
    const writes = fake.writes(DM);
    // The short reply: posted once, never "closed" with a chat.update of the same text.
    expect(writes.filter((w) => w.ts === fake.messages(DM)[0]?.ts).map((w) => w.method)).toEqual(["chat.postMessage"]);
    // The streamed one: posted, then updated, each write changing the text.
    const streamed = writes.filter((w) => w.ts === fake.messages(DM)[1]?.ts);
    expect(streamed[0]?.method).toBe("chat.postMessage");
    expect(streamed.length).toBeGreaterThan(1);
    for (const [i, w] of streamed.entries()) if (i > 0) expect(w.text).not.toBe(streamed[i - 1]?.text);
    // Every write to the DM at least minEditIntervalMs after the one before.
    for (const [i, w] of writes.entries()) if (i > 0) expect(w.at - (writes[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(interval);
  });

  it("answer a message in a DM's thread (an assistant thread) in that thread, thinking there, as a conversation of its own", async () => {
    const { fake, daemon } = await bridge("http");
    const top = fake.say({ user: ALICE, channel: DM, text: "at the top" });
    await waitFor(() => texts(fake, DM).length === 1, "the top-level reply");
    await daemon.whenIdle();
    const asked = fake.say({ user: ALICE, channel: DM, text: "!recall", threadTs: top.ts });
    await waitFor(() => texts(fake, DM).length === 2, "the reply in the thread");
    await daemon.whenIdle();
    fake.say({ user: ALICE, channel: DM, text: "!recall" });
    await waitFor(() => texts(fake, DM).length === 3, "the top level's recall");
    await daemon.whenIdle();
    const [first, inThread, atTop] = fake.messages(DM);
    expect(first).toMatchObject({ text: "You said: at the top" });
    expect(first?.threadTs).toBeUndefined();
    // The thread is its own conversation (nothing recalled), answered in the thread.
    expect(inThread).toMatchObject({ text: "(nothing yet)", threadTs: top.ts });
    // The top level's conversation never saw the thread's message.
    expect(atTop?.text).toBe("at the top");
    expect(atTop?.threadTs).toBeUndefined();
    // "is thinking..." on the thread (Slack refuses it on a reply inside a thread: invalid_thread_ts), never on the reply's own ts.
    expect(fake.statuses.filter((st) => st.channel === DM).map((st) => st.threadTs)).toContain(top.ts);
    expect(fake.statuses.map((st) => st.threadTs)).not.toContain(asked.ts);
  });
});

describe("HTTP Events API", () => {
  it("answers Slack's retries of one event once", async () => {
    const { fake, daemon } = await bridge("http");
    const { eventIds } = fake.say({ user: ALICE, channel: DM, text: "once please" });
    await waitFor(() => texts(fake, DM).length === 1, "the reply");
    const eventId = eventIds[0] ?? "";
    expect(await fake.resend(eventId, "http_timeout")).toBe(200);
    expect(await fake.resend(eventId, "http_error")).toBe(200);
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual(["You said: once please"]);
    expect(fake.deliveries.filter((d) => d.eventId === eventId).map((d) => [d.attempt, d.outcome])).toEqual([
      [0, 200],
      [1, 200],
      [2, 200],
    ]);
  });

  it("answers url_verification and refuses what Slack did not sign, changing nothing", async () => {
    const { fake, daemon, endpoint } = await bridge("http");
    const post = (body: string, secret?: string, at?: number) => signedPost(endpoint(), body, secret, at);
    // A load balancer's health check.
    expect((await fetch(endpoint())).status).toBe(200);
    const challenge = await post(JSON.stringify({ type: "url_verification", token: "t", challenge: "c0ffee" }));
    expect([challenge.status, await challenge.json()]).toEqual([200, { challenge: "c0ffee" }]);

    const event = JSON.stringify({
      type: "event_callback",
      event_id: "EvFORGED01",
      event: { type: "message", channel_type: "im", channel: DM, user: ALICE, text: "forged", ts: "1700000000.000001" },
    });
    expect((await post(event, "someone-elses-secret-000")).status).toBe(401);
    expect((await post(event, SIGNING_SECRET, Math.floor(Date.now() / 1000) - 6 * 60)).status).toBe(401);
    expect((await fetch(endpoint(), { method: "POST", body: event })).status).toBe(401);
    expect((await post("{not json")).status).toBe(400);
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual([]);
  });

  it("acknowledges a malformed event (nothing to keep) and goes on answering", async () => {
    const { fake, daemon, endpoint } = await bridge("http");
    expect((await signedPost(endpoint(), JSON.stringify({ type: "event_callback", event_id: "EvBROKEN01" }))).status).toBe(200);
    expect((await signedPost(endpoint(), JSON.stringify({ type: "event_callback", event_id: "EvBROKEN02", event: { type: 7 } }))).status).toBe(200);
    expect((await signedPost(endpoint(), JSON.stringify({ type: "app_rate_limited", minute_rate_limited: 1 }))).status).toBe(200);
    fake.say({ user: ALICE, channel: DM, text: "still here?" });
    await waitFor(() => texts(fake, DM).length === 1, "the reply");
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual(["You said: still here?"]);
    expect(daemon.health().adapters).toEqual({ "slack:sl": "connected" });
  });

  it("acknowledges an event at once, while the turn it starts goes on", async () => {
    const { fake, daemon, service } = await bridge("http");
    // The gateway's `!stream 3` completes only when the emulator's clock moves: the turn is under way until the test moves it.
    const { eventIds } = fake.say({ user: ALICE, channel: DM, text: "!stream 3" });
    await waitFor(() => fake.deliveries.find((d) => d.eventId === eventIds[0]), "Slack's delivery answered");
    expect(fake.deliveries.filter((d) => d.eventId === eventIds[0])).toEqual([{ eventId: eventIds[0], attempt: 0, outcome: 200 }]);
    expect(texts(fake, DM)).toEqual([]);
    await waitFor(() => {
      service.emulator.clock.advance(250);
      return texts(fake, DM).length === 1;
    }, "the answer once the gateway moves on");
    await daemon.whenIdle();
  });
});

describe("a Web API that fails at start", () => {
  it("does not hold up the start: the bot is identified with backoff, and events Slack retried meanwhile are answered", async () => {
    const service = await startServiceFixture("slack-e2e-late-");
    const fake = await createFakeSlack({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, retryDelaysMs: [0, 500, 1000] });
    onTestFinished(() => fake.close());
    fake.failNext("auth.test", "service_unavailable");
    const config = service.configFor({
      type: "slack",
      id: "sl",
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      http: { port: 0 },
      api: fake.apiBase,
      streaming: "off",
      access: { users: [ALICE] },
    });
    const daemon = createDaemon({
      config,
      random: seededRandom(3),
      createAdapter: (c, deps) =>
        Promise.resolve(
          createSlackAdapter(c as SlackChannelConfig, deps, { backoffInitialMs: 200, onListening: (url) => fake.setRequestUrl(`${url}/slack/events`) }),
        ),
    });
    onTestFinished(() => daemon.stop({ graceMs: 0 }));
    await daemon.start();
    fake.say({ user: ALICE, channel: DM, text: "are you there?" });
    await waitFor(() => texts(fake, DM).length === 1, "the reply", 15_000);
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual(["You said: are you there?"]);
    expect(daemon.health().adapters).toEqual({ "slack:sl": "connected" });
    // Refused once (Slack's 200 {ok:false}), asked again after the pause.
    expect(fake.calls().filter((c) => c.call === "auth.test")).toHaveLength(2);
  });
});

describe("access", () => {
  it("a stranger's DM gets a pairing code, the owner approves it with /approve, and the stranger is answered", async () => {
    const { fake } = await bridge("http", { access: { mode: "pairing", owners: [ALICE] } });
    const said = (channel: string) => texts(fake, channel);
    fake.say({ user: "U0NEWCOMER", channel: "D0NEWCOMER", text: "hello?" });
    await waitFor(() => said("D0NEWCOMER").length === 1, "the code");
    const code = /pairing code is ([A-Z2-9]{8})/.exec(said("D0NEWCOMER")[0] ?? "")?.[1];
    expect(code).toBeDefined();
    fake.say({ user: ALICE, channel: DM, text: `/approve ${code}` });
    await waitFor(() => said(DM).length === 1 && said("D0NEWCOMER").length === 2, "the approval and the notice");
    expect(said(DM)[0]).toContain("Approved");
    fake.say({ user: "U0NEWCOMER", channel: "D0NEWCOMER", text: "now?" });
    await waitFor(() => said("D0NEWCOMER").length === 3, "the answer");
    expect(said("D0NEWCOMER")[2]).toBe("You said: now?");
  });

  it("a bot token Slack refuses stops the start with what to fix, without the token", async () => {
    const fake = await createFakeSlack({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET });
    onTestFinished(() => fake.close());
    const config = slackChannelSchema.parse({
      type: "slack",
      botToken: "xoxb-9999-wrong",
      signingSecret: SIGNING_SECRET,
      http: { port: 0 },
      api: fake.apiBase,
    });
    const adapter = createSlackAdapter(
      { ...config, id: "sl" },
      { logger: pino({ level: "silent" }), state: memoryState(), dataDir: "/nonexistent", clock: systemClock, maxAttachmentBytes: 1024 },
    );
    const started = adapter.start({
      accept: () => Promise.reject(new Error("no message expected")),
      admit: () => ({ allowed: false, attachments: [] }),
      status: () => {},
    });
    await expect(started).rejects.toThrow("slack auth.test failed: invalid_auth: check the channel's botToken (xoxb-...)");
    await expect(started).rejects.not.toThrow("xoxb-9999-wrong");
    await adapter.stop();
  });
});

describe("Socket Mode", () => {
  it("moves to a new connection when Slack asks, losing no event", async () => {
    const { fake, daemon } = await bridge("socket", {}, { refreshGraceMs: 200 });
    fake.say({ user: ALICE, channel: DM, text: "before" });
    await waitFor(() => texts(fake, DM).length === 1, "first reply");
    fake.refresh();
    fake.say({ user: ALICE, channel: DM, text: "during" });
    await waitFor(() => fake.socketStats.connectionsOpened === 2, "a second connection");
    fake.say({ user: ALICE, channel: DM, text: "after" });
    await waitFor(() => texts(fake, DM).length === 3, "three replies");
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual(["You said: before", "You said: during", "You said: after"]);
    expect(daemon.health().adapters).toEqual({ "slack:sl": "connected" });
  });

  it("reconnects with backoff after the connection drops", async () => {
    const { fake, daemon } = await bridge("socket");
    fake.dropConnections();
    await waitFor(() => fake.socketStats.connectionsOpened === 2 && fake.openConnections() === 1, "a new connection");
    fake.say({ user: ALICE, channel: DM, text: "after the drop" });
    await waitFor(() => texts(fake, DM).length === 1, "the reply");
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual(["You said: after the drop"]);
  });

  it("replaces a connection that is up but deaf, and says so", async () => {
    const { fake, daemon, statuses } = await bridge("socket", { watchdog: { deafAfterMs: 300 } });
    fake.say({ user: ALICE, channel: DM, text: "traffic first" });
    await waitFor(() => texts(fake, DM).length === 1, "first reply");
    // From now on the open socket answers pings but no event reaches it.
    fake.goDeaf();
    fake.say({ user: ALICE, channel: DM, text: "lost on a deaf socket?" });
    await waitFor(() => fake.socketStats.connectionsOpened === 2, "the watchdog's new connection");
    await waitFor(() => texts(fake, DM).length === 2, "the reply through the new connection");
    await daemon.whenIdle();
    expect(texts(fake, DM)).toEqual(["You said: traffic first", "You said: lost on a deaf socket?"]);
    // The status said why (the log and /healthz carry it), then "connected" again.
    expect(statuses.filter((s) => s.state === "reconnecting").map((s) => s.detail)).toEqual([
      expect.stringMatching(/^connected but deaf: no event for 300 ms/),
    ]);
    expect(statuses.at(-1)?.state).toBe("connected");
    expect(daemon.health().adapters).toEqual({ "slack:sl": "connected" });
    // /healthz and /metrics count it.
    expect(daemon.health().reconnects).toEqual({ "slack:sl": { deaf: 1 } });
    expect(await daemon.metrics.text()).toContain('agent_bridge_adapter_reconnects_total{platform="slack",account="sl",reason="deaf"} 1');
  });

  it("stops the start with a clear error when Slack refuses the app token", async () => {
    const fake = await createFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SIGNING_SECRET, mode: "socket" });
    onTestFinished(() => fake.close());
    const config = slackChannelSchema.parse({ type: "slack", botToken: BOT_TOKEN, mode: "socket", appToken: "xapp-1-A0-wrong-token", api: fake.apiBase });
    const logger = pino({ level: "silent" });
    const adapter = createSlackAdapter(
      { ...config, id: "sl" },
      { logger, state: memoryState(), dataDir: "/nonexistent", clock: systemClock, maxAttachmentBytes: 1024 },
    );
    const states: string[] = [];
    const sink: InboundSink = {
      accept: () => Promise.reject(new Error("no message expected")),
      admit: () => ({ allowed: false, attachments: [] }),
      status: (event) => states.push(event.state),
    };
    const started = adapter.start(sink);
    await expect(started).rejects.toThrow("Slack refused the app token (invalid_auth)");
    await expect(started).rejects.not.toThrow("wrong-token");
    expect(states).toEqual(["starting", "starting", "failed"]);
    await adapter.stop();
    // Refused for good: no second attempt was made.
    expect(fake.calls().filter((c) => c.call === "apps.connections.open")).toHaveLength(1);
  });
});

it("queue modes: /queue collect answers what came meanwhile as one turn; /queue interrupt stops the answer for the newer message", async () => {
  const { fake, daemon, service } = await bridge("socket");
  await exerciseQueueModes({
    service,
    send: (text) => void fake.say({ user: ALICE, channel: DM, text }),
    replies: () => texts(fake, DM),
    queued: () => testHandle(daemon).scheduler?.depth().totalWaiting ?? 0,
  });
});

it("a channel's queue mode, chosen with /agent queue in the channel (Slack takes no slash command in a thread), is its threads' unless a thread chose its own", async () => {
  const { fake, daemon, service } = await bridge("socket", { access: { users: [ALICE], owners: [ALICE], groups: { [GENERAL]: {} } } });
  await fake.slashCommand({ user: ALICE, channel: GENERAL, text: "queue collect" });
  await waitFor(() => fake.messages(GENERAL).some((m) => m.threadTs === undefined && /collect/.test(m.text)), "the choice said in the channel");
  const asked = fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> hello` });
  const inThread = () =>
    fake
      .messages(GENERAL)
      .filter((m) => m.threadTs === asked.ts)
      .map((m) => m.text);
  await waitFor(() => inThread().length === 1, "the first answer");
  // /queue in the thread says where its mode comes from: the channel's choice.
  fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> /queue`, threadTs: asked.ts });
  await waitFor(() => inThread().length === 2, "the thread's queue mode");
  expect(inThread()[1]).toMatch(/^Queue mode: collect \(chosen for this chat\)/);
  const slept = service.nextSleep(5000);
  fake.say({ user: ALICE, channel: GENERAL, text: "!sleep 5000", threadTs: asked.ts });
  await slept;
  fake.say({ user: ALICE, channel: GENERAL, text: "a", threadTs: asked.ts });
  fake.say({ user: ALICE, channel: GENERAL, text: "b", threadTs: asked.ts });
  await waitFor(() => (testHandle(daemon).scheduler?.depth().totalWaiting ?? 0) === 2, "both taken while the turn runs");
  service.emulator.clock.advance(5000);
  await waitFor(() => inThread().length === 4, "the collected answer");
  expect(inThread().slice(2)).toEqual(["slept 5000", "You said: (2 messages, in the order they were sent:)\n\n[1] a\n\n[2] b"]);
  // The thread's own choice wins over the channel's.
  fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> /queue followup`, threadTs: asked.ts });
  await waitFor(() => inThread().length === 5, "the thread's own choice");
  fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> /queue`, threadTs: asked.ts });
  await waitFor(() => inThread().length === 6, "the thread's queue mode again");
  expect(inThread()[5]).toMatch(/^Queue mode: followup \(chosen for this chat\)/);
});
