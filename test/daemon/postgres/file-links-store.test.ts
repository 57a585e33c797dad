/**
 * The PostgreSQL file store of reply links (state/postgres/file-links.ts)
 * against a real server: what the owner keeps any other node serves, a byte
 * range across the 1 MiB rows included; the same file for the same purpose is
 * the same link; the channel's total is bounded, also for files kept at once;
 * expired links are not served and the owner's sweep deletes them; another
 * channel's store does not serve a token; a download reads ahead no more than
 * a row; a put killed mid-file leaves nothing; and a node that lost the
 * account's lease writes nothing.
 */
import { createHash } from "node:crypto";
import { buffer, text } from "node:stream/consumers";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import pg from "pg";
import { pgFileStores } from "../../../daemon/state/postgres/file-links.js";
import { FILE_CHUNK } from "../../../daemon/state/postgres/migrations.js";
import { LeaseLostError, openPostgresState, type PostgresState } from "../../../daemon/state/postgres/index.js";
import { createManualClock } from "../../../shared/clock.js";
import type { FileStoreOptions } from "../../../daemon/vocabulary/file-store.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";
import { waitUntil } from "../../helpers/wait.js";

const noPostgres = lacks("postgres", import.meta.url);
const UNIT = "googlechat:gc";

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
}, 60_000);
afterAll(() => server?.close());

async function node(url: string, nodeId: string, leaseTtlMs = 30_000): Promise<PostgresState> {
  const state = await openPostgresState({ kind: "postgres", url, nodeId, leaseTtlMs, poolSize: 4 }, { units: [UNIT, "line:ln"] });
  onTestFinished(() => state.abandon());
  return state;
}

/** A node's file stores, each write fenced by the lease it holds of the account (none: every write refused). */
async function storesOf(state: PostgresState, own: boolean) {
  const lease = own ? await state.leases.acquire(UNIT) : undefined;
  if (own && !lease) throw new Error("could not acquire");
  const unit = lease && (await state.openUnit(lease));
  return state.fileStores((u, operation, work) => {
    if (!unit || u !== UNIT) return Promise.reject(new LeaseLostError(u, 0, "not held"));
    return unit.fenced(operation, work);
  });
}

const options = (extra: Partial<FileStoreOptions> = {}): FileStoreOptions => ({
  platform: "googlechat",
  accountId: "gc",
  ttlMs: 3_600_000,
  maxTotalBytes: 10 * FILE_CHUNK,
  sweeps: false,
  ...extra,
});
const hashOf = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const bytesOf = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) % 251));

describe.skipIf(noPostgres)("postgres file links", () => {
  it("the owner's file is served by another node, whole and by ranges across rows; the same file again is the same link", async () => {
    const url = await server.createDatabase("fl_serve");
    const owner = await (await storesOf(await node(url, "a"), true)).open(options());
    const other = await (await storesOf(await node(url, "b"), false)).open(options());
    const data = bytesOf(2 * FILE_CHUNK + 12_345, 7);
    const link = await owner.put("purpose-1", { fileName: "big.bin", mimeType: "application/octet-stream", data });
    const found = await other.find(link.token);
    expect(found?.meta).toMatchObject({ fileName: "big.bin", mimeType: "application/octet-stream", size: data.length, expiresAt: link.expiresAt });
    // Compared as hashes: vitest's element-wise equality of MiB-long buffers takes seconds.
    expect(hashOf(await buffer(found!.read(0, data.length - 1)))).toBe(hashOf(data));
    const [from, to] = [FILE_CHUNK - 3, 2 * FILE_CHUNK + 2];
    expect((await buffer(found!.read(from, to))).toString("hex")).toBe(data.subarray(from, to + 1).toString("hex"));
    expect(await buffer(found!.read(data.length - 1, data.length - 1))).toEqual(data.subarray(-1));
    expect(await owner.put("purpose-1", { fileName: "big.bin", mimeType: "application/octet-stream", data })).toEqual(link);
    expect((await owner.put("purpose-2", { fileName: "big.bin", mimeType: "application/octet-stream", data })).token).not.toBe(link.token);
    // Another channel's route does not serve this channel's token; a malformed one is not looked up.
    const line = await (await storesOf(await node(url, "c"), false)).open(options({ platform: "line", accountId: "ln" }));
    expect(await line.find(link.token)).toBeUndefined();
    expect(await other.find("not a token")).toBeUndefined();
  });

  it("the total is bounded (the links closest to expiry end first); expired links are not served and the owner's sweep deletes them", async () => {
    const url = await server.createDatabase("fl_bound");
    const state = await node(url, "a");
    const owner = await (await storesOf(state, true)).open(options({ maxTotalBytes: 2 * FILE_CHUNK }));
    const file = (n: number) => ({ fileName: `f${n}.txt`, mimeType: "text/plain", data: Buffer.alloc(FILE_CHUNK - 10, 48 + n) });
    const first = await owner.put("1", file(1));
    const second = await owner.put("2", file(2));
    const third = await owner.put("3", file(3));
    expect(await owner.find(first.token)).toBeUndefined();
    expect(await text((await owner.find(third.token))!.read(0, 3))).toBe("3333");
    await expect(owner.put("big", { fileName: "x", mimeType: "text/plain", data: Buffer.alloc(2 * FILE_CHUNK + 1) })).rejects.toThrow(/max_total_mb/);

    const db = new (await import("pg")).default.Pool({ connectionString: url, max: 1 });
    onTestFinished(() => db.end());
    await db.query("UPDATE file_link SET expires_at = clock_timestamp() - interval '1 second'");
    expect(await owner.find(second.token)).toBeUndefined();
    expect(await owner.sweep()).toBe(2);
    expect((await db.query("SELECT (SELECT count(*) FROM file_link)::int + (SELECT count(*) FROM file_link_chunk)::int AS n")).rows).toEqual([{ n: 0 }]);
  });

  it("a download whose reader stops holds at most one row in memory, not a read-ahead of many (many slow downloads of a big file)", async () => {
    const url = await server.createDatabase("fl_ahead");
    const owner = await (await storesOf(await node(url, "a"), true)).open(options());
    const data = bytesOf(8 * FILE_CHUNK, 3);
    const link = await owner.put("p", { fileName: "big.bin", mimeType: "application/octet-stream", data });
    // One connection: the pool serves its queries in order, so each of our queries below lets an eager reader take one more row.
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    onTestFinished(() => pool.end());
    const serving = await pgFileStores({ pool, fencedBy: () => Promise.reject(new Error("serves only")), clock: createManualClock() }).open(options());
    const stream = (await serving.find(link.token))!.read(0, data.length - 1);
    stream.read(0);
    await waitUntil(() => stream.readableLength > 0, "the first row read");
    for (let i = 0; i < 4; i++) await pool.query("SELECT 1");
    // The rows go: what the reader gets now is only what it had already taken into memory.
    const db = new pg.Pool({ connectionString: url, max: 1 });
    onTestFinished(() => db.end());
    await db.query("DELETE FROM file_link");
    let held = 0;
    await expect(
      (async () => {
        for await (const bytes of stream) held += (bytes as Buffer).length;
      })(),
    ).rejects.toThrow(/ended while it was read/);
    expect(held).toBeLessThanOrEqual(FILE_CHUNK);
  });

  it("files kept at the same time stay within the channel's total (each counts the other's bytes)", async () => {
    const url = await server.createDatabase("fl_race");
    const owner = await (await storesOf(await node(url, "a"), true)).open(options({ maxTotalBytes: 2 * FILE_CHUNK }));
    const db = new pg.Pool({ connectionString: url, max: 1 });
    onTestFinished(() => db.end());
    // The bytes' rows wait on a lock, so both writes are under way at once, each past its count of what is kept.
    const blocker = await db.connect();
    onTestFinished(() => blocker.release(true));
    await blocker.query("BEGIN; LOCK TABLE file_link_chunk IN EXCLUSIVE MODE");
    const file = (n: number) => ({ fileName: `f${n}.bin`, mimeType: "application/octet-stream", data: Buffer.alloc(FILE_CHUNK + FILE_CHUNK / 2, n) });
    const both = Promise.all([owner.put("1", file(1)), owner.put("2", file(2))]);
    const watch = new pg.Pool({ connectionString: url, max: 1 });
    onTestFinished(() => watch.end());
    const waiting = async () =>
      z
        .object({ n: z.number() })
        .parse((await watch.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")).rows[0])
        .n;
    await waitUntil(async () => (await waiting()) === 2, "both writes waiting");
    await blocker.query("COMMIT");
    const [first, second] = await both;
    const kept = z.object({ total: z.number() }).parse((await watch.query("SELECT coalesce(sum(size), 0)::int AS total FROM file_link")).rows[0]).total;
    expect(kept).toBeLessThanOrEqual(2 * FILE_CHUNK);
    expect([await owner.find(first.token), await owner.find(second.token)].filter((f) => f !== undefined)).toHaveLength(1);
  });

  it("a put cut off mid-file (its connection killed while rows were being written) leaves no link and no rows", async () => {
    const url = await server.createDatabase("fl_cut");
    const owner = await (await storesOf(await node(url, "a"), true)).open(options());
    const db = new pg.Pool({ connectionString: url, max: 2 });
    onTestFinished(() => db.end());
    const blocker = await db.connect();
    onTestFinished(() => blocker.release(true));
    // The bytes' rows wait on this lock: the put has written the link's row, not its bytes, when it is killed.
    await blocker.query("BEGIN; LOCK TABLE file_link_chunk IN SHARE ROW EXCLUSIVE MODE");
    const put = owner.put("p", { fileName: "big.bin", mimeType: "application/octet-stream", data: bytesOf(3 * FILE_CHUNK, 1) });
    const outcome = put.then(
      () => "kept",
      () => "failed",
    );
    const Pid = z.object({ pid: z.number() });
    const writer = await waitUntil(
      async () => (await db.query("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")).rows[0],
      "the put waiting on its rows",
    );
    await db.query("SELECT pg_terminate_backend($1)", [Pid.parse(writer).pid]);
    await blocker.query("COMMIT");
    expect(await outcome).toBe("failed");
    const rows = await db.query("SELECT (SELECT count(*) FROM file_link)::int AS links, (SELECT count(*) FROM file_link_chunk)::int AS chunks");
    expect(rows.rows).toEqual([{ links: 0, chunks: 0 }]);
  });

  it("a node that lost the account's lease writes nothing", async () => {
    const url = await server.createDatabase("fl_fence");
    const a = await node(url, "a", 1_000);
    const stores = await storesOf(a, true);
    const owner = await stores.open(options());
    await a.leases.halt();
    const b = await node(url, "b", 1_000);
    await waitUntil(async () => (await b.leases.acquire(UNIT)) !== undefined, "b to take the account", 10_000, 50);
    await expect(owner.put("p", { fileName: "f", mimeType: "text/plain", data: Buffer.from("late") })).rejects.toBeInstanceOf(LeaseLostError);
    const db = new (await import("pg")).default.Pool({ connectionString: url, max: 1 });
    onTestFinished(() => db.end());
    expect((await db.query("SELECT count(*)::int AS n FROM file_link")).rows).toEqual([{ n: 0 }]);
  });
});
