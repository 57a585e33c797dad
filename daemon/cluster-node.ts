/**
 * This daemon as one node of a bridge on several machines (`"state":
 * {"kind": "postgres"}`): which accounts it owns, and what taking or giving
 * one up does. Each enabled channel is one unit (`<type>:<id>`) with a lease
 * in the database (state/postgres/leases.ts):
 *
 *   acquired  ->  its state loaded, its adapter started, its stored turns resumed
 *   released  ->  its adapter stopped, its sends in progress recorded, its state
 *                 forgotten here; then the lease row is freed (graceful: SIGTERM,
 *                 rebalance) and another node takes it within about a second
 *   lost      ->  the same at once, without waiting (the lease expired or was
 *                 taken over: this node must not touch the platform any more)
 *
 * Taking and giving up one account run one after the other (a chain per
 * unit); different accounts run side by side.
 */
import type { Logger } from "pino";
import type { ChannelConfig, DaemonConfig } from "./config/schema.js";
import { errorSummary } from "./core/relay-types.js";
import type { Metrics } from "./ops/metrics.js";
import { createClusterStore, type ClusterStore } from "./state/cluster-store.js";
import { accountKeyOf } from "./vocabulary/keys.js";
import type { Clock } from "../shared/clock.js";
import type { JournalEntry } from "./vocabulary/records.js";
import { openPostgresState, type HeldLease, type PostgresState, type PostgresStateInput } from "./state/postgres/index.js";
import { monotonicClock } from "./state/postgres/monotonic-clock.js";

export interface ClusterNodeDeps {
  config: DaemonConfig;
  /** The `state` section, when it is PostgreSQL. */
  state: PostgresStateInput;
  logger: Logger;
  metrics: Metrics;
  /** Timers of the daemon (the give-up limit); lease deadlines and ages use a monotonic clock of their own. */
  clock: Clock;
  /** The account is this node's: start its adapter and resume its stored turns. */
  take(channel: ChannelConfig, entries: readonly JournalEntry[], lease: HeldLease): Promise<void>;
  /** The account is no longer (or soon no longer) this node's: stop its adapter; when `graceful`, resolve once its sends in progress are recorded. */
  giveUp(channel: ChannelConfig, graceful: boolean): Promise<void>;
  /** Its state is gone from this node: forget its adapter (in this order, a turn of it finds neither, and drops nothing). */
  forget(channel: ChannelConfig): void;
  /** This node's config hash now (it changes with a reload). */
  configHash?: () => string;
}

/** What `/healthz` and `agent-bridge check` show of one owned account. */
export interface OwnedAccount {
  unit: string;
  epoch: number;
  /** How long this node has owned it. */
  ageMs: number;
  /** Time left before this node stops touching the platform unless the lease is renewed. */
  deadlineInMs: number;
}

export interface ClusterNode {
  readonly nodeId: string;
  readonly store: ClusterStore;
  readonly state: PostgresState;
  /** Begins owning accounts (the relay must be ready for `take`). */
  start(): Promise<void>;
  owned(): OwnedAccount[];
  /** Whether this node's last lease round reached the database. */
  databaseReachable(): boolean;
  /** The config hashes the other live nodes reported at the last heartbeat, each once. */
  peerConfigHashes(): readonly string[];
  /** The other live nodes that reported a config hash at the last heartbeat, with it (the console names those that differ). */
  peerConfigs(): readonly { node: string; hash: string }[];
  /** How long a stopping node lets turns in flight finish before it hands over. */
  readonly handoverGraceMs: number;
  /** Hands an account this node owns to another node (the operator's console); false when it does not own it. */
  handOver(unit: string): Promise<boolean>;
}

/**
 * A graceful give-up that takes longer than this is cut short. The lease is renewed meanwhile, so
 * nothing else would end a wind-down that hangs (a gateway that never closes): it would hold the
 * account, and a stop, for ever. Cut short, the lease is released and its signal stops the
 * account's sends; one in flight and not yet recorded is sent again by the next owner.
 */
const GIVE_UP_LIMIT_MS = 5_000;

export async function openClusterNode(deps: ClusterNodeDeps): Promise<ClusterNode> {
  const { config, logger, metrics, clock } = deps;
  const channels = new Map<string, ChannelConfig>(config.channels.filter((c) => c.enabled).map((c) => [accountKeyOf(c.type, c.id), c]));
  /** Per unit: the last take or give-up, so they run in order. */
  const chains = new Map<string, Promise<void>>();
  const since = new Map<string, { epoch: number; at: number; lease: HeldLease }>();

  function chain(unit: string, step: () => Promise<void>): Promise<void> {
    const run = (chains.get(unit) ?? Promise.resolve()).then(step, step);
    chains.set(
      unit,
      run.catch(() => undefined),
    );
    return run;
  }

  async function take(lease: HeldLease): Promise<void> {
    const channel = channels.get(lease.unit);
    if (!channel || !lease.valid()) return;
    let entries: JournalEntry[];
    try {
      entries = await store.adopt(lease);
    } catch (error) {
      logger.error({ unit: lease.unit, err: errorSummary(error) }, "could not load the account's state: handing it back");
      void state.leases.release(lease.unit).catch(() => undefined);
      return;
    }
    if (!lease.valid()) return;
    since.set(lease.unit, { epoch: lease.epoch, at: monotonicClock.now(), lease });
    metrics.leaseOwned.set({ unit: lease.unit }, 1);
    metrics.leaseEpoch.set({ unit: lease.unit }, lease.epoch);
    metrics.leaseAcquisitionsTotal.inc({ unit: lease.unit });
    logger.info({ unit: lease.unit, epoch: lease.epoch, resumed: entries.length }, "took the account");
    // The account's sends stop with the signal itself (the relay's adopt joins it to the account's
    // halt); this step, queued behind the take, stops the adapter and forgets the state.
    lease.signal.addEventListener("abort", () => background(chain(lease.unit, () => end(lease, false))), { once: true });
    try {
      await deps.take(channel, entries, lease);
    } catch (error) {
      // Kept: another node would fail the same way (a missing platform library, say); the log says why.
      logger.error({ unit: lease.unit, err: errorSummary(error) }, "could not start the account's adapter");
    }
  }

  /** A step started by a lease event, not awaited by anyone: its failure is logged, never unhandled. */
  function background(step: Promise<void>): void {
    step.catch((error: unknown) => logger.error({ err: errorSummary(error) }, "an account's hand-over step failed"));
  }

  /** Gives the account up: graceful before a release (the lease still valid), at once when it is lost. */
  async function end(lease: HeldLease, graceful: boolean): Promise<void> {
    const owned = since.get(lease.unit);
    if (owned?.lease !== lease) return; // already given up, or never taken
    since.delete(lease.unit);
    const channel = channels.get(lease.unit);
    if (channel) {
      const givingUp = deps.giveUp(channel, graceful);
      await (graceful ? withinLimit(givingUp) : givingUp.catch(() => undefined));
    }
    store.drop(lease.unit);
    if (channel) deps.forget(channel);
    metrics.leaseOwned.set({ unit: lease.unit }, 0);
    metrics.leaseAgeSeconds.set({ unit: lease.unit }, 0);
    metrics.leaseEndsTotal.inc({ unit: lease.unit, reason: graceful ? "released" : "lost" });
    const why = lease.signal.aborted ? String((lease.signal.reason as Error | undefined)?.message ?? "") : "handed over";
    logger[graceful ? "info" : "warn"]({ unit: lease.unit, epoch: lease.epoch, why }, graceful ? "handed the account over" : "lost the account");
  }

  function withinLimit(work: Promise<void>): Promise<void> {
    let timer: { cancel(): void } | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = clock.setTimeout(() => {
        logger.warn({ limitMs: GIVE_UP_LIMIT_MS }, "an account took too long to wind down: handing it over anyway");
        resolve();
      }, GIVE_UP_LIMIT_MS);
    });
    return Promise.race([work.catch(() => undefined), limit]).finally(() => timer?.cancel());
  }

  const state: PostgresState = await openPostgresState(deps.state, {
    units: [...channels.keys()],
    onAcquired: (lease) => background(chain(lease.unit, () => take(lease))),
    beforeRelease: (lease) => chain(lease.unit, () => end(lease, true)),
    onError: (error) => logger.warn({ err: errorSummary(error) }, "lease round failed (the database may be unreachable); trying again"),
    ...(deps.configHash ? { configHash: deps.configHash } : {}),
  });
  const store = createClusterStore({
    state,
    accounts: [...channels.values()].map((c) => ({ platform: c.type, accountId: c.id })),
    onWriteFailed(unit, error) {
      // This node's view of the account may now be behind the database's: give it up, and
      // whoever takes it next (this node too) starts from what the database holds.
      logger.error({ unit, err: errorSummary(error) }, "a state write failed: giving the account up to reload it");
      void state.leases.release(unit).catch(() => undefined);
    },
  });

  function owned(): OwnedAccount[] {
    const now = monotonicClock.now();
    return [...since.entries()].map(([unit, s]) => ({ unit, epoch: s.epoch, ageMs: now - s.at, deadlineInMs: Math.round(s.lease.deadline() - now) }));
  }
  metrics.leaseAges = () => owned().map((o) => ({ unit: o.unit, seconds: o.ageMs / 1000 }));

  return {
    nodeId: state.leases.nodeId,
    store,
    state,
    handoverGraceMs: state.options.handoverGraceMs,
    start: () => state.leases.start(),
    owned,
    databaseReachable: () => state.leases.lastRound?.ok !== false,
    peerConfigHashes: () => state.leases.peerConfigHashes,
    peerConfigs: () => state.leases.peerConfigs,
    // Left to the others for a lease's length: long enough for any live node to take it.
    handOver: (unit) => state.leases.handOver(unit, state.options.leaseTtlMs),
  };
}
