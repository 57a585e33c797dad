/**
 * Leases with fencing: which node owns which unit (a platform account), timed
 * by the database's clock, with an epoch that grows on every takeover.
 *
 * - acquire: only a lease expired on `clock_timestamp()`; epoch + 1.
 * - renew: every `renewEveryMs`, all held leases in one statement; a lease not
 *   renewed (taken over, or its row changed) ends at once.
 * - self-fencing: each held lease has an `AbortSignal` that fires at the local
 *   monotonic deadline `t0 + ttl*(1-rho) - margin`, where t0 is read *before*
 *   the acquiring or renewing statement was sent. The database set expiry to at
 *   least t0 + ttl on its own clock, so the signal fires before anyone else can
 *   acquire, given only a bounded clock *rate* difference (rho), not synced clocks.
 * - placement: claim free units up to `ceil(units / live nodes)`, release above
 *   it gracefully (`beforeRelease`, the signal, the row, `NOTIFY lease_free`); a unit
 *   left free for two polls is claimed by anyone (a dead node still counts as live).
 *   Releases count only the nodes that heartbeat within the last few polls, so what
 *   a node took from a dead one stays until a node that can take it is there.
 */
import PQueue from "p-queue";
import pg from "pg";
import { z } from "zod";
import type { Clock, Timer } from "../../../shared/clock.js";
import { LeaseLostError } from "../../vocabulary/state-errors.js";
import { CLOCK_DRIFT_RATE } from "./options.js";

/** A lease this node holds. */
export interface HeldLease {
  readonly unit: string;
  /** The fencing number: every state write checks it. */
  readonly epoch: number;
  /** Aborts (reason: `LeaseLostError`) at the local deadline unless renewed, on loss, or on release: stop all platform traffic for the unit. */
  readonly signal: AbortSignal;
  /** The local monotonic instant (the keeper's clock) past which this node must not touch the platform. */
  deadline(): number;
  /** Still held and before its deadline: check right before each platform call. */
  valid(): boolean;
}

/** Owns one held lease's deadline timer and signal. */
/** A lease this node holds (exported for its unit test). */
export class Held implements HeldLease {
  readonly #controller = new AbortController();
  readonly #clock: Clock;
  #deadline = Number.NEGATIVE_INFINITY;
  #timer: Timer | undefined;

  constructor(
    readonly unit: string,
    readonly epoch: number,
    clock: Clock,
    deadline: number,
  ) {
    this.#clock = clock;
    this.extend(deadline);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  deadline(): number {
    return this.#deadline;
  }

  valid(): boolean {
    return !this.signal.aborted && this.#clock.now() < this.#deadline;
  }

  /**
   * A renewal succeeded: the deadline moves on (never back). Not once the deadline has passed:
   * `valid()` has said false since (a send may have been refused and its account halted), and a
   * renewal answered after an event-loop stall must not bring back a lease its holder already
   * treated as lost; it ends now, as its timer would have.
   */
  extend(deadline: number): void {
    if (this.signal.aborted || deadline <= this.#deadline) return;
    if (this.#deadline !== Number.NEGATIVE_INFINITY && this.#clock.now() >= this.#deadline) {
      this.end(new LeaseLostError(this.unit, this.epoch, "self-fenced: not renewed before its local deadline"));
      return;
    }
    this.#deadline = deadline;
    this.#timer?.cancel();
    this.#timer = this.#clock.setTimeout(
      () => this.end(new LeaseLostError(this.unit, this.epoch, "self-fenced: not renewed before its local deadline")),
      deadline - this.#clock.now(),
    );
  }

  end(reason: LeaseLostError): void {
    this.#timer?.cancel();
    if (!this.signal.aborted) this.#controller.abort(reason);
  }
}

export interface LeaseKeeperOptions {
  pool: pg.Pool;
  /** Connection string for the `LISTEN lease_free` connection; without it the keeper only polls. */
  listenUrl?: string;
  nodeId: string;
  /** Every unit the cluster serves (the same list on every node: the config's accounts). */
  units: readonly string[];
  leaseTtlMs: number;
  renewEveryMs: number;
  pollMs: number;
  fenceMarginMs: number;
  /** Monotonic: deadlines and timers. */
  clock: Clock;
  /** A lease was acquired: start the unit's platform traffic under `lease.signal`. */
  onAcquired?: (lease: HeldLease) => void;
  /** Before a graceful release: stop the unit's platform traffic and resolve once its sends in progress are recorded (the lease is still valid meanwhile; its signal fires after). */
  beforeRelease?: (lease: HeldLease) => Promise<void>;
  /** A background round failed (database unreachable, say); the keeper tries again next round. */
  onError?: (error: unknown) => void;
  /** This node's config hash now (it changes with a reload), written with each heartbeat. */
  configHash?: () => string;
}

const EpochRow = z.object({ epoch: z.coerce.number().int() });
const UnitRow = z.object({ unit: z.string() });
const CountRow = z.object({
  live: z.coerce.number().int(),
  fresh: z.coerce.number().int(),
  peers: z.array(z.object({ node: z.string(), hash: z.string() })).default([]),
});
const FreeRow = z.object({ unit: z.string(), stale: z.boolean() });

const ms = (n: number) => n / 1000;
/** The keeper's periodic rounds. */
type Round = "renew" | "place";
/** A node that has not heartbeat for this many polls is not given units (a live one does every poll, a slow round aside). */
const FRESH_POLLS = 5;

export class LeaseKeeper {
  readonly #o: LeaseKeeperOptions;
  readonly #held = new Map<string, Held>();
  /** The pending timer of each periodic round; a round whose entry is gone is not set again. */
  readonly #timers = new Map<Round, Timer>();
  #listener: pg.Client | undefined;
  #stopped = false;
  /** True once this node's units have rows in `lease` (placement reads them); set by the first round that reaches the database. */
  #unitsListed = false;
  /** How the last background round went (renew or place): a node that cannot reach the database says so in /healthz. */
  #lastRound: { ok: boolean; at: number } | undefined;
  /** The other live nodes and their config hashes, as of the last heartbeat, by node id (nodes that report none left out). */
  #peerConfigs: { node: string; hash: string }[] = [];
  /** Units handed over on request, and until when (monotonic ms) this node leaves them to others; a stale one is claimed anyway, so none is left unowned. */
  readonly #leaving = new Map<string, number>();
  /** Placement rounds, acquires and releases, one at a time (two never claim or free the same unit at once). */
  readonly #rounds = new PQueue({ concurrency: 1 });
  /**
   * Renewals, one at a time, beside those: a graceful release waits for its unit to wind down
   * (seconds, for a gateway to close), and meanwhile every held lease, that one's too, must be
   * renewed or it self-fences. A renewal only extends or ends the leases it sent.
   */
  readonly #renewals = new PQueue({ concurrency: 1 });

  constructor(options: LeaseKeeperOptions) {
    this.#o = options;
  }

  get nodeId(): string {
    return this.#o.nodeId;
  }

  /** The config hashes the other live nodes reported at the last heartbeat, each once. */
  get peerConfigHashes(): readonly string[] {
    return [...new Set(this.#peerConfigs.map((p) => p.hash))];
  }

  /** The other live nodes that reported a config hash at the last heartbeat, with it. */
  get peerConfigs(): readonly { node: string; hash: string }[] {
    return this.#peerConfigs;
  }

  /** Whether the last renewal or placement round reached the database (undefined before the first). */
  get lastRound(): { ok: boolean; at: number } | undefined {
    return this.#lastRound;
  }

  /** Leases held now. */
  held(): HeldLease[] {
    return [...this.#held.values()];
  }

  /**
   * Runs a first placement, then renews and places on timers and notifications. A first round
   * that cannot reach the database (it went away after the node connected) is retried like any
   * later one: the node stays up, says so in `lastRound`, and joins when the database is back.
   */
  async start(): Promise<void> {
    this.#every("renew", this.#o.renewEveryMs, () => this.renew());
    this.#every("place", this.#o.pollMs, () => this.place());
    await this.#tracked(() => this.place());
  }

  /** One renewal of every held lease. A lease the database no longer gives this node ends now. */
  renew(): Promise<void> {
    return this.#renewals.add(async () => {
      const held = [...this.#held.values()];
      if (!held.length) return;
      const t0 = this.#o.clock.now();
      const { rows } = await this.#o.pool.query(
        `UPDATE lease l SET expires_at = clock_timestamp() + make_interval(secs => $4)
           FROM unnest($1::text[], $2::bigint[]) AS h(unit, epoch)
          WHERE l.unit = h.unit AND l.epoch = h.epoch AND l.holder = $3
         RETURNING l.unit`,
        [held.map((h) => h.unit), held.map((h) => h.epoch), this.#o.nodeId, ms(this.#o.leaseTtlMs)],
      );
      const renewed = new Set(rows.map((r) => UnitRow.parse(r).unit));
      for (const h of held) {
        if (renewed.has(h.unit)) h.extend(this.#deadlineFrom(t0));
        else this.#drop(h, new LeaseLostError(h.unit, h.epoch, "taken over by another node"));
      }
    });
  }

  /**
   * Heartbeat, then release above fair share or claim free units up to it. A unit free for
   * longer than two polls is claimed beyond the share: a node killed a moment ago still counts
   * as live for two TTLs, and its accounts must not wait for that (failover stays TTL + a poll).
   * No release happens while such a unit exists, and releases count only fresh nodes (seen
   * within the last few polls): with the dead node counted, the next round gave the unit up
   * again as above the share and took it back two polls later, until the dead node aged out,
   * each handover running again what its last owner had not recorded.
   */
  place(): Promise<void> {
    return this.#rounds.add(async () => {
      if (this.#stopped) return;
      if (!this.#unitsListed) {
        await this.#o.pool.query("INSERT INTO lease (unit) SELECT unnest($1::text[]) ON CONFLICT (unit) DO NOTHING", [[...this.#o.units]]);
        this.#unitsListed = true;
      }
      const { share, keep } = await this.#fairShare();
      const { rows } = await this.#o.pool.query(
        `SELECT unit, expires_at < clock_timestamp() - make_interval(secs => $2) AS stale
           FROM lease WHERE unit = ANY($1) AND expires_at < clock_timestamp() ORDER BY unit`,
        [[...this.#o.units], ms(2 * this.#o.pollMs)],
      );
      const free = rows.map((r) => FreeRow.parse(r));
      const now = this.#o.clock.now();
      if (!free.some((f) => f.stale)) for (const h of [...this.#held.values()].slice(keep).reverse()) await this.#release(h);
      const leaving = (unit: string) => (this.#leaving.get(unit) ?? 0) > now;
      for (const { unit, stale } of free) if ((this.#held.size < share && !leaving(unit)) || stale) await this.#acquire(unit);
    });
  }

  /** Acquires one unit now if its lease has expired (tests, and a `prefer` setting later). */
  acquire(unit: string): Promise<HeldLease | undefined> {
    return this.#rounds.add(async () => {
      await this.#o.pool.query("INSERT INTO lease (unit) VALUES ($1) ON CONFLICT (unit) DO NOTHING", [unit]);
      return this.#acquire(unit);
    });
  }

  /** Hands one unit over: `beforeRelease` runs, its signal fires, then the row is freed and other nodes are woken. */
  release(unit: string): Promise<void> {
    return this.#rounds.add(async () => {
      const h = this.#held.get(unit);
      if (h) await this.#release(h);
    });
  }

  /**
   * Hands one unit over on request (the operator's console): released as `release` does, and
   * not claimed back by this node for `holdMs`, so another node's placement takes it (which
   * one is the placement's choice). False when this node does not hold it.
   */
  handOver(unit: string, holdMs: number): Promise<boolean> {
    return this.#rounds.add(async () => {
      const h = this.#held.get(unit);
      if (!h) return false;
      this.#leaving.set(unit, this.#o.clock.now() + holdMs);
      await this.#release(h);
      return true;
    });
  }

  /**
   * Graceful stop: releases every lease (others take over in about a second) and leaves the node
   * table. Placement stops first; renewals go on until the last release is done, since each
   * release waits for its unit to wind down and the leases not yet released (and that one) must
   * not expire meanwhile: self-fenced mid-hand-over, a send in progress goes unrecorded and the
   * next owner sends it again.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancel("place");
    try {
      await this.#rounds.add(async () => {
        for (const h of [...this.#held.values()]) await this.#release(h);
        await this.#o.pool.query("DELETE FROM node WHERE id = $1", [this.#o.nodeId]);
      });
    } finally {
      this.#cancel("renew");
      await this.#renewals.onIdle();
      await this.#unlisten();
    }
  }

  /** Stops renewing and placing without writing anything: what a paused or cut-off node does (its deadlines still fire). */
  async halt(): Promise<void> {
    this.#stopped = true;
    this.#cancel("place");
    this.#cancel("renew");
    await this.#unlisten();
  }

  async #acquire(unit: string): Promise<HeldLease | undefined> {
    if (this.#held.has(unit)) return this.#held.get(unit);
    const t0 = this.#o.clock.now();
    const { rows } = await this.#o.pool.query(
      `UPDATE lease SET holder = $2, epoch = epoch + 1, expires_at = clock_timestamp() + make_interval(secs => $3)
        WHERE unit = $1 AND expires_at < clock_timestamp()
       RETURNING epoch`,
      [unit, this.#o.nodeId, ms(this.#o.leaseTtlMs)],
    );
    if (!rows.length) return undefined;
    const held = new Held(unit, EpochRow.parse(rows[0]).epoch, this.#o.clock, this.#deadlineFrom(t0));
    this.#held.set(unit, held);
    held.signal.addEventListener("abort", () => this.#held.get(unit) === held && this.#held.delete(unit), { once: true });
    this.#o.onAcquired?.(held);
    return held;
  }

  async #release(h: Held): Promise<void> {
    // Still held while the unit winds down, so the sends in progress are recorded (nothing twice).
    await this.#o.beforeRelease?.(h);
    this.#drop(h, new LeaseLostError(h.unit, h.epoch, "released by this node"));
    await this.#o.pool.query(
      `WITH freed AS (UPDATE lease SET expires_at = clock_timestamp(), holder = NULL WHERE unit = $1 AND epoch = $2 AND holder = $3 RETURNING unit)
       SELECT pg_notify('lease_free', unit) FROM freed`,
      [h.unit, h.epoch, this.#o.nodeId],
    );
  }

  #drop(h: Held, reason: LeaseLostError): void {
    if (this.#held.get(h.unit) === h) this.#held.delete(h.unit);
    h.end(reason);
  }

  #deadlineFrom(t0: number): number {
    return t0 + this.#o.leaseTtlMs * (1 - CLOCK_DRIFT_RATE) - this.#o.fenceMarginMs;
  }

  /**
   * Heartbeat, then the shares: `share = ceil(units / live nodes)`, live meaning seen within two
   * TTLs (this node counts: it just heartbeat), claimed up to; `keep`, the same over the nodes seen
   * within the last FRESH_POLLS polls, released above (a dead node stops counting for it at once).
   */
  async #fairShare(): Promise<{ share: number; keep: number }> {
    const { rows } = await this.#o.pool.query(
      `WITH beat AS (INSERT INTO node (id, seen_at, config_hash) VALUES ($1, clock_timestamp(), $3)
                     ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at, config_hash = excluded.config_hash RETURNING id)
       SELECT 1 + count(*) AS live, 1 + count(*) FILTER (WHERE node.seen_at > clock_timestamp() - make_interval(secs => $4)) AS fresh,
              coalesce(json_agg(json_build_object('node', node.id, 'hash', node.config_hash) ORDER BY node.id) FILTER (WHERE node.config_hash IS NOT NULL), '[]') AS peers
       FROM node, beat WHERE node.id <> beat.id AND node.seen_at > clock_timestamp() - make_interval(secs => $2)`,
      [this.#o.nodeId, ms(2 * this.#o.leaseTtlMs), this.#o.configHash?.() ?? null, ms(Math.min(FRESH_POLLS * this.#o.pollMs, 2 * this.#o.leaseTtlMs))],
    );
    const row = CountRow.parse(rows[0]);
    this.#peerConfigs = row.peers;
    const units = this.#o.units.length;
    return { share: Math.ceil(units / Math.max(1, row.live)), keep: Math.ceil(units / Math.max(1, row.fresh)) };
  }

  async #listen(): Promise<void> {
    if (!this.#o.listenUrl || this.#listener || this.#stopped) return;
    const client = new pg.Client({ connectionString: this.#o.listenUrl });
    // A lost LISTEN connection is only a slower wake-up: the next placement round reconnects.
    client.on("error", () => {
      if (this.#listener === client) this.#listener = undefined;
    });
    client.on("notification", () => {
      if (!this.#stopped) this.place().catch((e) => this.#o.onError?.(e));
    });
    try {
      await client.connect();
      await client.query("LISTEN lease_free");
      this.#listener = client;
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  async #unlisten(): Promise<void> {
    const client = this.#listener;
    this.#listener = undefined;
    await client?.end().catch(() => undefined);
  }

  /** Runs `round` every `period` after the last one ended, until `#cancel(name)`. */
  #every(name: Round, period: number, round: () => Promise<void>): void {
    const next = () => {
      const timer = this.#o.clock.setTimeout(
        () =>
          void this.#tracked(round).finally(() => {
            if (this.#timers.get(name) === timer) next();
          }),
        period,
      );
      this.#timers.set(name, timer);
    };
    next();
  }

  /** One round, then the LISTEN connection if it was lost; how it went is `lastRound`, a failure goes to `onError`. Never rejects. */
  #tracked(round: () => Promise<void>): Promise<void> {
    return round()
      .then(() => this.#listen())
      .then(
        () => {
          this.#lastRound = { ok: true, at: this.#o.clock.now() };
        },
        (e: unknown) => {
          this.#lastRound = { ok: false, at: this.#o.clock.now() };
          this.#o.onError?.(e);
        },
      );
  }

  #cancel(name: Round): void {
    this.#timers.get(name)?.cancel();
    this.#timers.delete(name);
  }
}
