/**
 * The whole chain for Feishu/Lark, both delivery modes: an event from the
 * fake Feishu (encrypted, signed HTTP posts to the endpoint, or frames down
 * the SDK's long connection) goes through the adapter the daemon builds (the
 * real @larksuiteoapi/node-sdk), the access and mention rules, journal, queue
 * and relay to the emulator over real HTTP, and the fake model's answer
 * comes back as a card in the chat, the group or the thread it came from.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import type { FeishuChannelConfig } from "../../daemon/adapters/feishu/config.js";
import { createFeishuAdapter } from "../../daemon/adapters/feishu/index.js";
import { createDaemon } from "../../daemon/daemon.js";
import { transcriptionSchema } from "../../daemon/vocabulary/config-fields.js";
import { streamText } from "../../emulator/gateway/model.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeFeishu, type FakeFeishu, type FakeFeishuOptions } from "../fakes/feishu.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { waitUntil } from "../helpers/wait.js";

const APP_ID = "cli_00112233445566aa";
const APP_SECRET = "e2eAppSecretThatMustStaySecret01";
const ENCRYPT_KEY = "e2eEncryptKeyThatStaysSecret";
const TOKEN = "e2eVerificationToken0001";
const ALICE = "ou_alice00000000000000000000000001";
const STRANGER = "ou_stranger000000000000000000000001";
const DM = "oc_dm_alice0000000000000000000001";
const GROUP = "oc_group0000000000000000000000001";

async function bridge(
  mode: "http" | "websocket",
  channel: Record<string, unknown> = {},
  fakeOptions: Partial<FakeFeishuOptions> = {},
  transcription?: Record<string, unknown>,
) {
  const service = await startServiceFixture(`feishu-e2e-${mode}-`);
  const fake = await createFakeFeishu({
    appId: APP_ID,
    appSecret: APP_SECRET,
    encryptKey: ENCRYPT_KEY,
    verificationToken: TOKEN,
    mode,
    retryDelaysMs: [100, 200, 400],
    ...fakeOptions,
  });
  onTestFinished(() => fake.close());
  const base = service.configFor({
    type: "feishu",
    id: "fs",
    app_id: APP_ID,
    app_secret: APP_SECRET,
    mode,
    ...(mode === "http" ? { encrypt_key: ENCRYPT_KEY, verification_token: TOKEN, http: { port: 0 } } : {}),
    api: fake.apiBase,
    streaming: "off",
    groupContext: { enabled: false },
    access: { users: [ALICE], groups: { [GROUP]: {} } },
    ...channel,
  });
  const config = transcription
    ? { ...base, transcription: transcriptionSchema.parse({ kind: "openai", url: `${service.emulator.emulator.gateway.url}/v1`, ...transcription }) }
    : base;
  if (process.env.FEISHU_DEBUG) (config as { logLevel: string }).logLevel = "debug";
  const daemon = createDaemon({
    config,
    random: seededRandom(7),
    // The real adapter, told where its endpoint listens (port 0) so the fake can post there.
    createAdapter: (c, deps) =>
      c.type === "feishu"
        ? Promise.resolve(createFeishuAdapter(c as FeishuChannelConfig, deps, { onListening: (url) => fake.setRequestUrl(`${url}/feishu/events`) }))
        : undefined,
  });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { fake, daemon, service };
}

const bot = (fake: FakeFeishu, chatId: string) => fake.messages(chatId).filter((m) => m.sender === "bot");
const texts = (fake: FakeFeishu, chatId: string) => bot(fake, chatId).map((m) => fake.textOf(m));

describe.each(["http", "websocket"] as const)("over %s", (mode) => {
  it("answers a direct message in the chat and a group mention under it, once each; nobody else", async () => {
    const { fake, daemon } = await bridge(mode);
    expect(daemon.health().adapters).toEqual({ "feishu:fs": "connected" });
    fake.say({ user: STRANGER, chatId: "oc_dm_stranger", chatType: "p2p", text: "let me in" });
    const hello = fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "hello agent" });
    fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text: "not for the bot" });
    const asked = fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text: "in the group", mentionBot: true });
    await waitUntil(() => texts(fake, DM).length === 1 && texts(fake, GROUP).length === 1, "both replies");
    await daemon.whenIdle();
    expect(bot(fake, DM)).toMatchObject([{ msgType: "interactive", parentId: hello.message.id }]);
    expect(texts(fake, DM)).toEqual(["You said: hello agent"]);
    expect(bot(fake, GROUP).filter((m) => m.msgType === "interactive")).toMatchObject([{ parentId: asked.message.id }]);
    expect(texts(fake, GROUP)).toEqual(["You said: in the group"]);
    expect(fake.messages("oc_dm_stranger").filter((m) => m.sender === "bot")).toEqual([]);
  });

  it("a thread is a session of its own, answered in the thread; the acknowledgement reaction comes and goes", async () => {
    const { fake, daemon } = await bridge(mode);
    const root = fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text: "start", mentionBot: true });
    await waitUntil(() => texts(fake, GROUP).length === 1, "the first reply");
    const inThread = fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text: "in the thread", mentionBot: true, threadOf: root.message.id });
    await waitUntil(() => texts(fake, GROUP).length === 2, "the thread's reply");
    await daemon.whenIdle();
    const reply = bot(fake, GROUP)[1];
    expect(reply).toMatchObject({ threadId: inThread.message.threadId, parentId: inThread.message.id });
    expect(fake.textOf(reply!)).toBe("You said: in the thread");
    // 👀 on the mention while it was answered (Feishu's GLANCE), gone once answered.
    await waitUntil(
      () => fake.calls().filter((c) => c.path.endsWith("/reactions") || /\/reactions\//.test(c.path)).length === 4,
      "both reactions set and removed",
    );
    expect(fake.reactions(root.message.id)).toEqual([]);
    expect(fake.reactions(inThread.message.id)).toEqual([]);
  });
});

describe("streamed and asked", () => {
  it("a streamed reply is one card streaming as the agent writes (CardKit), closed with the whole answer", async () => {
    const { fake, daemon, service } = await bridge("http", { streaming: "partial", minEditIntervalMs: 50 });
    fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "!stream 3" });
    // The first words show while the gateway's clock stands still: the reply is mid-stream by construction.
    await waitUntil(() => texts(fake, DM).length === 1, "the preview");
    const answer = streamText(600);
    await waitUntil(() => {
      service.emulator.clock.advance(250);
      return texts(fake, DM)[0] === answer;
    }, "the whole answer");
    await daemon.whenIdle();
    expect(bot(fake, DM)).toHaveLength(1);
    // Feishu's card streaming: a card entity, its text pushed as it grew, then closed with the whole answer.
    const pushes = fake.calls().filter((c) => c.method === "PUT" && c.path.endsWith("/elements/reply/content"));
    expect(pushes.length).toBeGreaterThan(0);
    expect(pushes.every((c) => c.status === 200)).toBe(true);
    await waitUntil(() => fake.streamingOf(bot(fake, DM)[0]!.id) === false, "streaming mode closed");
    expect(fake.calls().filter((c) => c.status !== 200)).toEqual([]);
  });

  it("where the app may not use card streaming, a streamed reply is an ordinary card patched in place", async () => {
    const { fake, daemon, service } = await bridge("http", { streaming: "partial", minEditIntervalMs: 50 }, { cardKitScope: false });
    fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "!stream 3" });
    await waitUntil(() => texts(fake, DM).length === 1, "the preview");
    const answer = streamText(600);
    await waitUntil(() => {
      service.emulator.clock.advance(250);
      return texts(fake, DM)[0] === answer;
    }, "the whole answer");
    await daemon.whenIdle();
    expect(bot(fake, DM)).toHaveLength(1);
    expect(fake.calls().filter((c) => c.method === "PATCH" && c.status === 200).length).toBeGreaterThan(0);
    // Refused once, then not asked again.
    expect(fake.calls().filter((c) => c.path === "/open-apis/cardkit/v1/cards")).toHaveLength(1);
  });

  it.each(["http", "websocket"] as const)(
    "a question with buttons over %s: a card with one button each, the tap is the answer, the card then says who chose what; a redelivered tap counts once",
    async (mode) => {
      const { fake, daemon } = await bridge(mode, { buttons: { tools: ["choice", "confirm"] } });
      fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "!ask Deploy where? | staging | production" });
      const question = await waitUntil(() => bot(fake, DM).find((m) => fake.buttonsOf(m.id).length > 0), "the question");
      expect(fake.buttonsOf(question.id)).toEqual(["staging", "production"]);
      // Over HTTP the tap is posted (verified like any event); over the long connection it comes down as an event frame.
      const tapped = fake.tap({ user: ALICE, messageId: question.id, index: 1 });
      const tap = await tapped.delivered;
      expect(tap.status).toBe(200);
      // The callback's answer carries no card: the card is updated afterwards through the API (the 3 s answer would not wait for it).
      expect(JSON.parse(tap.body)).toEqual({});
      await waitUntil(() => texts(fake, DM).some((t) => /returned: production/.test(t)), "the agent's next answer");
      await waitUntil(() => fake.buttonsOf(question.id).length === 0, "the buttons gone");
      expect(fake.textOf(bot(fake, DM).find((m) => m.id === question.id)!)).toMatch(/^Deploy where\?\nproduction: chosen by /);
      // The card was patched in place (an interactive message, update_multi kept), not sent again.
      expect(
        fake
          .calls()
          .filter((c) => c.method === "PATCH" && c.path === `/open-apis/im/v1/messages/${question.id}`)
          .map((c) => c.status),
      ).toContain(200);
      // Feishu's redelivery of the same callback (its event_id) is answered and counted once.
      expect(await fake.resend(tapped.eventId)).toBe(200);
      await daemon.whenIdle();
      expect(texts(fake, DM).filter((t) => /returned:/.test(t))).toHaveLength(1);
    },
  );

  it("a voice message is answered from its transcript; one longer than maxSeconds (Feishu's duration) is not transcribed", async () => {
    const { fake } = await bridge("http", {}, {}, { maxSeconds: 120 });
    fake.say({
      user: ALICE,
      chatId: DM,
      chatType: "p2p",
      file: { kind: "audio", name: "voice.opus", data: Buffer.from("ship the release on friday"), durationMs: 2500 },
    });
    const [reply] = await waitUntil(() => texts(fake, DM).length === 1 && texts(fake, DM), "the answer");
    expect(reply).toContain("Transcript of the person's voice note");
    expect(reply).toContain("ship the release on friday");
    fake.say({
      user: ALICE,
      chatId: DM,
      chatType: "p2p",
      file: { kind: "audio", name: "ramble.opus", data: Buffer.from("a long ramble"), durationMs: 121_000 },
    });
    const said = await waitUntil(() => texts(fake, DM).length === 2 && texts(fake, DM), "the second answer");
    expect(said[1]).toMatch(/could not be transcribed \(it is longer than the limit of 2 minutes\)/);
  });
});
