/**
 * A Slack app on a bridge of several machines: two daemon processes on one
 * PostgreSQL database, the account (`slack:sl`) owned by one of them through
 * its lease. With the HTTP Events API every node serves the endpoint: one
 * that does not own the account keeps each event in the database's inbox and
 * acknowledges it once kept; the owner takes it in and answers. Killed
 * (SIGKILL), the owner's events wait in the inbox for the next owner, and
 * every message is answered once. Socket Mode: only the owner ever holds a
 * connection.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, expect, it, onTestFailed, onTestFinished } from "vitest";
import { createFakeSlack, type FakeSlack } from "../../fakes/slack.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { waitUntil } from "../../helpers/wait.js";
import { startService, tempDir, type Service } from "../daemon-harness.js";
import { startDaemonProcess, writeDaemonConfig, type DaemonChild } from "../daemon-process.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

const BOT_TOKEN = "xoxb-1111-2222-clusterBotTokenSecret";
const APP_TOKEN = "xapp-1-A0APP00001-3333-clusterAppToken";
const SIGNING_SECRET = "clusterSigningSecret0123456789ab";
const ALICE = "U0ALICE001";
const DM = "D0ALICE001";
const UNIT = "slack:sl";

afterEach(async () => {
  delete process.env.BRIDGE_TEST_KEY;
});

interface Bridge {
  fake: FakeSlack;
  node(name: string): DaemonChild;
  owner(not?: string): Promise<string>;
  /** Waits until the database holds no message still to be answered (every reply recorded as delivered). */
  settled(): Promise<void>;
  texts(): string[];
  /** Events kept in the inbox, not yet taken by the owner. */
  inboxSize(): Promise<number>;
}

async function bridge(mode: "http" | "socket", channelExtra: Record<string, unknown> = {}): Promise<Bridge> {
  const pgServer: TestPostgres = await startTestPostgres();
  onTestFinished(() => pgServer.close());
  const dbUrl = await pgServer.createDatabase("slack");
  const service: Service = await startService();
  onTestFinished(() => service.close());
  // Slack's retries come about at once, after a minute and after five: shortened here, in the same order.
  const fake = await createFakeSlack({
    botToken: BOT_TOKEN,
    appToken: APP_TOKEN,
    signingSecret: SIGNING_SECRET,
    mode,
    postBurst: 50,
    retryDelaysMs: [0, 5_000, 15_000],
  });
  onTestFinished(() => fake.close());
  const db = new pg.Pool({ connectionString: dbUrl, max: 1 });
  onTestFinished(() => db.end());
  const dir = tempDir();
  onTestFinished(dir.remove);
  const children = new Map<string, DaemonChild>();
  // A failed test shows what each node logged: the nodes are processes, their logs the only witness.
  onTestFailed(() => {
    for (const [name, c] of children) process.stderr.write(`--- node ${name}\n${c.out()}${c.err()}\n`);
  });
  onTestFinished(async () => {
    for (const c of children.values()) c.kill();
    await Promise.all([...children.values()].map((c) => c.exited));
  });
  return {
    fake,
    node(name) {
      mkdirSync(join(dir.path, name), { recursive: true });
      const { configFile } = writeDaemonConfig(join(dir.path, name), {
        service: { baseUrl: service.url },
        apiKey: service.key,
        instance: service.instanceIds[0] ?? "",
        channels: [
          {
            type: "slack",
            id: "sl",
            botToken: BOT_TOKEN,
            mode,
            ...(mode === "http" ? { signingSecret: SIGNING_SECRET, http: { port: 0 } } : { appToken: APP_TOKEN }),
            api: fake.apiBase,
            streaming: "off",
            ackReaction: { scope: "off" },
            access: { users: [ALICE] },
            ...channelExtra,
          },
        ],
        extra: {
          logLevel: "info", // the proxy reads each node's endpoint from its log
          attachments: { enabled: false },
          state: { kind: "postgres", url: dbUrl, nodeId: name, leaseTtlMs: 2_000, pollMs: 200 },
        },
      });
      const child = startDaemonProcess(configFile);
      children.set(name, child);
      return child;
    },
    async owner(not) {
      let holder: string | null = null;
      await waitUntil(
        async () => {
          const { rows } = await db.query("SELECT holder, expires_at > clock_timestamp() AS live FROM lease WHERE unit = $1", [UNIT]);
          const row = rows[0] as { holder: string | null; live: boolean } | undefined;
          holder = row?.live && row.holder !== not ? row.holder : null;
          return holder !== null;
        },
        `a node${not ? ` other than ${not}` : ""} to own ${UNIT}`,
        30_000,
        50,
      );
      return holder ?? "";
    },
    async settled() {
      await waitUntil(
        async () => {
          const { rows } = await db.query("SELECT count(*)::int AS n FROM entry WHERE state <> 'done'");
          return (rows[0] as { n: number }).n === 0;
        },
        "every message answered and recorded",
        30_000,
        20,
      );
    },
    texts: () => fake.messages(DM).map((m) => m.text),
    async inboxSize() {
      const { rows } = await db.query("SELECT count(*)::int AS n FROM inbox");
      return (rows[0] as { n: number }).n;
    },
  };
}

/** The Events API endpoint a node logged (every node serves one, whoever owns the account). */
const endpointOf = (child: DaemonChild): string | undefined =>
  [...`${child.out()}${child.err()}`.matchAll(/"url":"(http:\/\/127\.0\.0\.1:\d+\/slack\/events)"/g)].map((m) => m[1] ?? "").at(-1);

it.skipIf(noPostgres)(
  "HTTP Events API: any node keeps events for the owner; across a kill -9 of the owner each is answered once",
  { timeout: 90_000 },
  async () => {
    const b = await bridge("http");
    // One node first, owning the account; then a second, which has nothing to take from it.
    const a = b.node("a");
    await a.waitFor((o) => o.includes("daemon started"), "a started");
    const first = await b.owner();
    const second = b.node("b");
    await second.waitFor((o) => o.includes("daemon started"), "b started");
    const owner = first === "a" ? a : second;
    const other = first === "a" ? second : a;
    const otherUrl = endpointOf(other);
    expect(otherUrl).toBeDefined();
    b.fake.setRequestUrl(otherUrl ?? "");

    // Posted to the node that does not own the account: acknowledged (the fake gives up after Slack's 3 s), answered by the owner.
    const hello = b.fake.say({ user: ALICE, channel: DM, text: "hello" });
    await waitUntil(() => b.texts().length === 1, "the first answer", 30_000);
    // The fake records the delivery once the node's answer is read: the owner may answer first.
    await waitUntil(() => b.fake.deliveries.some((d) => d.eventId === hello.eventIds[0]), "hello's acknowledgement");
    expect(b.fake.deliveries.filter((d) => d.eventId === hello.eventIds[0]).map((d) => d.outcome)).toEqual([200]);
    await b.settled();
    // Slack's retry of the same event_id (its acknowledgement lost, say): kept again, answered once.
    expect(await b.fake.resend(hello.eventIds[0] ?? "")).toBe(200);
    expect(await b.owner()).toBe(first);

    owner.kill();
    await owner.exited;
    // Posted to the survivor while nobody may answer yet: kept and acknowledged at once, answered after its takeover.
    const after = b.fake.say({ user: ALICE, channel: DM, text: "after the kill" });
    await waitUntil(() => b.fake.deliveries.some((d) => d.eventId === after.eventIds[0]), "the post to the survivor", 10_000);
    expect(b.fake.deliveries.filter((d) => d.eventId === after.eventIds[0]).map((d) => d.outcome)).toEqual([200]);
    expect(await b.owner(first)).not.toBe(first);
    await waitUntil(() => b.texts().length === 2, "the answer from the next owner", 30_000);
    await b.settled();
    expect(await b.fake.resend(after.eventIds[0] ?? "")).toBe(200);
    await b.settled();
    // Nothing left kept, nothing answered twice.
    await waitUntil(async () => (await b.inboxSize()) === 0, "the inbox emptied by the owner", 30_000);
    expect(b.texts()).toEqual(["You said: hello", "You said: after the kill"]);
    expect(b.fake.calls().filter((c) => c.call === "chat.postMessage")).toHaveLength(2);
  },
);

it.skipIf(noPostgres)(
  "HTTP: a tap on a question, posted to a node that does not own the account, is kept for the owner and answered once",
  { timeout: 90_000 },
  async () => {
    const b = await bridge("http", { buttons: { tools: ["choice", "confirm"] } });
    const a = b.node("a");
    await a.waitFor((o) => o.includes("daemon started"), "a started");
    const first = await b.owner();
    const second = b.node("b");
    await second.waitFor((o) => o.includes("daemon started"), "b started");
    const other = first === "a" ? second : a;
    b.fake.setRequestUrl(endpointOf(other) ?? "");
    b.fake.say({ user: ALICE, channel: DM, text: "!ask Deploy where? | staging | production" });
    const question = await waitUntil(() => b.fake.messages(DM).find((m) => m.blocks?.length), "the question", 30_000);
    const tap = await b.fake.tap({ channel: DM, ts: question.ts, user: ALICE, index: 1 });
    expect(tap.status).toBe(200);
    await waitUntil(() => b.texts().some((t) => /returned: production/.test(t)), "the answer from the owner", 30_000);
    await waitUntil(() => b.fake.buttonsOn(DM, question.ts).length === 0, "the buttons gone", 30_000);
    await b.settled();
    expect(b.texts().filter((t) => /returned:/.test(t))).toHaveLength(1);
    expect(b.fake.tapResponses(tap.id)).toEqual([]);
    await waitUntil(async () => (await b.inboxSize()) === 0, "the inbox emptied by the owner", 30_000);
  },
);

it.skipIf(noPostgres)("Socket Mode: only the owner connects; after a kill -9 the next owner connects and answers", { timeout: 90_000 }, async () => {
  const b = await bridge("socket");
  const nodes = [b.node("a")];
  await nodes[0]?.waitFor((o) => o.includes("daemon started"), "a started");
  const first = await b.owner();
  nodes.push(b.node("b"));
  await nodes[1]?.waitFor((o) => o.includes("daemon started"), "b started");
  await waitUntil(() => b.fake.openConnections() === 1, "the owner's connection", 30_000);
  b.fake.say({ user: ALICE, channel: DM, text: "hello" });
  await waitUntil(() => b.texts().length === 1, "the first answer", 30_000);
  await b.settled();

  // Counted before the kill: the next owner may connect before the lease poll below sees it own.
  const before = b.fake.socketStats.connectionsOpened;
  nodes[first === "a" ? 0 : 1]?.kill();
  await b.owner(first);
  await waitUntil(() => b.fake.openConnections() === 1 && b.fake.socketStats.connectionsOpened > before, "the next owner's connection", 30_000);
  b.fake.say({ user: ALICE, channel: DM, text: "after the kill" });
  await waitUntil(() => b.texts().length === 2, "the answer from the next owner", 30_000);
  expect(b.texts()).toEqual(["You said: hello", "You said: after the kill"]);
  // Never two connections at once (the owner may stop and take the account again as nodes join, closing first).
  expect(b.fake.socketStats.mostOpenAtOnce).toBe(1);
});
