/**
 * The PostgreSQL state of one unit against a real server: the file store's
 * operations survive a reopen, dedupe holds under concurrent inserts from two
 * pools, migrations from two nodes at once run once, a newer schema is refused,
 * and a server crash under load loses nothing that was committed.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import {
  AttachmentTooLargeError,
  openPostgresState,
  type PostgresState,
  MIGRATIONS,
  SCHEMA_VERSION,
  SchemaTooNewError,
  StateWriteError,
} from "../../../daemon/state/postgres/index.js";
import { dedupeKeyOf } from "../../../daemon/vocabulary/keys.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
}, 60_000);
afterAll(() => server?.close());

const UNIT = "telegram:bot";

async function node(url: string, nodeId: string, extra: { leaseTtlMs?: number; maxAttachmentBytes?: number } = {}): Promise<PostgresState> {
  const state = await openPostgresState({ kind: "postgres", url, nodeId, leaseTtlMs: extra.leaseTtlMs ?? 30_000, poolSize: 4, ...extra }, { units: [UNIT] });
  onTestFinished(() => state.abandon());
  return state;
}

async function owner(url: string, nodeId = "a", extra: { leaseTtlMs?: number; maxAttachmentBytes?: number } = {}) {
  const state = await node(url, nodeId, extra);
  const lease = await state.leases.acquire(UNIT);
  if (!lease) throw new Error(`${nodeId} could not acquire ${UNIT}`);
  return { state, lease, unit: await state.openUnit(lease) };
}

const message = (id: string, extra: Record<string, unknown> = {}) => ({
  platform: "telegram",
  accountId: "bot",
  chatId: "c1",
  chatType: "direct" as const,
  userId: "u1",
  messageId: id,
  text: `hello ${id}`,
  sentAt: 1_700_000_000_000,
  ...extra,
});
/** The dedupe key the intake gives a message (the records parse it back as one). */
const keyOf = (id: string) => dedupeKeyOf(message(id));
const route = { ruleIndex: 0, instanceId: "i1", model: "m", scope: "chat", sessionBase: "telegram.bot:c1" };

describe.skipIf(noPostgres)("postgres unit state", () => {
  it("keeps what PostgreSQL's text cannot hold: a NUL in a key round-trips, a NUL in a message becomes U+FFFD rather than a refused write", async () => {
    const url = await server.createDatabase("nul");
    const { state, lease, unit } = await owner(url);
    await unit.kv("pairing").set("approved\u0000tg\u000042", { by: "cli" });
    const accepted = await unit.accept({ kind: "turn", key: keyOf("n"), message: message("n", { text: "a\u0000b \\u0000 stays" }), route });
    if (accepted.duplicate) throw new Error("a fresh key was taken as a duplicate");
    const again = await state.openUnit(lease);
    expect(again.kv("pairing").keys()).toEqual(["approved\u0000tg\u000042"]);
    expect(again.kv("pairing").get("approved\u0000tg\u000042")).toEqual({ by: "cli" });
    expect(again.get(accepted.entry.id)?.message.text).toBe("a\ufffdb \\u0000 stays");
  });

  it("keeps accept, reply, chunks sent, preview, session, kv, auth and attachments across a reopen, in acceptance order", async () => {
    const url = await server.createDatabase("roundtrip");
    const { state, lease, unit } = await owner(url);
    const first = await unit.accept({ kind: "turn", key: keyOf("1"), message: message("1"), route });
    const second = await unit.accept({
      kind: "turn",
      key: keyOf("2"),
      message: message("2", { attachments: [{ kind: "photo", fileName: "cat.jpg", mimeType: "image/jpeg", data: Buffer.from([0, 1, 2, 255]) }] }),
      route,
    });
    if (first.duplicate || second.duplicate) throw new Error("fresh keys were taken as duplicates");
    await unit.recordReply(
      first.entry.id,
      { chunks: ["a", "b"], members: [first.entry.id, second.entry.id], format: "markdown" },
      { base: "telegram.bot:c1", state: { generation: 1, lastResponseId: "resp_1" } },
    );
    await unit.recordSent(first.entry.id, 1);
    await unit.recordPreview(first.entry.id, {
      state: {
        messages: [{ target: "t", shown: "a", final: false, broken: false, replaced: false, deleted: false }],
        restStart: 0,
        reopen: "",
        text: "a",
        finished: false,
        degraded: false,
        gaveUp: false,
      },
      ids: ["42"],
    });
    await unit.kv("telegram").set("offset", 17);
    await unit.writeAuth({ creds: { me: { noiseKey: "x" } }, "pre-key": { "1": { k: 1 }, "2": { k: 2 } } });
    await unit.writeAuth({ "pre-key": { "2": null } });

    // Another process reading the database (the next owner) sees the same state.
    const again = await (await node(url, "reader")).openUnit(lease);
    const [e1, e2] = again.pending();
    expect(again.pending().map((e) => e.key)).toEqual([keyOf("1"), keyOf("2")]);
    expect(e1?.seq).toBeLessThan(e2?.seq ?? 0);
    expect(e1?.reply?.chunks).toEqual(["a", "b"]);
    expect(e1?.sent).toBe(1);
    expect(e1?.preview?.ids).toEqual(["42"]);
    expect(e2?.leader).toBe(first.entry.id);
    expect(e2?.message.attachments?.[0]).toMatchObject({ fileName: "cat.jpg", size: 4 });
    expect(await again.attachment(second.entry.id, 0)).toEqual(Buffer.from([0, 1, 2, 255]));
    expect(again.session("telegram.bot:c1")).toEqual({ generation: 1, lastResponseId: "resp_1" });
    expect(again.kv("telegram").get("offset")).toBe(17);
    expect(await again.readAuth("pre-key", ["1", "2"])).toEqual({ "1": { k: 1 } });

    // Done: no longer pending, attachments gone, but the key still dedupes a redelivery.
    await unit.complete([first.entry.id, second.entry.id]);
    expect(unit.pending()).toEqual([]);
    await expect(again.attachment(second.entry.id, 0)).rejects.toThrow(/missing/);
    expect(await unit.accept({ kind: "turn", key: keyOf("1"), message: message("1"), route })).toEqual({ duplicate: true });
    expect((await state.openUnit(lease)).pending()).toEqual([]);
  });

  it("writes sessions and key-values together (a thread's session moved with its question's expiry), and they read back after a reopen", async () => {
    const url = await server.createDatabase("together");
    const { state, lease, unit } = await owner(url);
    await unit.setSession("i1 former", { generation: 1, lastResponseId: "r1" });
    await unit.kv("questions").set("telegram\u0000bot\u0000q1", { key: "i1 former" });
    await unit.writeTogether([
      { base: "i1 new", state: { generation: 1, lastResponseId: "r1" } },
      { base: "i1 former", state: { generation: 1 } },
      { namespace: "questions", key: "telegram\u0000bot\u0000q1", value: { key: "i1 new" } },
      { namespace: "pairing", key: "gone", value: undefined },
    ]);
    expect(unit.session("i1 new").lastResponseId).toBe("r1");
    const again = await state.openUnit(lease);
    expect(again.session("i1 new")).toEqual({ generation: 1, lastResponseId: "r1" });
    expect(again.session("i1 former")).toEqual({ generation: 1 });
    expect(again.kv("questions").get("telegram\u0000bot\u0000q1")).toEqual({ key: "i1 new" });
  });

  it("refuses an attachment over maxAttachmentBytes and stores nothing of its message", async () => {
    const url = await server.createDatabase("cap");
    const { unit } = await owner(url, "a", { maxAttachmentBytes: 10 });
    const big = message("1", { attachments: [{ kind: "document", fileName: "big.bin", data: Buffer.alloc(11) }] });
    await expect(unit.accept({ kind: "turn", key: keyOf("big"), message: big, route })).rejects.toBeInstanceOf(AttachmentTooLargeError);
    expect(unit.pending()).toEqual([]);
  });

  it("accepts a message once when two pools insert it concurrently", async () => {
    const url = await server.createDatabase("dedupe");
    const { state, lease, unit: one } = await owner(url);
    // A second pool (another process's connections) writing under the same lease, as a replayed update would.
    const two = await (await node(url, "b")).openUnit(lease);
    const attempts = Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).accept({ kind: "turn", key: keyOf("7"), message: message("7"), route }));
    const results = await Promise.all(attempts);
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const { rows } = await admin.query("SELECT count(*)::int AS n FROM entry WHERE dedupe_key = $1", [keyOf("7")]);
      expect(rows[0]).toEqual({ n: 1 });
    } finally {
      await admin.end();
    }
    expect((await state.openUnit(lease)).pending()).toHaveLength(1);
  });

  it("migrates once when two nodes start at the same time, and a newer schema is refused", async () => {
    const url = await server.createDatabase("migrate");
    const [a, b] = await Promise.all([node(url, "a"), node(url, "b")]);
    expect([a.schemaVersion, b.schemaVersion]).toEqual([SCHEMA_VERSION, SCHEMA_VERSION]);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const { rows } = await admin.query("SELECT version FROM schema_version ORDER BY version");
      // Each migration applied once, though two nodes ran them at the same time.
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
      await admin.query("INSERT INTO schema_version (version) VALUES ($1)", [SCHEMA_VERSION + 1]);
    } finally {
      await admin.end();
    }
    const refused = openPostgresState({ kind: "postgres", url, nodeId: "c" }, { units: [UNIT] });
    await expect(refused).rejects.toBeInstanceOf(SchemaTooNewError);
    await expect(refused).rejects.toThrow(`version ${SCHEMA_VERSION + 1}; this daemon knows up to ${SCHEMA_VERSION}`);
  });

  it("says which database it could not reach, without the password", async () => {
    const url = server.url().replace("postgres@", "postgres:hunter2@").replace(`:${server.port}/`, ":1/");
    const failed = openPostgresState({ kind: "postgres", url, nodeId: "x" }, { units: [UNIT] });
    await expect(failed).rejects.toBeInstanceOf(StateWriteError);
    await expect(failed).rejects.toThrow(/connect and migrate for postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/postgres failed/);
    await expect(failed).rejects.not.toThrow(/hunter2/);
  });

  it("loses nothing committed when the server is killed under load and restarted", async () => {
    const url = await server.createDatabase("crash");
    const { state, lease, unit } = await owner(url);
    const committed: string[] = [];
    const failed: unknown[] = [];
    let n = 0;
    let killed = false;
    // Writers keep accepting while the server is killed (-m immediate: no checkpoint, like a crash).
    // Each writer goes on until a write fails after the kill (the server is down then: one will).
    const writer = async () => {
      for (;;) {
        const id = `m${++n}`;
        try {
          await unit.accept({ kind: "turn", key: keyOf(id), message: message(id), route });
          committed.push(keyOf(id));
        } catch (error) {
          // Before the kill nothing may fail: end the test with the error instead of looping on it.
          if (!killed) throw error;
          failed.push(error);
          return;
        }
      }
    };
    const writers = [writer(), writer(), writer()];
    const running = Promise.all(writers);
    while (committed.length < 20) await Promise.race([running, new Promise((resolve) => setImmediate(resolve))]);
    killed = true;
    await server.kill();
    await running;
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((e) => e instanceof StateWriteError)).toBe(true);
    await server.start();

    const after = await state.openUnit(lease);
    const stored = new Set<string>(after.pending().map((e) => e.key));
    expect(committed.filter((k) => !stored.has(k))).toEqual([]);
    // The backend works again on the same pool once the server is back.
    const next = await after.accept({ kind: "turn", key: keyOf("after"), message: message("after"), route });
    expect(next.duplicate).toBe(false);
  });
});
