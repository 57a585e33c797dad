/**
 * One unit's durable state (a platform account's entries, sessions, adapter
 * key-values, WhatsApp auth, spooled attachments), as its lease holder sees it.
 *
 * Loaded into memory when the lease is taken (the file store's synchronous
 * readers stay synchronous); every change is one transaction that first takes
 * the unit's lease row `FOR SHARE` and checks the epoch, so it either commits
 * while this node is the owner or fails with `LeaseLostError`. A takeover's
 * `UPDATE` of the lease row waits for such a transaction, so the check and the
 * write are atomic with respect to takeover. Memory changes after the commit.
 */
import type pg from "pg";
import { z } from "zod";
import { cryptoRandom, hex, type Random } from "../../../shared/random.js";
import type { AdapterStateStore, InboundMessage } from "../../vocabulary/adapter.js";
import {
  JournalEntrySchema,
  SessionStateSchema,
  type StoredAttachmentSchema,
  type StoredPreviewSchema,
  type StoredReplySchema,
  type StoredRouteSchema,
} from "../../vocabulary/records.js";
import { AttachmentTooLargeError, LeaseLostError, StateWriteError, StoredRowError } from "../../vocabulary/state-errors.js";
import { withClient } from "./checkout.js";
import { WriteBatcher } from "./write-batch.js";
import type { HeldLease } from "./leases.js";

export type StoredEntry = z.output<typeof JournalEntrySchema>;
export type StoredReply = z.output<typeof StoredReplySchema>;
export type StoredPreview = z.output<typeof StoredPreviewSchema>;
export type StoredRoute = z.output<typeof StoredRouteSchema>;
export type StoredAttachment = z.output<typeof StoredAttachmentSchema>;
export type SessionState = z.output<typeof SessionStateSchema>;

/** Baileys' key store shape: `{ [type]: { [id]: value | null } }` (null deletes); values already `BufferJSON`-encoded. */
export type AuthWrite = Record<string, Record<string, unknown>>;

/** The operations of the file store (`daemon/state/store.ts`) for one unit, fenced by its lease. */
export interface UnitState {
  readonly unit: string;
  readonly lease: HeldLease;
  /** Entries not yet fully answered, in acceptance order. */
  pending(): StoredEntry[];
  get(id: string): StoredEntry | undefined;
  /**
   * Stores the entry and its attachments in one transaction, unless an entry with this
   * dedupe key exists already (pending or done, on any node): then `duplicate`.
   */
  accept(input: {
    kind: StoredEntry["kind"];
    key: string;
    message: InboundMessage;
    route: StoredRoute;
  }): Promise<{ duplicate: false; entry: StoredEntry } | { duplicate: true }>;
  /** Removes events this node took from the inbox (inbox.ts) into its journal; fenced like every write. */
  removeInbox(keys: readonly string[]): Promise<void>;
  /** Records the reply of `leaderId` (and the session change it caused) in one transaction. */
  recordReply(leaderId: string, reply: StoredReply, session?: { base: string; state: SessionState }): Promise<void>;
  recordSent(id: string, sent: number): Promise<void>;
  /** null closes the preview (a later answer starts anew). */
  recordPreview(id: string, preview: StoredPreview | null): Promise<void>;
  /** Marks entries done (their dedupe keys stay) and drops their attachments. */
  complete(ids: string[]): Promise<void>;
  session(base: string): SessionState;
  setSession(base: string, state: SessionState): Promise<void>;
  /** Sessions and key-values in one batch, so one statement: all or none. */
  writeTogether(writes: readonly ({ base: string; state: SessionState } | { namespace: string; key: string; value: unknown })[]): Promise<void>;
  /** Durable key-values of one namespace (an adapter's offset, say). */
  kv(namespace: string): AdapterStateStore & { keys(): string[] };
  /** A spooled attachment's bytes, until its entry is done. */
  attachment(entryId: string, index: number): Promise<Buffer>;
  /** WhatsApp auth state (creds and signal keys) of this unit. */
  readAuth(type: string, ids: string[]): Promise<Record<string, unknown>>;
  writeAuth(data: AuthWrite): Promise<void>;
  /** Forgets this unit's WhatsApp auth state (the device was unlinked). */
  clearAuth(): Promise<void>;
  /** `work` in one transaction fenced by this unit's lease (the row FOR SHARE, the epoch checked): for state of no one unit written on its behalf. */
  fenced<T>(operation: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

export interface UnitStateDeps {
  pool: pg.Pool;
  lease: HeldLease;
  random?: Random;
  /** Largest attachment accepted (bytes). */
  maxAttachmentBytes: number;
}

const LeaseRow = z.object({ holder: z.string().nullable(), epoch: z.coerce.number().int() });

const EntryRowSchema = z
  .object({
    id: z.string(),
    seq: z.coerce.number().int(),
    kind: z.string(),
    dedupe_key: z.string(),
    accepted_ms: z.coerce.number(),
    message: z.unknown(),
    route: z.unknown(),
    reply: z.unknown(),
    sent: z.number().int(),
    leader: z.string().nullable(),
    preview: z.unknown(),
  })
  // The row's columns under the entry's names, still unparsed: the pipe parses them.
  .transform(
    (r): Record<string, unknown> => ({
      id: r.id,
      seq: r.seq,
      kind: r.kind,
      key: r.dedupe_key,
      acceptedAt: r.accepted_ms,
      message: r.message,
      route: r.route,
      sent: r.sent,
      ...(r.reply == null ? {} : { reply: r.reply }),
      ...(r.leader == null ? {} : { leader: r.leader }),
      ...(r.preview == null ? {} : { preview: r.preview }),
    }),
  )
  .pipe(JournalEntrySchema);

const ENTRY_COLUMNS = "id, seq, kind, dedupe_key, extract(epoch FROM accepted_at) * 1000 AS accepted_ms, message, route, reply, sent, leader, preview";

const SessionRow = z.object({ base: z.string(), state: SessionStateSchema });
const KvRow = z.object({ ns: z.string(), k: z.lazy(() => KeyText), v: z.unknown() });
const AuthRow = z.object({ id: z.string(), v: z.unknown() });
const BytesRow = z.object({ bytes: z.instanceof(Buffer) });
const AcceptedRow = z.object({ seq: z.coerce.number().int(), accepted_ms: z.coerce.number() });

export function parseRow<S extends z.ZodType>(schema: S, table: string, key: string, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new StoredRowError(table, key, parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; "));
  return parsed.data;
}

/**
 * A value as jsonb text. PostgreSQL's text and jsonb cannot hold NUL (U+0000): an escaped NUL
 * in a string becomes U+FFFD, so a message that carries one is stored rather than refused for ever.
 */
const json = (v: unknown) => JSON.stringify(v).replace(/(?<!\\)((?:\\\\)*)\\u0000/g, "$1\\ufffd");
/** A kv key as stored: JSON, since the core's keys may hold NUL separators (pairing.ts). */
const storedKey = (key: string) => JSON.stringify(key);
const KeyText = z.string().transform((k, ctx) => {
  try {
    const parsed: unknown = JSON.parse(k);
    if (typeof parsed === "string") return parsed;
  } catch {}
  ctx.addIssue({ code: "custom", message: "not a JSON string" });
  return z.NEVER;
});

/** Loads the unit's rows and returns its fenced state. Reads need no lease; writes do. */
export async function openUnitState(deps: UnitStateDeps): Promise<UnitState> {
  const { pool, lease } = deps;
  const unit = lease.unit;
  const random = deps.random ?? cryptoRandom;
  const entries = new Map<string, StoredEntry>();
  const sessions = new Map<string, SessionState>();
  const kvs = new Map<string, Map<string, unknown>>();

  await withClient(pool, async (load) => {
    const rows = await load.query(`SELECT ${ENTRY_COLUMNS} FROM entry WHERE unit = $1 AND state <> 'done' ORDER BY seq`, [unit]);
    for (const r of rows.rows) {
      const e = parseRow(EntryRowSchema, "entry", String(r.id), r);
      entries.set(e.id, e);
    }
    for (const r of (await load.query("SELECT base, state FROM session WHERE unit = $1", [unit])).rows) {
      const s = parseRow(SessionRow, "session", String(r.base), r);
      sessions.set(s.base, s.state);
    }
    for (const r of (await load.query("SELECT ns, k, v FROM kv WHERE unit = $1", [unit])).rows) {
      const { ns, k, v } = parseRow(KvRow, "kv", `${unit}/${String(r.ns)}/${String(r.k)}`, r); // k: parsed from its stored JSON
      const m = kvs.get(ns) ?? new Map<string, unknown>();
      kvs.set(ns, m);
      m.set(k, v);
    }
  });

  /** Throws unless this node may still write: valid(), not only the signal, since past the deadline a late timer must not leave a window. */
  function assertValid(): void {
    if (lease.valid()) return;
    throw lease.signal.reason instanceof LeaseLostError ? lease.signal.reason : new LeaseLostError(unit, lease.epoch, "self-fenced: past its local deadline");
  }

  /** One fenced transaction: the lease row FOR SHARE, the epoch check, then `work`. */
  async function fenced<T>(operation: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    assertValid();
    try {
      return await withClient(pool, async (client, markBroken) => {
        try {
          await client.query("BEGIN");
          const { rows } = await client.query("SELECT holder, epoch FROM lease WHERE unit = $1 FOR SHARE", [unit]);
          const current = rows[0] === undefined ? undefined : parseRow(LeaseRow, "lease", unit, rows[0]);
          if (current?.epoch !== lease.epoch)
            throw new LeaseLostError(
              unit,
              lease.epoch,
              current ? `the lease is at epoch ${current.epoch}, held by ${current.holder ?? "nobody"}` : "no lease row",
            );
          const result = await work(client);
          await client.query("COMMIT");
          return result;
        } catch (error) {
          await client.query("ROLLBACK").catch(markBroken);
          throw error;
        }
      });
    } catch (error) {
      if (error instanceof LeaseLostError || error instanceof AttachmentTooLargeError) throw error;
      throw new StateWriteError(operation, unit, error);
    }
  }

  /**
   * One fenced write as one statement (one round trip, one commit): `$1` is the unit and `$2`
   * the epoch; `body` is the statement's data-modifying CTEs, each gated by `EXISTS (SELECT 1 FROM
   * fence)`, and may name more CTEs and the final columns through `select`. The `fence` CTE takes
   * the lease row FOR SHARE for the statement's transaction, as `fenced` does: a takeover waits
   * for it, and a statement that starts after a takeover finds no row (PostgreSQL re-checks a
   * locked row's new version), so it changes nothing and this throws `LeaseLostError`.
   */
  async function fencedStatement(operation: string, body: string, params: unknown[], select = ""): Promise<Record<string, unknown>> {
    assertValid();
    let row: Record<string, unknown> | undefined;
    try {
      const result = await pool.query({
        // Named: each connection parses and plans it once (a turn makes three or four of these).
        name: `fenced:${operation}`,
        text: `WITH fence AS (SELECT 1 FROM lease WHERE unit = $1::text AND epoch = $2::bigint FOR SHARE), ${body}
         SELECT EXISTS (SELECT 1 FROM fence) AS held${select ? `, ${select}` : ""}`,
        values: [unit, lease.epoch, ...params],
      });
      row = result.rows[0] as Record<string, unknown> | undefined;
    } catch (error) {
      throw new StateWriteError(operation, unit, error);
    }
    if (row?.held !== true) throw new LeaseLostError(unit, lease.epoch, "another node holds it now");
    return row;
  }
  const batcher = new WriteBatcher({
    pool,
    unit,
    epoch: lease.epoch,
    check: assertValid,
    lost: () => new LeaseLostError(unit, lease.epoch, "another node holds it now"),
    failed: (cause, operations) => new StateWriteError(operations, unit, cause),
  });
  const AND_GATE = "AND EXISTS (SELECT 1 FROM fence)";

  async function accept({ kind, key, message, route }: Parameters<UnitState["accept"]>[0]): ReturnType<UnitState["accept"]> {
    for (const a of message.attachments ?? [])
      if (a.data.length > deps.maxAttachmentBytes) throw new AttachmentTooLargeError(a.fileName, a.data.length, deps.maxAttachmentBytes);
    // Order comes from `seq`, so the id needs no time in it.
    const id = hex(random, 10);
    const { attachments: files, droppedAttachments: _dropped, ...rest } = message;
    const attachments: StoredAttachment[] | undefined = files?.map((a, i) => ({
      kind: a.kind,
      fileName: a.fileName,
      ...(a.mimeType ? { mimeType: a.mimeType } : {}),
      ...(a.seconds !== undefined ? { seconds: a.seconds } : {}),
      size: a.data.length,
      file: `attachment/${id}/${i}`,
    }));
    const stored = { ...rest, ...(attachments ? { attachments } : {}) };
    const accepted = files?.length ? await acceptWithFiles() : await acceptPlain();
    async function acceptPlain() {
      const at = await batcher.write({ op: "accept", id, key, kind, message: json(stored), route: json(route) });
      return at && { seq: at.seq, accepted_ms: at.acceptedMs };
    }
    function acceptWithFiles() {
      return fenced("accept", async (client) => {
        const { rows } = await client.query(
          `INSERT INTO entry (id, unit, dedupe_key, kind, message, route) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (dedupe_key) DO NOTHING RETURNING seq, extract(epoch FROM accepted_at) * 1000 AS accepted_ms`,
          [id, unit, key, kind, json(stored), json(route)],
        );
        if (!rows.length) return undefined;
        for (const [i, a] of (files ?? []).entries()) await client.query("INSERT INTO attachment (entry_id, idx, bytes) VALUES ($1, $2, $3)", [id, i, a.data]);
        return AcceptedRow.parse(rows[0]);
      });
    }
    if (!accepted) return { duplicate: true };
    const entry = parseRow(JournalEntrySchema, "entry", id, {
      id,
      seq: accepted.seq,
      kind,
      key,
      acceptedAt: accepted.accepted_ms,
      message: stored,
      route,
      sent: 0,
    });
    entries.set(id, entry);
    return { duplicate: false, entry };
  }

  return {
    unit,
    lease,
    pending: () => [...entries.values()],
    get: (id) => entries.get(id),
    accept,
    async recordReply(leaderId, reply, session) {
      await batcher.write({
        op: "reply",
        id: leaderId,
        reply: json(reply),
        members: reply.members,
        ...(session ? { session: { base: session.base, state: json(session.state) } } : {}),
      });
      if (session) sessions.set(session.base, session.state);
      const lead = entries.get(leaderId);
      if (lead) lead.reply = reply;
      for (const m of reply.members) {
        const e = entries.get(m);
        if (e && m !== leaderId) e.leader = leaderId;
      }
    },
    async recordSent(id, n) {
      await batcher.write({ op: "sent", id, n });
      const e = entries.get(id);
      if (e) e.sent = Math.max(e.sent, n);
    },
    async recordPreview(id, preview) {
      await batcher.write({ op: "preview", id, preview: preview === null ? null : json(preview) });
      const e = entries.get(id);
      if (e && preview) e.preview = structuredClone(preview);
      else if (e) delete e.preview;
    },
    async complete(ids) {
      const known = ids.filter((id) => entries.has(id));
      if (!known.length) return;
      await batcher.write({ op: "done", ids: known });
      for (const id of known) entries.delete(id);
    },
    session: (base) => sessions.get(base) ?? { generation: 0 },
    async setSession(base, state) {
      await batcher.write({ op: "session", base, state: json(state) });
      sessions.set(base, state);
    },
    async writeTogether(writes) {
      await batcher.write({
        op: "together",
        writes: writes.map((w) =>
          "base" in w
            ? { op: "session" as const, base: w.base, state: json(w.state) }
            : { op: "kv" as const, ns: w.namespace, k: storedKey(w.key), v: w.value === undefined ? undefined : json(w.value) },
        ),
      });
      for (const w of writes) {
        if ("base" in w) sessions.set(w.base, w.state);
        else {
          const m = kvs.get(w.namespace) ?? new Map<string, unknown>();
          kvs.set(w.namespace, m);
          if (w.value === undefined) m.delete(w.key);
          else m.set(w.key, w.value);
        }
      }
    },
    kv(namespace) {
      return {
        get<T>(key: string): T | undefined {
          return kvs.get(namespace)?.get(key) as T | undefined;
        },
        async set(key: string, value: unknown) {
          await batcher.write({ op: "kv", ns: namespace, k: storedKey(key), v: value === undefined ? undefined : json(value) });
          const m = kvs.get(namespace) ?? new Map<string, unknown>();
          kvs.set(namespace, m);
          if (value === undefined) m.delete(key);
          else m.set(key, value);
        },
        keys: () => [...(kvs.get(namespace)?.keys() ?? [])],
      };
    },
    async attachment(entryId, index) {
      const { rows } = await pool.query(
        "SELECT a.bytes FROM attachment a JOIN entry e ON e.id = a.entry_id WHERE e.unit = $1 AND a.entry_id = $2 AND a.idx = $3",
        [unit, entryId, index],
      );
      if (!rows.length) throw new StoredRowError("attachment", `${entryId}/${index}`, "missing (its entry is done, or belongs to another unit)");
      return parseRow(BytesRow, "attachment", `${entryId}/${index}`, rows[0]).bytes;
    },
    async readAuth(type, ids) {
      const { rows } = await pool.query("SELECT id, v FROM wa_auth WHERE unit = $1 AND type = $2 AND id = ANY($3)", [unit, type, ids]);
      return Object.fromEntries(rows.map((r) => parseRow(AuthRow, "wa_auth", `${unit}/${type}`, r)).map((r) => [r.id, r.v]));
    },
    async removeInbox(keys) {
      if (keys.length === 0) return;
      await fencedStatement("removeInbox", `d AS (DELETE FROM inbox WHERE unit = $1 AND key = ANY($3::text[]) ${AND_GATE} RETURNING 1)`, [[...keys]]);
    },
    async clearAuth() {
      await fencedStatement("clearAuth", `d AS (DELETE FROM wa_auth WHERE unit = $1 ${AND_GATE} RETURNING 1)`, []);
    },
    async writeAuth(data) {
      await fenced("writeAuth", async (client) => {
        for (const [type, values] of Object.entries(data))
          for (const [id, v] of Object.entries(values)) {
            if (v === null || v === undefined) await client.query("DELETE FROM wa_auth WHERE unit = $1 AND type = $2 AND id = $3", [unit, type, id]);
            else
              await client.query("INSERT INTO wa_auth (unit, type, id, v) VALUES ($1, $2, $3, $4) ON CONFLICT (unit, type, id) DO UPDATE SET v = excluded.v", [
                unit,
                type,
                id,
                json(v),
              ]);
          }
      });
    },
    fenced,
  };
}
