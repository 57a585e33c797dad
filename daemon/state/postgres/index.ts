/**
 * The PostgreSQL state backend: several daemons on one database form one
 * bridge, each platform account (a "unit": `telegram:<acct>`, `whatsapp:<acct>`,
 * `discord:<acct>`) owned by one node at a time.
 *
 * Design (docs: shared/design/scale-out.md, sections 4.2-4.3):
 *
 * - What is fenced: every state write of an owner (accept, reply, chunk sent,
 *   preview, done, session head, adapter key-values, WhatsApp auth) is a
 *   transaction that takes the unit's lease row `FOR SHARE` and checks the
 *   epoch it acquired; a node that lost the lease gets `LeaseLostError` and
 *   writes nothing. Platform calls cannot be fenced by the database, so the
 *   owner fences itself: `HeldLease.signal` fires at a local monotonic
 *   deadline, `t0 + ttl*(1-rho) - margin`, before anyone else can acquire.
 * - The window of a zombie: a node paused (GC, SIGSTOP) between its deadline
 *   check and a platform send can make that one send late, after a successor
 *   started; its next fenced write fails and it stops. At most one duplicated
 *   chunk per in-flight reply, as with a kill -9 today.
 * - What the database's clock decides: lease expiry (`clock_timestamp()`), so
 *   nodes' wall clocks never have to agree; locally only the clock *rate*
 *   matters (rho = 1 %), measured on a monotonic clock.
 * - Dedupe is the `UNIQUE` dedupe key of `entry`, shared by all nodes and
 *   surviving restarts; migrations run once across nodes under an advisory lock.
 */
import pg from "pg";
import { z } from "zod";
import type { Clock } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import { openInbox, type Inbox } from "./inbox.js";
import { LeaseKeeper, type HeldLease } from "./leases.js";
import { migrate } from "./migrations.js";
import { monotonicClock } from "./monotonic-clock.js";
import { SchemaTooNewError, StateWriteError } from "../../vocabulary/state-errors.js";
import { describeUrl, resolvePostgresOptions, type PostgresStateInput, type ResolvedPostgresOptions } from "./options.js";
import { openUnitState, type UnitState } from "./unit-state.js";
import { createPgLinkBook, type FencedBy } from "./identity-links.js";
import { holdSharedSession, type SharedSessionHold } from "./shared-sessions.js";
import { pgFileStores } from "./file-links.js";
import type { FileStoreBackend } from "../../vocabulary/file-store.js";
import type { LinkBook } from "../../vocabulary/identity-links.js";

export { AttachmentTooLargeError, LeaseLostError, SchemaTooNewError, StateWriteError, StoredRowError } from "../../vocabulary/state-errors.js";
export type { Inbox, InboxRow } from "./inbox.js";
export type { HeldLease } from "./leases.js";
export type { SharedSessionHold } from "./shared-sessions.js";
export { MIGRATIONS, SCHEMA_VERSION, migrate } from "./migrations.js";
export { describeUrl, PostgresStateOptionsSchema, resolvePostgresOptions, type PostgresStateInput, type ResolvedPostgresOptions } from "./options.js";
export type { SessionState, StoredEntry, UnitState } from "./unit-state.js";

export interface PostgresStateDeps {
  /** Every unit the cluster serves: the same list on every node. */
  units: readonly string[];
  /** Monotonic clock for lease deadlines and timers (default: performance.now). */
  clock?: Clock;
  /** Entry ids (default: crypto). */
  random?: Random;
  onAcquired?: (lease: HeldLease) => void;
  /** A graceful handover: stop the unit's platform traffic and resolve once its sends in progress are recorded (the lease is still valid). */
  beforeRelease?: (lease: HeldLease) => Promise<void>;
  onError?: (error: unknown) => void;
  /** This node's config hash now, written with each heartbeat (nodes compare theirs). */
  configHash?: () => string;
}

export interface ClusterStatus {
  schemaVersion: number;
  /** `expiresInMs` is negative once expired (free to acquire). */
  leases: { unit: string; holder: string | null; epoch: number; expiresInMs: number }[];
  nodes: { id: string; seenAgoMs: number }[];
}

const LeaseStatusRow = z.object({
  unit: z.string(),
  holder: z.string().nullable(),
  epoch: z.coerce.number().int(),
  expires_in_ms: z.coerce.number().nullable(),
});
const NodeStatusRow = z.object({ id: z.string(), seen_ago_ms: z.coerce.number() });

export interface PostgresState {
  readonly options: ResolvedPostgresOptions;
  /** The schema version in place after migrating. */
  readonly schemaVersion: number;
  readonly leases: LeaseKeeper;
  /** Events any node received for a unit, until its owner took them (inbox.ts). */
  readonly inbox: Inbox;
  /** Identity links, in tables every node sees; `fencedBy` fences each write by the lease of the account whose command makes it. */
  linkBook(fencedBy: FencedBy): LinkBook;
  /** Reply files served by link, in tables every node reads; `fencedBy` fences each write by the lease of the file's account. */
  fileStores(fencedBy: FencedBy): FileStoreBackend;
  /** Holds a session no account owns (shared-sessions.ts) until released. */
  holdSession(key: string, signal?: AbortSignal): Promise<SharedSessionHold>;
  /** The state of a unit this node holds, loaded from the database; its writes are fenced by `lease`. */
  openUnit(lease: HeldLease): Promise<UnitState>;
  /** Who owns what, on the database's clock: for `/healthz`, `/metrics` and `agent-bridge check`. */
  status(): Promise<ClusterStatus>;
  /** Hands every lease over, then closes the connections. */
  close(): Promise<void>;
  /** Closes the connections without releasing anything (a crash, for tests). */
  abandon(): Promise<void>;
}

/** Connects, migrates (once across nodes), and prepares the lease keeper; call `leases.start()` to begin owning units. */
export async function openPostgresState(input: PostgresStateInput, deps: PostgresStateDeps): Promise<PostgresState> {
  const options = resolvePostgresOptions(input);
  // A query or connection that takes longer than a lease is hopeless; without a limit a lost
  // network would hold the keeper's rounds until TCP gives up (the self-fence fires regardless).
  const limit = Math.max(options.leaseTtlMs, 5_000);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    connectionTimeoutMillis: limit,
    query_timeout: limit,
    keepAlive: true,
    // A node paused (SIGSTOP, a long GC) inside a fenced write holds the lease row FOR SHARE, and
    // a takeover's UPDATE would wait for it for as long as the pause lasts: the server ends such
    // a transaction after a third of a lease (its write is rolled back; the node is fenced anyway).
    idle_in_transaction_session_timeout: Math.max(500, Math.floor(options.leaseTtlMs / 3)),
  });
  // An idle connection dropped by a server restart must not end the process; the next query reconnects.
  pool.on("error", (error) => deps.onError?.(error));
  const schemaVersion = await migrateOrEnd(pool, options.url);
  const leases = new LeaseKeeper({
    pool,
    listenUrl: options.url,
    nodeId: options.nodeId,
    units: deps.units,
    leaseTtlMs: options.leaseTtlMs,
    renewEveryMs: options.renewEveryMs,
    pollMs: options.pollMs,
    fenceMarginMs: options.fenceMarginMs,
    clock: deps.clock ?? monotonicClock,
    ...(deps.onAcquired ? { onAcquired: deps.onAcquired } : {}),
    ...(deps.beforeRelease ? { beforeRelease: deps.beforeRelease } : {}),
    ...(deps.onError ? { onError: deps.onError } : {}),
    ...(deps.configHash ? { configHash: deps.configHash } : {}),
  });
  /** Aborted by the first `close` or `abandon`: the pool ends once. */
  const ended = new AbortController();
  const inbox = openInbox(pool, options.url, (error) => deps.onError?.(error));
  return {
    options,
    schemaVersion,
    leases,
    inbox,
    async status() {
      const leaseRows = await pool.query(
        "SELECT unit, holder, epoch, CASE WHEN isfinite(expires_at) THEN extract(epoch FROM expires_at - clock_timestamp()) * 1000 END AS expires_in_ms FROM lease ORDER BY unit",
      );
      const nodeRows = await pool.query("SELECT id, extract(epoch FROM clock_timestamp() - seen_at) * 1000 AS seen_ago_ms FROM node ORDER BY id");
      return {
        schemaVersion,
        leases: leaseRows.rows.map((r) => {
          const l = LeaseStatusRow.parse(r);
          // '-infinity' (released) comes back as null: expired long ago.
          return { unit: l.unit, holder: l.holder, epoch: l.epoch, expiresInMs: l.expires_in_ms ?? Number.NEGATIVE_INFINITY };
        }),
        nodes: nodeRows.rows.map((r) => {
          const n = NodeStatusRow.parse(r);
          return { id: n.id, seenAgoMs: n.seen_ago_ms };
        }),
      };
    },
    linkBook: (fencedBy) => createPgLinkBook({ pool, fencedBy }),
    fileStores: (fencedBy) => pgFileStores({ pool, fencedBy, clock: deps.clock ?? monotonicClock, ...(deps.onError ? { onError: deps.onError } : {}) }),
    holdSession: (key, signal) => holdSharedSession(pool, deps.clock ?? monotonicClock, key, options.leaseTtlMs / 3000, signal),
    openUnit: (lease) => openUnitState({ pool, lease, maxAttachmentBytes: options.maxAttachmentBytes, ...(deps.random ? { random: deps.random } : {}) }),
    async close() {
      if (ended.signal.aborted) return;
      ended.abort();
      try {
        await leases.stop();
      } finally {
        await inbox.close();
        await pool.end();
      }
    },
    async abandon() {
      if (ended.signal.aborted) return;
      ended.abort();
      await leases.halt();
      await inbox.close();
      await pool.end().catch(() => undefined);
    },
  };
}

/** The schema migrated to this daemon's version (its number); the pool is ended when that fails. */
async function migrateOrEnd(pool: pg.Pool, url: string): Promise<number> {
  try {
    return (await migrate(pool)).version;
  } catch (error) {
    await pool.end().catch(() => undefined);
    if (error instanceof SchemaTooNewError) throw error;
    throw new StateWriteError("connect and migrate", describeUrl(url), error);
  }
}
