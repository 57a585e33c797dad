/**
 * A Slack app on a bridge of several machines: two daemon processes on one
 * PostgreSQL database, the account (`slack:sl`) owned by one of them through
 * its lease. With the HTTP Events API only the owner listens; a load balancer
 * (here: a small proxy that tries the nodes in turn, as one with a health
 * check would) sends Slack's signed posts to whichever node answers. When the
 * owner is killed (SIGKILL), posts fail until the other node takes the lease
 * and listens; Slack's retries then reach it, and every message is answered
 * once. Socket Mode: only the owner ever holds a connection.
 */
import { mkdirSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { afterEach, expect, it, onTestFinished } from "vitest";
import { createFakeSlack, type FakeSlack } from "../../fakes/slack.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { waitUntil } from "../../helpers/wait.js";
import { startService, tempDir, type Service } from "../daemon-harness.js";
import { startDaemonProcess, writeDaemonConfig, type DaemonChild } from "../daemon-process.js";

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
}

async function bridge(mode: "http" | "socket", fakeOptions: { requestUrl?: string } = {}): Promise<Bridge> {
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
    ...fakeOptions,
  });
  onTestFinished(() => fake.close());
  const db = new pg.Pool({ connectionString: dbUrl, max: 1 });
  onTestFinished(() => db.end());
  const dir = tempDir();
  onTestFinished(dir.remove);
  const children = new Map<string, DaemonChild>();
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
  };
}

/** The Events API endpoints the nodes logged, newest last (a node logs one each time it takes the account). */
const endpointsOf = (child: DaemonChild): string[] =>
  [...`${child.out()}${child.err()}`.matchAll(/"url":"(http:\/\/127\.0\.0\.1:\d+\/slack\/events)"/g)].map((m) => m[1] ?? "");

/** A load balancer in front of the nodes: each post goes to the first node that accepts the connection, else 502; `served` lists who answered. */
async function loadBalancer(nodes: () => DaemonChild[], served: DaemonChild[]): Promise<string> {
  const server = createServer((req, res) => {
    void readAll(req).then(async (body) => {
      for (const node of nodes()) {
        const url = endpointsOf(node).at(-1);
        if (!url) continue;
        try {
          const answer = await fetch(url, { method: "POST", headers: forwardable(req), body });
          await answer.arrayBuffer();
          served.push(node);
          return void res.writeHead(answer.status).end();
        } catch {
          // that node does not listen (not the owner, or dead): the next one
        }
      }
      res.writeHead(502).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
}

const readAll = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
  });

const forwardable = (req: IncomingMessage): Record<string, string> =>
  Object.fromEntries(
    Object.entries(req.headers).flatMap(([k, v]) => ((k.startsWith("x-slack-") || k === "content-type") && typeof v === "string" ? [[k, v]] : [])),
  );

it("HTTP Events API: kill -9 of the owner; Slack's retries reach the next owner, every message answered once", { timeout: 90_000 }, async () => {
  const nodes: DaemonChild[] = [];
  const served: DaemonChild[] = [];
  const lb = await loadBalancer(() => nodes, served);
  const b = await bridge("http", { requestUrl: lb });
  // One node first, owning the account; then a second, which has nothing to take from it.
  nodes.push(b.node("a"));
  await nodes[0]?.waitFor((o) => o.includes("daemon started"), "a started");
  const first = await b.owner();
  nodes.push(b.node("b"));
  await nodes[1]?.waitFor((o) => o.includes("daemon started"), "b started");
  const owner = nodes[first === "a" ? 0 : 1];
  b.fake.say({ user: ALICE, channel: DM, text: "hello" });
  await waitUntil(() => b.texts().length === 1, "the first answer", 30_000);
  await b.settled(); // the reply recorded as delivered: the next owner has nothing left of it
  // The owner answered it: only the owner listens.
  expect(served).toEqual([owner]);
  expect(await b.owner()).toBe(first);

  owner?.kill();
  await owner?.exited;
  // Posted while nobody owns the account: refused until the other node takes over, then retried to it.
  const { eventIds } = b.fake.say({ user: ALICE, channel: DM, text: "after the kill" });
  const second = await b.owner(first);
  expect(second).not.toBe(first);
  await waitUntil(() => b.texts().length === 2, "the answer from the next owner", 30_000);
  expect(b.texts()).toEqual(["You said: hello", "You said: after the kill"]);
  const attempts = b.fake.deliveries.filter((d) => d.eventId === eventIds[0]);
  expect(attempts[0]?.outcome).toBe(502);
  expect(attempts.at(-1)?.outcome).toBe(200);
  // Later retries would be answered as the first (the journal's dedupe): nothing more was posted.
  expect(b.fake.calls().filter((c) => c.call === "chat.postMessage")).toHaveLength(2);
});

it("Socket Mode: only the owner connects; after a kill -9 the next owner connects and answers", { timeout: 90_000 }, async () => {
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

  nodes[first === "a" ? 0 : 1]?.kill();
  await b.owner(first);
  const before = b.fake.socketStats.connectionsOpened;
  await waitUntil(() => b.fake.openConnections() === 1 && b.fake.socketStats.connectionsOpened > before, "the next owner's connection", 30_000);
  b.fake.say({ user: ALICE, channel: DM, text: "after the kill" });
  await waitUntil(() => b.texts().length === 2, "the answer from the next owner", 30_000);
  expect(b.texts()).toEqual(["You said: hello", "You said: after the kill"]);
  // Never two connections at once (the owner may stop and take the account again as nodes join, closing first).
  expect(b.fake.socketStats.mostOpenAtOnce).toBe(1);
});
