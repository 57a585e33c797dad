/**
 * Feishu/Lark over the SDK's long connection (mode "websocket"), against the
 * fake's endpoint discovery and protobuf frames (test/fakes/feishu-frames.ts):
 * events down the connection answered only once the core has them, a failed
 * hand-over answered 500 and delivered again, an event split into parts, a
 * dropped connection reconnected by the SDK without losing what was said
 * meanwhile, and wrong credentials refused at start with a clear error.
 */
import pino from "pino";
import { describe, expect, it, onTestFinished } from "vitest";
import { feishuChannelSchema, type FeishuChannelConfig } from "../../daemon/adapters/feishu/config.js";
import { createFeishuAdapter } from "../../daemon/adapters/feishu/index.js";
import type { AdapterStatusEvent, ChatAdapter, InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { systemClock } from "../../shared/clock.js";
import { createFakeFeishu, type FakeFeishu, type FakeFeishuOptions } from "../fakes/feishu.js";
import { testSink } from "../fakes/sink.js";
import { waitUntil } from "../helpers/wait.js";

const APP_ID = "cli_fedcba9876543210";
const APP_SECRET = "socketTestAppSecretStaysSecret01";
const ALICE = "ou_alice00000000000000000000000001";
const DM = "oc_dm_alice0000000000000000000001";

async function start(options: { fake?: Partial<FakeFeishuOptions>; secret?: string; failFirst?: string } = {}) {
  const fake: FakeFeishu = await createFakeFeishu({
    appId: APP_ID,
    appSecret: APP_SECRET,
    mode: "websocket",
    retryDelaysMs: [50, 100, 200, 400, 800, 1600, 3200],
    ...options.fake,
  });
  const channel: FeishuChannelConfig = {
    ...feishuChannelSchema.parse({ type: "feishu", app_id: APP_ID, app_secret: options.secret ?? APP_SECRET, api: fake.apiBase, access: { mode: "open" } }),
    id: "fs",
  };
  const logs: string[] = [];
  const adapter: ChatAdapter = createFeishuAdapter(channel, {
    logger: pino({ level: "trace" }, { write: (line: string) => void logs.push(line) }),
    state: { get: () => undefined, set: async () => undefined },
    dataDir: "/nonexistent",
    clock: systemClock,
    maxAttachmentBytes: 1024 * 1024,
  });
  const accepted: InboundMessage[] = [];
  const offered: InboundMessage[] = [];
  const statuses: AdapterStatusEvent[] = [];
  let failures = options.failFirst ? 1 : 0;
  const sink = testSink({
    accept: (m) => {
      offered.push(m);
      if (m.text === options.failFirst && failures-- > 0) throw new Error("journal unavailable");
      accepted.push(m);
    },
    status: (e) => void statuses.push(e),
  });
  // Closed when the test finishes: the adapter, then the fake; no secret or connection ticket in the logs.
  onTestFinished(async () => {
    await adapter.stop();
    await fake.close();
    const all = logs.join("");
    expect(all.includes(APP_SECRET), "the app secret in the logs").toBe(false);
    expect(/ticket=[0-9a-f]{6}/.test(all), "a connection ticket in the logs").toBe(false);
  });
  return { fake, adapter, sink, accepted, offered, statuses, logs };
}

describe("the long connection", () => {
  it("connects through the endpoint discovery, takes a direct message, and answers it 200 on the connection", async () => {
    const s = await start();
    await s.adapter.start(s.sink);
    expect(s.fake.openConnections()).toBe(1);
    expect(s.statuses.map((e) => e.state)).toContain("connected");
    const said = s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "over the socket" });
    expect(await said.delivered).toMatchObject({ status: 200, attempt: 1 });
    expect(s.accepted.map((m) => [m.chatId, m.chatType, m.text])).toEqual([[DM, "direct", "over the socket"]]);
    const receipt = await s.adapter.send({ platform: "feishu", accountId: "fs", chatId: DM, chatType: "direct", replyToMessageId: said.message.id }, "back", {
      format: "plain",
    });
    expect(s.fake.messages(DM).find((m) => m.id === receipt?.messageId)).toMatchObject({ sender: "bot", parentId: said.message.id });
  });

  it("a hand-over that failed is answered 500 on the connection; Feishu's redelivery is taken once", async () => {
    const s = await start({ failFirst: "again please" });
    await s.adapter.start(s.sink);
    const said = s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "again please" });
    expect(await said.delivered).toMatchObject({ status: 200, attempt: 2 });
    expect(s.fake.deliveries().map((d) => d.status)).toEqual([500, 200]);
    expect(s.accepted.map((m) => m.text)).toEqual(["again please"]);
  });

  it("an event split into parts is put together", async () => {
    const s = await start({ fake: { framePartBytes: 200 } });
    await s.adapter.start(s.sink);
    const long = "a long message ".repeat(60).trim();
    expect((await s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: long }).delivered).status).toBe(200);
    expect(s.accepted.map((m) => m.text)).toEqual([long]);
  });

  it("a dropped connection is opened again by the SDK; what was said meanwhile arrives once, nothing lost", async () => {
    const s = await start();
    await s.adapter.start(s.sink);
    s.fake.dropConnections();
    const meanwhile = s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "while it was down" });
    await waitUntil(() => s.fake.connectionsOpened() === 2 && s.fake.openConnections() === 1, "the connection opened again");
    // Pushed while no connection was up (no answer), delivered again once one was.
    expect(await meanwhile.delivered).toMatchObject({ status: 200, attempt: expect.any(Number) });
    expect((await meanwhile.delivered).attempt).toBeGreaterThan(1);
    expect((await s.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "after" }).delivered).status).toBe(200);
    expect(s.accepted.map((m) => m.text)).toEqual(["while it was down", "after"]);
    expect(s.statuses.map((e) => e.state)).toEqual(expect.arrayContaining(["reconnecting", "connected"]));
  });

  it("wrong credentials: start fails with a clear error, and no connection is opened", async () => {
    const s = await start({ secret: "notTheAppSecretAtAll000000000001" });
    const failed = await s.adapter.start(s.sink).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(failed)).toMatch(/Feishu refused the app's credentials \(code 10014/);
    expect(String(failed)).not.toContain("notTheAppSecretAtAll");
    expect(s.fake.connectionsOpened()).toBe(0);
  });
});
