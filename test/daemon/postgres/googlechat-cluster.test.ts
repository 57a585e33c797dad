/**
 * A Google Chat app on a bridge of several machines: two daemon processes on
 * one PostgreSQL database, the account (`googlechat:gc`) owned by one of them
 * through its lease. Every node serves the endpoint: one that does not own the
 * account verifies each request's token, keeps the event in the database's
 * inbox and answers `{}` once kept; the owner takes it in and answers through
 * the Chat API. Killed (SIGKILL), the owner's events wait in the inbox for the
 * next owner, and every message is answered once. A forged request is refused
 * by any node.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { expect, it, onTestFailed, onTestFinished } from "vitest";
import { fakeGoogleChatForTest, googleChatChannelFor } from "../../helpers/googlechat-setup.js";
import { startTestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";
import { waitUntil } from "../../helpers/wait.js";
import { startService, tempDir } from "../daemon-harness.js";
import { type DaemonChild, startDaemonProcess, writeDaemonConfig } from "../daemon-process.js";

const noPostgres = lacks("postgres", import.meta.url);
const PROJECT = "975318642097";
const DM = "spaces/dm-alice";
const UNIT = "googlechat:gc";

/** The endpoint a node logged (every node serves one, whoever owns the account). */
const endpointOf = (child: DaemonChild): string | undefined =>
  [...`${child.out()}${child.err()}`.matchAll(/"url":"(http:\/\/127\.0\.0\.1:\d+\/googlechat\/events)"/g)].map((m) => m[1] ?? "").at(-1);

it.skipIf(noPostgres)("any node keeps verified events for the owner; across a kill -9 of the owner each is answered once", { timeout: 90_000 }, async () => {
  const pgServer = await startTestPostgres();
  onTestFinished(() => pgServer.close());
  const dbUrl = await pgServer.createDatabase("googlechat");
  const service = await startService();
  onTestFinished(() => service.close());
  const fake = await fakeGoogleChatForTest(PROJECT);
  const db = new pg.Pool({ connectionString: dbUrl, max: 1 });
  onTestFinished(() => db.end());
  const dir = tempDir();
  onTestFinished(dir.remove);
  const children = new Map<string, DaemonChild>();
  onTestFailed(() => {
    for (const [name, c] of children) process.stderr.write(`--- node ${name}\n${c.out()}${c.err()}\n`);
  });
  onTestFinished(async () => {
    for (const c of children.values()) c.kill();
    await Promise.all([...children.values()].map((c) => c.exited));
  });
  const node = (name: string): DaemonChild => {
    mkdirSync(join(dir.path, name), { recursive: true });
    const { configFile } = writeDaemonConfig(join(dir.path, name), {
      service: { baseUrl: service.url },
      apiKey: service.key,
      instance: service.instanceIds[0] ?? "",
      channels: [{ ...googleChatChannelFor(fake, PROJECT, { streaming: "off", access: { users: ["users/alice"] } }), id: "gc" }],
      extra: {
        logLevel: "info", // each node's endpoint is read from its log
        attachments: { enabled: false },
        state: { kind: "postgres", url: dbUrl, nodeId: name, leaseTtlMs: 2_000, pollMs: 200 },
      },
    });
    const child = startDaemonProcess(configFile);
    children.set(name, child);
    return child;
  };
  const owner = async (not?: string): Promise<string> => {
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
  };
  const settled = () =>
    waitUntil(
      async () => ((await db.query("SELECT count(*)::int AS n FROM entry WHERE state <> 'done'")).rows[0] as { n: number }).n === 0,
      "every message answered and recorded",
      30_000,
      20,
    );
  const texts = () =>
    fake
      .messages(DM)
      .filter((m) => m.sender.type === "BOT")
      .map((m) => m.text);

  const a = node("a");
  await a.waitFor((o) => o.includes("daemon started"), "a started");
  const first = await owner();
  const b = node("b");
  await b.waitFor((o) => o.includes("daemon started"), "b started");
  const [owning, other] = first === "a" ? [a, b] : [b, a];
  await waitUntil(() => endpointOf(other), "the other node's endpoint");
  fake.setEndpoint(endpointOf(other) ?? "");

  // A forged request is refused by a node that does not own the account, and nothing is kept.
  const forged = await fake.post(
    {
      type: "MESSAGE",
      space: { name: DM, spaceType: "DIRECT_MESSAGE" },
      message: { name: `${DM}/messages/f.f`, sender: { name: "users/alice" }, text: "forged" },
    },
    fake.token({}, { forged: true }),
  );
  expect(forged.status).toBe(401);

  // Posted to the node that does not own the account: kept, answered `{}`, then answered by the owner through the API.
  const hello = fake.say({ space: DM, text: "hello" });
  expect(await hello.answered).toEqual({ status: 200, body: "{}" });
  await waitUntil(() => texts().length === 1, "the first answer", 30_000);
  await settled();
  // The same event posted again (Chat's answer lost, say): kept again, answered once.
  const { via: _via, ...shown } = hello.message;
  expect((await fake.post({ type: "MESSAGE", space: { name: DM, spaceType: "DIRECT_MESSAGE" }, user: shown.sender, message: shown })).status).toBe(200);

  owning.kill();
  await owning.exited;
  // Posted to the survivor while nobody may answer yet: kept and answered at once, answered after its takeover.
  const after = fake.say({ space: DM, text: "after the kill" });
  expect((await after.answered).status).toBe(200);
  expect(await owner(first)).not.toBe(first);
  await waitUntil(() => texts().length === 2, "the answer from the next owner", 30_000);
  await settled();
  await waitUntil(async () => ((await db.query("SELECT count(*)::int AS n FROM inbox")).rows[0] as { n: number }).n === 0, "the inbox emptied", 30_000);
  expect(texts()).toEqual(["You said: hello", "You said: after the kill"]);
  expect(fake.calls().filter((c) => c.startsWith("POST /v1/spaces/dm-alice/messages"))).toHaveLength(2);
  expect(texts()).not.toContain("You said: forged");
});
