/**
 * A Signal account on a bridge of several machines: two daemon processes on
 * one PostgreSQL database in front of one signal-cli daemon (the fake), the
 * account (`signal:sig`) owned by one of them through its lease. Only the
 * owner reads signal-cli's event stream (signal-cli writes every event to
 * every stream open, so a second reader would answer twice). Each message
 * is spooled in the account's state in the database the moment it is read
 * off the stream; the owner is killed (SIGKILL) while a message is in the
 * spool and not yet journaled (its file being fetched), and a message comes
 * while no node listens: the next owner hands over the spool it finds in the
 * database, reads what waited on Signal's server (`--receive-mode
 * on-connection`), and each message is answered exactly once.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { expect, it, onTestFailed, onTestFinished } from "vitest";
import { createFakeSignal } from "../../fakes/signal.js";
import { startTestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";
import { waitUntil } from "../../helpers/wait.js";
import { startService, tempDir } from "../daemon-harness.js";
import { type DaemonChild, startDaemonProcess, writeDaemonConfig } from "../daemon-process.js";

const noPostgres = lacks("postgres", import.meta.url);

const ACCOUNT = "+15550001111";
const UNIT = "signal:sig";

async function bridge() {
  const pgServer = await startTestPostgres();
  onTestFinished(() => pgServer.close());
  const dbUrl = await pgServer.createDatabase("signal");
  const service = await startService({ permissions: ["interact", "files"] });
  onTestFinished(async () => {
    await service.close();
    delete process.env.BRIDGE_TEST_KEY;
  });
  const fake = await createFakeSignal({ account: ACCOUNT });
  onTestFinished(() => fake.close());
  const db = new pg.Pool({ connectionString: dbUrl, max: 1 });
  onTestFinished(() => db.end());
  const dir = tempDir();
  onTestFinished(dir.remove);
  const alice = fake.person("Alice", "+15550002222");
  const children = new Map<string, DaemonChild>();
  onTestFailed(() => {
    for (const [name, c] of children) process.stderr.write(`--- node ${name}\n${c.out()}${c.err()}\n`);
  });
  onTestFinished(async () => {
    for (const c of children.values()) c.kill();
    await Promise.all([...children.values()].map((c) => c.exited));
  });
  return {
    fake,
    alice,
    node(name: string): DaemonChild {
      mkdirSync(join(dir.path, name), { recursive: true });
      const { configFile } = writeDaemonConfig(join(dir.path, name), {
        service: { baseUrl: service.url },
        apiKey: service.key,
        instance: service.instanceIds[0] ?? "",
        channels: [
          { type: "signal", id: "sig", account: ACCOUNT, url: fake.url, streaming: "off", groupContext: { enabled: false }, access: { users: [alice.number] } },
        ],
        extra: {
          logLevel: "info",
          state: { kind: "postgres", url: dbUrl, nodeId: name, leaseTtlMs: 2_000, pollMs: 200 },
        },
      });
      const child = startDaemonProcess(configFile);
      children.set(name, child);
      return child;
    },
    async owner(not?: string): Promise<string> {
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
    /** The spool as the database holds it: message id -> the event's data. */
    async spool(): Promise<Record<string, unknown>> {
      const { rows } = await db.query("SELECT v FROM kv WHERE unit = $1 AND ns = $2 AND k = $3", [UNIT, "adapter:signal:sig", JSON.stringify("spool")]);
      const value = (rows[0] as { v: unknown } | undefined)?.v;
      return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
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
    answersTo: (text: string) => fake.sent(alice.uuid).filter((m) => m.text.includes(text)),
  };
}

it.skipIf(noPostgres)(
  "only the owner reads the event stream; after a kill -9 of the owner the next one answers its spool and what came meanwhile, each once",
  { timeout: 120_000 },
  async () => {
    const b = await bridge();
    const nodes = new Map<string, DaemonChild>([["a", b.node("a")]]);
    await nodes.get("a")?.waitFor((o) => o.includes("daemon started"), "a started");
    const first = await b.owner();
    nodes.set("b", b.node("b"));
    await nodes.get("b")?.waitFor((o) => o.includes("daemon started"), "b started");
    await waitUntil(() => b.fake.liveStreams() === 1, "the owner's event stream", 30_000);

    b.fake.direct(b.alice, "hello");
    await waitUntil(() => b.answersTo("hello").length === 1, "the first answer", 30_000);
    await b.settled();
    expect(b.fake.liveStreams()).toBe(1);

    // Read off the stream and spooled in the database; its file is being fetched (held) when the owner dies.
    const held = b.fake.stall("getAttachment", 1);
    const spooled = b.fake.direct(b.alice, "before the crash", { files: [{ contentType: "text/plain", filename: "note.txt", data: Buffer.from("a note") }] });
    await waitUntil(() => held.arrived() === 1, "the owner fetching the file", 30_000);
    expect(Object.keys(await b.spool())).toEqual([`${spooled}:${b.alice.uuid}`]);
    const opened = b.fake.streamsOpened();
    const owner = nodes.get(first);
    owner?.kill();
    await owner?.exited;
    held.release();
    // Once signal-cli has seen the dead node's stream close (a write before that is the documented window)...
    await waitUntil(() => b.fake.liveStreams() === 0, "the dead owner's stream closed", 30_000);
    // ...nobody listens: signal-cli leaves this one on Signal's server for the next stream.
    b.fake.direct(b.alice, "during the failover");
    expect(b.fake.waitingCount()).toBe(1);

    expect(await b.owner(first)).not.toBe(first);
    await waitUntil(
      () => b.answersTo("before the crash").length === 1 && b.answersTo("during the failover").length === 1,
      "both answers from the next owner",
      30_000,
    );
    await b.settled();
    await waitUntil(async () => Object.keys(await b.spool()).length === 0, "the spool emptied by the next owner", 30_000);
    expect(b.fake.streamsOpened()).toBe(opened + 1);

    b.fake.direct(b.alice, "after");
    await waitUntil(() => b.answersTo("after").length === 1, "the next answer", 30_000);
    await b.settled();
    expect(b.answersTo("hello")).toHaveLength(1);
    expect(b.answersTo("before the crash")).toHaveLength(1);
    expect(b.answersTo("during the failover")).toHaveLength(1);
    expect(b.fake.mostStreamsAtOnce()).toBe(1);
  },
);
