/**
 * Group commit for one unit's hot writes: while one batch is in the database,
 * the writes that arrive wait, and go together as the next batch, in one
 * statement and one commit. Under load (200 chats) a batch carries many turns'
 * writes, and the database parses, plans, locks the lease row and flushes its
 * log once for all of them; alone, a write goes at once, as before.
 *
 * The statement is fenced as every write is: its `fence` CTE takes the lease
 * row `FOR SHARE` and checks the epoch, and every data-modifying CTE is gated
 * on it, so a batch of a node that lost the lease changes nothing.
 *
 * Within one statement all CTEs see the same snapshot, and PostgreSQL leaves it
 * unpredictable which of two changes to one row wins: so a write that touches
 * an entry the batch already touches waits for the next batch, and two writes
 * of one session or one key merge (the later wins, as it would in order).
 */
import type pg from "pg";
import { z } from "zod";
import { GroupCommit } from "../../../shared/group-commit.js";

type SessionWrite = { op: "session"; base: string; state: string };
type KvWrite = { op: "kv"; ns: string; k: string; v: string | undefined };

export type BatchedWrite =
  | { op: "accept"; id: string; key: string; kind: string; message: string; route: string }
  /** With the session change it caused, in the same commit. */
  | { op: "reply"; id: string; reply: string; members: readonly string[]; session?: { base: string; state: string } }
  | { op: "sent"; id: string; n: number }
  | { op: "preview"; id: string; preview: string | null }
  | { op: "done"; ids: readonly string[] }
  | SessionWrite
  | KvWrite
  /** Session and kv writes that must never be split across batches (one statement commits them all). */
  | { op: "together"; writes: readonly (SessionWrite | KvWrite)[] };

/** What an accepted entry got from the database (absent: its dedupe key was taken). */
export interface AcceptedAt {
  seq: number;
  acceptedMs: number;
}

const GATE = "EXISTS (SELECT 1 FROM fence)";

/** One statement for any mix of writes; empty arrays cost a few microseconds. */
const BATCH_SQL = `
WITH fence AS (SELECT 1 FROM lease WHERE unit = $1::text AND epoch = $2::bigint FOR SHARE),
acc AS (INSERT INTO entry (id, unit, dedupe_key, kind, message, route)
        SELECT a.id, $1::text, a.key, a.kind, a.message, a.route
          FROM unnest($3::text[], $4::text[], $5::text[], $6::jsonb[], $7::jsonb[]) AS a(id, key, kind, message, route)
         WHERE ${GATE}
        ON CONFLICT (dedupe_key) DO NOTHING
        RETURNING id, seq, extract(epoch FROM accepted_at) * 1000 AS accepted_ms),
rep AS (UPDATE entry e SET reply = r.reply FROM unnest($8::text[], $9::jsonb[]) AS r(id, reply)
         WHERE e.id = r.id AND e.unit = $1::text AND ${GATE} RETURNING 1),
led AS (UPDATE entry e SET leader = l.leader FROM unnest($10::text[], $11::text[]) AS l(id, leader)
         WHERE e.id = l.id AND e.unit = $1::text AND ${GATE} RETURNING 1),
snt AS (UPDATE entry e SET sent = greatest(e.sent, s.n) FROM unnest($12::text[], $13::int[]) AS s(id, n)
         WHERE e.id = s.id AND e.unit = $1::text AND ${GATE} RETURNING 1),
prv AS (UPDATE entry e SET preview = p.preview FROM unnest($14::text[], $15::jsonb[]) AS p(id, preview)
         WHERE e.id = p.id AND e.unit = $1::text AND ${GATE} RETURNING 1),
don AS (UPDATE entry SET state = 'done', preview = NULL WHERE unit = $1::text AND id = ANY($16::text[]) AND ${GATE} RETURNING 1),
att AS (DELETE FROM attachment WHERE entry_id = ANY($16::text[]) AND ${GATE} RETURNING 1),
ses AS (INSERT INTO session (base, unit, state)
        SELECT s.base, $1::text, s.state FROM unnest($17::text[], $18::jsonb[]) AS s(base, state) WHERE ${GATE}
        ON CONFLICT (base) DO UPDATE SET state = excluded.state, unit = excluded.unit RETURNING 1),
kvs AS (INSERT INTO kv (unit, ns, k, v)
        SELECT $1::text, s.ns, s.k, s.v FROM unnest($19::text[], $20::text[], $21::jsonb[]) AS s(ns, k, v) WHERE ${GATE}
        ON CONFLICT (unit, ns, k) DO UPDATE SET v = excluded.v RETURNING 1),
kvd AS (DELETE FROM kv USING unnest($22::text[], $23::text[]) AS d(ns, k)
         WHERE kv.unit = $1::text AND kv.ns = d.ns AND kv.k = d.k AND ${GATE} RETURNING 1)
SELECT EXISTS (SELECT 1 FROM fence) AS held,
       (SELECT coalesce(json_agg(json_build_object('id', id, 'seq', seq, 'acceptedMs', accepted_ms)), '[]'::json) FROM acc) AS accepted`;

const ResultRow = z.object({
  held: z.boolean(),
  accepted: z.array(z.object({ id: z.string(), seq: z.coerce.number().int(), acceptedMs: z.coerce.number() })),
});

/** The entries a write touches (two writes touching one go in different batches). */
function entriesOf(w: BatchedWrite): readonly string[] {
  switch (w.op) {
    case "accept":
    case "sent":
    case "preview":
      return [w.id];
    case "reply":
      return [w.id, ...w.members];
    case "done":
      return w.ids;
    default:
      return [];
  }
}

/** How many of the waiting writes go in the next batch: up to the first that touches an entry the batch touches already. */
function untilConflict(waiting: readonly BatchedWrite[]): number {
  const touched = new Set<string>();
  let i = 0;
  for (; i < waiting.length; i++) {
    const ids = entriesOf(waiting[i]!);
    if (ids.some((id) => touched.has(id))) break;
    for (const id of ids) touched.add(id);
  }
  return i;
}

export interface WriteBatcherDeps {
  pool: pg.Pool;
  unit: string;
  epoch: number;
  /** Checked before each batch: throws when this node may not write any more (its lease is gone). */
  check(): void;
  /** A batch the database fenced off (another node holds the lease now). */
  lost(): Error;
  /** A batch the database failed (`operations`: what it carried, for the message). */
  failed(cause: unknown, operations: string): Error;
}

export class WriteBatcher {
  readonly #deps: WriteBatcherDeps;
  /** The writes of one turn of the event loop go together; while a batch is in the database, the next gathers. */
  readonly #batches = new GroupCommit<BatchedWrite, AcceptedAt | undefined>({
    gather: "microtask",
    take: untilConflict,
    commit: async (batch) => {
      this.#deps.check();
      const accepted = await this.#run(batch);
      return batch.map((w) => (w.op === "accept" ? accepted.get(w.id) : undefined));
    },
  });

  constructor(deps: WriteBatcherDeps) {
    this.#deps = deps;
  }

  /** Resolves once the write is committed (an accept: with its seq, or undefined when its key was taken). */
  write(write: BatchedWrite): Promise<AcceptedAt | undefined> {
    return this.#batches.submit(write);
  }

  async #run(writes: readonly BatchedWrite[]): Promise<Map<string, AcceptedAt>> {
    const acc = { id: [] as string[], key: [] as string[], kind: [] as string[], message: [] as string[], route: [] as string[] };
    const rep = { id: [] as string[], reply: [] as string[] };
    const led = { id: [] as string[], leader: [] as string[] };
    const snt = { id: [] as string[], n: [] as number[] };
    const prv = { id: [] as string[], preview: [] as (string | null)[] };
    const don: string[] = [];
    // The later write of one session or key wins, as it would have in order.
    const sessions = new Map<string, string>();
    const kvs = new Map<string, { ns: string; k: string; v: string | undefined }>();
    for (const w of writes.flatMap((w): readonly BatchedWrite[] => (w.op === "together" ? w.writes : [w]))) {
      switch (w.op) {
        case "accept":
          acc.id.push(w.id);
          acc.key.push(w.key);
          acc.kind.push(w.kind);
          acc.message.push(w.message);
          acc.route.push(w.route);
          break;
        case "reply":
          rep.id.push(w.id);
          rep.reply.push(w.reply);
          if (w.session) sessions.set(w.session.base, w.session.state);
          for (const m of w.members)
            if (m !== w.id) {
              led.id.push(m);
              led.leader.push(w.id);
            }
          break;
        case "sent":
          snt.id.push(w.id);
          snt.n.push(w.n);
          break;
        case "preview":
          prv.id.push(w.id);
          prv.preview.push(w.preview);
          break;
        case "done":
          don.push(...w.ids);
          break;
        case "session":
          sessions.set(w.base, w.state);
          break;
        case "kv":
          kvs.set(JSON.stringify([w.ns, w.k]), w);
          break;
      }
    }
    const sets = [...kvs.values()].filter((k) => k.v !== undefined);
    const deletes = [...kvs.values()].filter((k) => k.v === undefined);
    let raw: unknown;
    try {
      const result = await this.#deps.pool.query({
        name: "fenced:batch",
        text: BATCH_SQL,
        values: [
          this.#deps.unit,
          this.#deps.epoch,
          acc.id,
          acc.key,
          acc.kind,
          acc.message,
          acc.route,
          rep.id,
          rep.reply,
          led.id,
          led.leader,
          snt.id,
          snt.n,
          prv.id,
          prv.preview,
          don,
          [...sessions.keys()],
          [...sessions.values()],
          sets.map((k) => k.ns),
          sets.map((k) => k.k),
          sets.map((k) => k.v),
          deletes.map((k) => k.ns),
          deletes.map((k) => k.k),
        ],
      });
      raw = result.rows[0];
    } catch (error) {
      throw this.#deps.failed(error, [...new Set(writes.map((w) => w.op))].join("+"));
    }
    const row = ResultRow.parse(raw);
    if (!row.held) throw this.#deps.lost();
    return new Map(row.accepted.map((a) => [a.id, { seq: a.seq, acceptedMs: a.acceptedMs }]));
  }
}
