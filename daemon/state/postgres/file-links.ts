/**
 * Reply files served by link on several machines (migration 5): the platform
 * fetches a link through the load balancer, which may pick any node, so the
 * bytes are in the database, not on the owner's disk.
 *
 * Why bytea in rows of 1 MiB, not large objects: a large object is read
 * through a descriptor that lives only inside a transaction, so streaming one
 * to a slow platform would hold a connection in a transaction for the whole
 * download (the pool ends idle transactions after a third of a lease), and
 * large objects are not deleted with their row. With chunks, a byte range is
 * a handful of short independent queries (`substr` of the chunks it covers,
 * one at a time as the response drains), a link's rows go with `ON DELETE
 * CASCADE`, and pg@8 sends the Buffer parameters in binary.
 *
 * Tokens are made as on one machine (../../adapters/file-links/store.ts) with
 * one HMAC key every node reads from `file_link_key` (made by the first node
 * that needs it; never logged). Every write (put, sweep, making room) is one
 * transaction fenced by the account's lease, and a channel's puts take a
 * transaction advisory lock of it (one at a time, so each counts the other's
 * bytes against the cap); only the owner's store sweeps, so one node does. Expiry is on the database's clock (nodes' clocks need not
 * agree); an expired link is never served, whether or not it was swept yet.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import type pg from "pg";
import { z } from "zod";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { FileStore, FileStoreBackend, FileStoreOptions, FoundFile } from "../../vocabulary/file-store.js";
import { accountKeyOf } from "../../vocabulary/keys.js";
import type { FencedBy } from "./identity-links.js";
import { FILE_CHUNK } from "./migrations.js";

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const SWEEP_EVERY_MS = 10 * 60 * 1000;

const KeyRow = z.object({ key: z.instanceof(Buffer) });
const LinkRow = z.object({
  file_name: z.string(),
  mime_type: z.string(),
  size: z.coerce.number().int(),
  created_ms: z.coerce.number(),
  expires_ms: z.coerce.number(),
});
const KeptRow = z.object({ size: z.coerce.number().int(), live: z.boolean(), expires_ms: z.coerce.number() });
const SizeRow = z.object({ id: z.string(), size: z.coerce.number().int() });
const ChunkRow = z.object({ bytes: z.instanceof(Buffer) });

export interface PgFileStoreDeps {
  pool: pg.Pool;
  fencedBy: FencedBy;
  /** Schedules the owner's sweeps. */
  clock: Clock;
  onError?: (error: unknown) => void;
  /** The key's bytes when first made (default: the system's CSPRNG). */
  random?: (n: number) => Buffer;
}

export function pgFileStores(deps: PgFileStoreDeps): FileStoreBackend {
  let key: Promise<Buffer> | undefined;
  const sharedKey = (): Promise<Buffer> => {
    key ??= readOrMakeKey(deps.pool, deps.random ?? randomBytes).catch((error: unknown) => {
      key = undefined;
      throw error;
    });
    return key;
  };
  return {
    // The key is read at the first put: a node that only serves links never needs it.
    async open(options) {
      const store = new PgFileStore(deps, options, sharedKey);
      if (options.sweeps) store.startSweeping();
      return store;
    },
  };
}

/** The one key: made once (`ON CONFLICT DO NOTHING`: of two nodes making it at once, one row wins), then read. */
async function readOrMakeKey(pool: pg.Pool, random: (n: number) => Buffer): Promise<Buffer> {
  await pool.query("INSERT INTO file_link_key (id, key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING", [random(32)]);
  const { rows } = await pool.query("SELECT key FROM file_link_key WHERE id = 1");
  return KeyRow.parse(rows[0]).key;
}

const idOf = (token: string): string => createHash("sha256").update(token).digest("hex");

class PgFileStore implements FileStore {
  readonly #deps: PgFileStoreDeps;
  readonly #o: FileStoreOptions;
  readonly #unit: string;
  readonly #key: () => Promise<Buffer>;
  #timer: Timer | undefined;
  #closed = false;

  constructor(deps: PgFileStoreDeps, options: FileStoreOptions, key: () => Promise<Buffer>) {
    this.#deps = deps;
    this.#o = options;
    this.#unit = accountKeyOf(options.platform, options.accountId);
    this.#key = key;
  }

  async put(purpose: string, file: { fileName: string; mimeType: string; data: Buffer }) {
    const size = file.data.length;
    if (size > this.#o.maxTotalBytes) throw new Error(`a file of ${size} bytes is larger than file_links.max_total_mb`);
    const digest = createHash("sha256").update(file.data).digest("hex");
    const token = createHmac("sha256", await this.#key())
      .update(`${purpose}\u0000${digest}`)
      .digest("base64url");
    const id = idOf(token);
    const expiresAt = await this.#deps.fencedBy(this.#unit, "file link", async (client) => {
      // One keeping at a time per channel: otherwise two counting what is kept at once both fit under the cap, and together pass it.
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`file_link ${this.#unit}`]);
      const kept = await client.query(
        "SELECT size, expires_at > clock_timestamp() AS live, extract(epoch FROM expires_at) * 1000 AS expires_ms FROM file_link WHERE id = $1 FOR UPDATE",
        [id],
      );
      // A live link sent again keeps its end and its bytes (the same token is the same bytes).
      const k = kept.rows[0] === undefined ? undefined : KeptRow.parse(kept.rows[0]);
      if (k?.live && k.size === size) return k.expires_ms;
      await client.query("DELETE FROM file_link WHERE id = $1", [id]);
      await makeRoom(client, this.#unit, size, this.#o.maxTotalBytes);
      const made = await client.query(
        `INSERT INTO file_link (id, unit, file_name, mime_type, size, expires_at)
         VALUES ($1, $2, $3, $4, $5, clock_timestamp() + $6 * interval '1 millisecond')
         RETURNING extract(epoch FROM expires_at) * 1000 AS expires_ms`,
        [id, this.#unit, file.fileName, file.mimeType, size, this.#o.ttlMs],
      );
      for (let n = 0; n * FILE_CHUNK < size; n++)
        await client.query("INSERT INTO file_link_chunk (id, n, bytes) VALUES ($1, $2, $3)", [id, n, file.data.subarray(n * FILE_CHUNK, (n + 1) * FILE_CHUNK)]);
      return z.object({ expires_ms: z.coerce.number() }).parse(made.rows[0]).expires_ms;
    });
    return { token, expiresAt: Math.floor(expiresAt) };
  }

  async find(token: string): Promise<FoundFile | undefined> {
    if (!TOKEN.test(token)) return undefined;
    const id = idOf(token);
    const { rows } = await this.#deps.pool.query(
      `SELECT file_name, mime_type, size, extract(epoch FROM created_at) * 1000 AS created_ms, extract(epoch FROM expires_at) * 1000 AS expires_ms
       FROM file_link WHERE id = $1 AND unit = $2 AND expires_at > clock_timestamp()`,
      [id, this.#unit],
    );
    if (rows[0] === undefined) return undefined;
    const r = LinkRow.parse(rows[0]);
    return {
      meta: { fileName: r.file_name, mimeType: r.mime_type, size: r.size, createdAt: Math.floor(r.created_ms), expiresAt: Math.floor(r.expires_ms) },
      read: (start, end) => Readable.from(chunksOf(this.#deps.pool, id, start, end)),
    };
  }

  async sweep(): Promise<number> {
    return this.#deps.fencedBy(this.#unit, "file link sweep", async (client) => {
      const { rowCount } = await client.query("DELETE FROM file_link WHERE unit = $1 AND expires_at <= clock_timestamp()", [this.#unit]);
      return rowCount ?? 0;
    });
  }

  startSweeping(): void {
    if (this.#closed) return;
    this.#timer = this.#deps.clock.setTimeout(
      () => {
        void this.sweep()
          .catch((error: unknown) => this.#deps.onError?.(error))
          .finally(() => this.startSweeping());
      },
      Math.min(SWEEP_EVERY_MS, this.#o.ttlMs),
    );
  }

  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
  }
}

/** Ends the unit's links closest to expiry (expired ones first) until `bytes` more fit. */
async function makeRoom(client: pg.PoolClient, unit: string, bytes: number, max: number): Promise<void> {
  await client.query("DELETE FROM file_link WHERE unit = $1 AND expires_at <= clock_timestamp()", [unit]);
  const { rows } = await client.query("SELECT id, size FROM file_link WHERE unit = $1 ORDER BY expires_at", [unit]);
  const links = rows.map((r) => SizeRow.parse(r));
  let total = links.reduce((sum, l) => sum + l.size, 0);
  const ended: string[] = [];
  for (const l of links) {
    if (total + bytes <= max) break;
    ended.push(l.id);
    total -= l.size;
  }
  if (ended.length > 0) await client.query("DELETE FROM file_link WHERE id = ANY($1)", [ended]);
}

/** The bytes `start`..`end` (inclusive), one chunk's part per query, as the reader asks for them. */
async function* chunksOf(pool: pg.Pool, id: string, start: number, end: number): AsyncGenerator<Buffer> {
  for (let n = Math.floor(start / FILE_CHUNK); n * FILE_CHUNK <= end; n++) {
    const from = Math.max(start, n * FILE_CHUNK) - n * FILE_CHUNK;
    const to = Math.min(end, (n + 1) * FILE_CHUNK - 1) - n * FILE_CHUNK;
    const { rows } = await pool.query("SELECT substr(bytes, $3, $4) AS bytes FROM file_link_chunk WHERE id = $1 AND n = $2", [id, n, from + 1, to - from + 1]);
    // Ended (swept or replaced) while it was being read: the response is cut short.
    if (rows[0] === undefined) throw new Error("the file link ended while it was read");
    yield ChunkRow.parse(rows[0]).bytes;
  }
}
