import pg from "pg";
import { afterEach, expect, it, onTestFinished } from "vitest";
import { createFakeFeishu, type FakeFeishu } from "../../fakes/feishu.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";
import { waitUntil } from "../../helpers/wait.js";
import { startService, tempDir, type Service } from "../daemon-harness.js";
import { clusterState, platformNodes } from "./cluster-harness.js";
import type { DaemonChild } from "../daemon-process.js";

const noPostgres = lacks("postgres", import.meta.url);

const APP_ID = "cli_a0b1c2d3e4f50617";
const APP_SECRET = "clusterAppSecretThatStaysSecret1";
const ENCRYPT_KEY = "clusterEncryptKeyStaysSecret";
const TOKEN = "clusterVerificationToken01";
const ALICE = "ou_alice00000000000000000000000001";
const DM = "oc_dm_alice0000000000000000000001";
const UNIT = "feishu:fs";

afterEach(async () => {
  delete process.env.BRIDGE_TEST_KEY;
});

async function bridge(mode: "http" | "websocket") {
  const pgServer: TestPostgres = await startTestPostgres();
  onTestFinished(() => pgServer.close());
  const dbUrl = await pgServer.createDatabase("feishu");
  const service: Service = await startService();
  onTestFinished(() => service.close());
  const fake: FakeFeishu = await createFakeFeishu({
    appId: APP_ID,
    appSecret: APP_SECRET,
    encryptKey: ENCRYPT_KEY,
    verificationToken: TOKEN,
    mode,
    retryDelaysMs: [1000, 5000, 15_000],
  });
  onTestFinished(() => fake.close());
  const db = new pg.Pool({ connectionString: dbUrl, max: 1 });
  onTestFinished(() => db.end());
  const dir = tempDir();
  onTestFinished(dir.remove);
  const node = platformNodes({
    dir: dir.path,
    service,
    dbUrl,
    channels: [
      {
        type: "feishu",
        id: "fs",
        app_id: APP_ID,
        app_secret: APP_SECRET,
        mode,
        ...(mode === "http" ? { encrypt_key: ENCRYPT_KEY, verification_token: TOKEN, http: { port: 0 } } : {}),
        api: fake.apiBase,
        streaming: "off",
        ackReaction: { scope: "off" },
        access: { users: [ALICE] },
      },
    ],
    extra: { attachments: { enabled: false } },
  });
  return {
    fake,
    node,
    ...clusterState(db, UNIT),
    texts: () =>
      fake
        .messages(DM)
        .filter((m) => m.sender === "bot")
        .map((m) => fake.textOf(m)),
  };
}

const endpointOf = (child: DaemonChild): string | undefined =>
  [...`${child.out()}${child.err()}`.matchAll(/"url":"(http:\/\/127\.0\.0\.1:\d+\/feishu\/events)"/g)].map((m) => m[1] ?? "").at(-1);

it.skipIf(noPostgres)("HTTP: any node keeps events for the owner; across a kill -9 of the owner each is answered once", { timeout: 90_000 }, async () => {
  const b = await bridge("http");
  const a = b.node("a");
  await a.waitFor((o) => o.includes("daemon started"), "a started");
  const first = await b.owner();
  const second = b.node("b");
  await second.waitFor((o) => o.includes("daemon started"), "b started");
  const owner = first === "a" ? a : second;
  const other = first === "a" ? second : a;
  await waitUntil(() => endpointOf(other), "the other node's endpoint");
  b.fake.setRequestUrl(endpointOf(other) ?? "");

  // Posted to the node that does not own the account: kept, answered 200, answered by the owner.
  const hello = b.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "hello" });
  expect((await hello.delivered).status).toBe(200);
  await waitUntil(() => b.texts().length === 1, "the first answer", 30_000);
  await b.settled();
  // Feishu's redelivery of the same event_id: kept again (one row), answered once.
  expect(await b.fake.resend(hello.eventId)).toBe(200);
  // A forged post is refused by the node that is not the owner as by the owner.
  expect((await b.fake.post(JSON.stringify({ encrypt: "AAAA" }), { "content-type": "application/json" })).status).toBe(401);

  owner.kill();
  await owner.exited;
  // Posted to the survivor while nobody may answer yet: kept and answered 200 at once, answered after its takeover.
  const after = b.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "after the kill" });
  expect((await after.delivered).status).toBe(200);
  expect(await b.owner(first)).not.toBe(first);
  await waitUntil(() => b.texts().length === 2, "the answer from the next owner", 30_000);
  await b.settled();
  await waitUntil(async () => (await b.inboxSize()) === 0, "the inbox emptied by the owner", 30_000);
  expect(b.texts()).toEqual(["You said: hello", "You said: after the kill"]);
});

it.skipIf(noPostgres)("long connection: only the owner connects; after a kill -9 the next owner connects and answers", { timeout: 90_000 }, async () => {
  const b = await bridge("websocket");
  const nodes = [b.node("a")];
  await nodes[0]?.waitFor((o) => o.includes("daemon started"), "a started");
  const first = await b.owner();
  nodes.push(b.node("b"));
  await nodes[1]?.waitFor((o) => o.includes("daemon started"), "b started");
  await waitUntil(() => b.fake.openConnections() === 1, "the owner's connection", 30_000);
  b.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "hello" });
  await waitUntil(() => b.texts().length === 1, "the first answer", 30_000);
  await b.settled();

  const before = b.fake.connectionsOpened();
  nodes[first === "a" ? 0 : 1]?.kill();
  await b.owner(first);
  await waitUntil(() => b.fake.openConnections() === 1 && b.fake.connectionsOpened() > before, "the next owner's connection", 30_000);
  b.fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "after the kill" });
  await waitUntil(() => b.texts().length === 2, "the answer from the next owner", 30_000);
  expect(b.texts()).toEqual(["You said: hello", "You said: after the kill"]);
  expect(b.fake.mostOpenAtOnce()).toBe(1);
});
