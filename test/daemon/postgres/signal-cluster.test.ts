import pg from "pg";
import { expect, it, onTestFinished } from "vitest";
import { createFakeSignal } from "../../fakes/signal.js";
import { startTestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";
import { waitUntil } from "../../helpers/wait.js";
import { startService, tempDir } from "../daemon-harness.js";
import { clusterState, platformNodes } from "./cluster-harness.js";
import type { DaemonChild } from "../daemon-process.js";

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
  const node = platformNodes({
    dir: dir.path,
    service,
    dbUrl,
    channels: [
      { type: "signal", id: "sig", account: ACCOUNT, url: fake.url, streaming: "off", groupContext: { enabled: false }, access: { users: [alice.number] } },
    ],
  });
  return {
    fake,
    alice,
    node,
    ...clusterState(db, UNIT),
    /** The spool as the database holds it: message id -> the event's data. */
    async spool(): Promise<Record<string, unknown>> {
      const { rows } = await db.query("SELECT v FROM kv WHERE unit = $1 AND ns = $2 AND k = $3", [UNIT, "adapter:signal:sig", JSON.stringify("spool")]);
      const value = (rows[0] as { v: unknown } | undefined)?.v;
      return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
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
