/**
 * The daemon, wired: config in, adapters at the edges, the durable store,
 * the scheduler and the relay in the middle, and the ops server beside.
 *
 *   const daemon = createDaemon({ config });
 *   await daemon.start();   // resumes the journal, starts adapters
 *   await daemon.stop();    // adapters off, in-flight turns finish (bounded), state saved
 *
 * Tests pass `adapters` (used instead of building them from config.channels),
 * and may pass `clock`, `random`, `logger` and `client`.
 */
import type { Readable, Writable } from "node:stream";
import { Agent } from "undici";
import type { Logger } from "pino";
import { systemClock, type Clock } from "../shared/clock.js";
import { createServiceClient, type ServiceClient } from "../shared/client/index.js";
import { cryptoRandom, type Random } from "../shared/random.js";
import { buildAdapter, buildAdapters, loadAdapterModules } from "./adapters/index.js";
import type { PlatformDeps, Receiver } from "./adapters/platform.js";
import { platforms } from "./adapters/registry.js";
import type { ClusterNode } from "./cluster-node.js";
import type { HeldLease } from "./state/postgres/leases.js";
import type { ChannelConfig, DaemonConfig } from "./config/schema.js";
import { configHash, keepRunning, planReload, type OfflineCheck, type ReloadPlan } from "./config/reload.js";
import { secretsOf } from "./config/secrets.js";
import type { AdapterStatusEvent, ChatAdapter, InboundSink } from "./vocabulary/adapter.js";
import { accountKeyOf, adapterKeyOf, adapterNamespaceOf, type AdapterKey } from "./vocabulary/keys.js";
import { createRelay, type Relay } from "./core/relay.js";
import { errorSummary, type RelayMetrics } from "./core/relay-types.js";
import type { Scheduler } from "./core/scheduler.js";
import { serveControlRequests, type ControlRequests, type ControlResponse } from "./ops/control-requests.js";
import { startOpsServer, type HealthReport, type OpsServer } from "./ops/http.js";
import { ActivityFeed } from "./ops/console/activity.js";
import { observedStore } from "./ops/console/observed-store.js";
import { createConsole } from "./ops/console/server.js";
import { answerPairingRequest } from "./ops/pairing-requests.js";
import { createLogger } from "./ops/logger.js";
import { createMetrics, type Metrics } from "./ops/metrics.js";
import { openStore } from "./state/store.js";
import type { JournalEntry } from "./vocabulary/records.js";
import type { Store } from "./vocabulary/store.js";
import { registerTestHandle } from "./test-handle.js";
import { isModuleNotFound } from "../shared/util/module-not-found.js";

export interface DaemonOptions {
  config: DaemonConfig;
  /** Used instead of building adapters from `config.channels` (their access rules still come from there). */
  adapters?: ChatAdapter[];
  /** Tests: builds a channel's adapter from the deps the daemon gives it (a fake socket, say); `undefined` leaves it to its platform. */
  createAdapter?(channel: ChannelConfig, deps: PlatformDeps): Promise<ChatAdapter> | undefined;
  clock?: Clock;
  random?: Random;
  logger?: Logger;
  client?: ServiceClient;
  metrics?: Metrics;
  /** The terminal channel's streams (default stdin/stdout). */
  stdin?: Readable;
  stdout?: Writable;
  /** How long `stop()` lets in-flight turns finish (default 10 s). */
  shutdownGraceMs?: number;
  /** Journal size that triggers a snapshot (default 4 MiB). */
  compactBytes?: number;
  /** Adapter connection news, after it is logged. */
  onAdapterStatus?(adapter: ChatAdapter, event: AdapterStatusEvent): void;
  /** Reads and checks the config file again (`reload()`); without it the daemon cannot reload. */
  reloadFrom?(): Promise<OfflineCheck>;
}

/** What the last reload came to (in /healthz as `config.lastReload`). */
export type ReloadOutcome =
  | { ok: true; at: number; hash: string; changed: boolean; restartNeeded: string[]; restarted: string[]; added: string[]; removed: string[] }
  | { ok: false; at: number; problems: string[] };

export interface Daemon {
  start(): Promise<void>;
  /** Graceful: adapters stop, in-flight turns get `graceMs`, the rest stays journaled for next time. */
  stop(options?: { graceMs?: number }): Promise<void>;
  /** Leaves at once (a second Ctrl+C): nothing more is written or sent, the lock is freed; what is journaled is answered at the next start. */
  stopNow(): Promise<void>;
  /** Resolves once no accepted message is waiting for its reply. */
  whenIdle(): Promise<void>;
  health(): HealthReport;
  /**
   * Reads the config again (SIGHUP, `agent-bridge reload`, the file watch): a file with problems is
   * refused and the running config stays; a good one applies from the next message, and a channel
   * whose connection settings changed restarts alone.
   */
  reload(): Promise<ReloadOutcome>;
  readonly adapters: readonly ChatAdapter[];
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Set once started, when the ops server is on. */
  readonly opsUrl: string | undefined;
}

/** A reload's outcome as `agent-bridge reload` prints it. */
export function describeReload(outcome: ReloadOutcome): ControlResponse {
  if (!outcome.ok) return { ok: false, error: `Config refused; the running one stays:\n${outcome.problems.map((p) => `  ${p}`).join("\n")}` };
  const lines = [outcome.changed ? `Config reloaded (hash ${outcome.hash}): it applies from the next message.` : `Config unchanged (hash ${outcome.hash}).`];
  if (outcome.restarted.length) lines.push(`Channels restarted: ${outcome.restarted.join(", ")}.`);
  if (outcome.added.length) lines.push(`Channels started: ${outcome.added.join(", ")}.`);
  if (outcome.removed.length) lines.push(`Channels stopped: ${outcome.removed.join(", ")}.`);
  if (outcome.restartNeeded.length) lines.push(`These change only at the next restart: ${outcome.restartNeeded.join(", ")}.`);
  return { ok: true, text: lines.join("\n") };
}

/** Where a daemon is in its life; it only moves forward. */
export type DaemonPhase = "new" | "starting" | "running" | "stopping" | "stopped";

export function createDaemon(options: DaemonOptions): Daemon {
  return new BridgeDaemon(options);
}

/** The `Daemon`: everything its start, its accounts' comings and goings and its stop share. */
export class BridgeDaemon implements Daemon {
  /** As given: the test seams (`adapters`, `createAdapter`, streams) are read from here. */
  readonly #options: DaemonOptions;
  /**
   * The config it runs: the one object every part reads at message time. A reload replaces its
   * top-level fields in place (keeping the restart-only values: `RELOAD_CLASSES`, config/reload.ts).
   */
  readonly #config: DaemonConfig;
  /** The digest of the config running now (/healthz; several nodes compare theirs). */
  #configHash: string;
  /** The last reload's outcome, if any. */
  #lastReload: ReloadOutcome | undefined;
  /** Reloads run one at a time, in the order asked. */
  #reloading: Promise<unknown> = Promise.resolve();
  /** Given, or the system's: every timer and timestamp of the daemon. */
  readonly #clock: Clock;
  /** Given, or crypto: entry ids, jitter. */
  readonly #random: Random;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The relay's metrics, mapped onto `metrics`. */
  readonly #relayMetrics: RelayMetrics;
  /** Where the daemon is: new -> starting -> running -> stopping -> stopped (a failed start goes to stopped). */
  #phase: DaemonPhase = "new";
  /** Set once the start opened it; closed (or abandoned) at the end. */
  #store: Store | undefined;
  /** The relay's, set with it. */
  #scheduler: Scheduler<string> | undefined;
  /** Set once the start built it, after the store. */
  #relay: Relay | undefined;
  /** What the operator's console shows of the traffic (fed by the store the relay writes through). */
  readonly #feed: ActivityFeed;
  /** The service client, set at the start (the console asks it whether the service answers). */
  #client: ServiceClient | undefined;
  /** Set when the ops server listens (`config.ops.port` not null). */
  #ops: OpsServer | undefined;
  /** `agent-bridge pairing ...` while the daemon runs. */
  #control: ControlRequests | undefined;
  /** The service client's connection pool, when the daemon made the client (none when one was given). */
  #dispatcher: Agent | undefined;
  /** The adapters this node runs now: the given or configured ones, or (several machines) those of the accounts it holds. */
  #adapters: ChatAdapter[];
  /** Each adapter's last reported state (for /healthz); an adapter absent here is starting. */
  readonly #adapterStates = new Map<ChatAdapter, AdapterStatusEvent["state"]>();
  /** Per adapter, the connections it re-opened by reason (/healthz shows them once there are any). */
  readonly #adapterReconnects = new Map<ChatAdapter, Record<string, number>>();
  /** What a phone scans to link each adapter that is linking now (WhatsApp's QR payload); dropped at its next other state. Never logged. */
  readonly #linkCodes = new Map<ChatAdapter, string>();
  /** With `"state": {"kind": "postgres"}`: this node's part in the bridge (which accounts it owns). */
  #cluster: ClusterNode | undefined;
  /** Several machines: the receivers this node runs whoever owns the accounts; closed first at the stop. */
  #receivers: Receiver[] = [];
  /** Each adapter is stopped once, whoever asks first (teardown, a handover); a re-taken account's adapter is removed first. */
  readonly #stopping = new WeakMap<ChatAdapter, Promise<void>>();
  /** The adapter of each platform account, as the relay looks them up; the same adapters as `#adapters`. */
  readonly #adapterIndex = new Map<AdapterKey, ChatAdapter>();
  /** The configured channels by id. */
  readonly #channelIndex: Map<string, ChannelConfig>;

  constructor(options: DaemonOptions) {
    const { config } = options;
    this.#options = options;
    this.#config = config;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? cryptoRandom;
    this.logger = options.logger ?? createLogger({ level: config.logLevel, secrets: secretsOf(config) });
    const metrics = options.metrics ?? createMetrics();
    this.metrics = metrics;
    this.#relayMetrics = {
      inbound: (platform, outcome) => metrics.countInbound(platform, outcome),
      turn: (instance, outcome, seconds) => metrics.countTurn(instance, outcome, seconds),
      retry: (instance, reason) => metrics.countRetry(instance, reason),
      error: (route, kind) => metrics.errorsTotal.inc({ route, kind }),
      transcription: (platform, outcome) => metrics.countTranscription(platform, outcome),
      scheduled: (schedule, outcome) => metrics.countScheduled(schedule, outcome),
      question: (event) => metrics.countQuestion(event),
    };
    this.#adapters = options.adapters ? [...options.adapters] : [];
    this.#feed = new ActivityFeed(this.#clock);
    this.#channelIndex = new Map(config.channels.map((c) => [c.id, c]));
    this.#configHash = configHash(config);
    metrics.configLastReloadOk.set(1);
    const self = this;
    registerTestHandle(this, {
      crash: () => self.stopNow(),
      get store() {
        return self.#store;
      },
      get scheduler() {
        return self.#scheduler;
      },
      get schedules() {
        return self.#relay?.schedules;
      },
    });
  }

  get adapters(): readonly ChatAdapter[] {
    return this.#adapters;
  }

  get opsUrl(): string | undefined {
    return this.#ops?.url;
  }

  async start(): Promise<void> {
    if (this.#phase !== "new") throw new Error(`daemon already ${this.#phase}`);
    this.#phase = "starting";
    try {
      await this.#startSteps();
      this.#phase = "running";
    } catch (error) {
      this.#phase = "stopped";
      await this.#teardown(0).catch(() => undefined);
      throw error;
    }
  }

  async stop(opts?: { graceMs?: number }): Promise<void> {
    if (this.#phase === "new") {
      this.#phase = "stopped";
      return;
    }
    if (this.#phase === "stopping" || this.#phase === "stopped") return;
    this.#phase = "stopping";
    await this.#teardown(opts?.graceMs ?? this.#options.shutdownGraceMs ?? 10_000);
    this.#phase = "stopped";
    this.logger.info("daemon stopped");
  }

  async stopNow(): Promise<void> {
    this.#phase = "stopped";
    this.#relay?.beginStop();
    this.#scheduler?.stop();
    void this.#relay?.haltDelivery();
    this.#control?.close();
    await this.#closeReceivers();
    await this.#store?.abandon();
    await Promise.allSettled(this.#adapters.map((a) => a.stop()));
    await this.#ops?.close();
    await this.#dispatcher?.destroy().catch(() => undefined);
  }

  whenIdle(): Promise<void> {
    const s = this.#store;
    if (!s || s.pending().length === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const off = s.onDrained(() => {
        off();
        resolve();
      });
    });
  }

  health(): HealthReport {
    const adapters = this.#adapters;
    const states = this.#adapterStates;
    const cluster = this.#cluster;
    const adaptersView = Object.fromEntries(adapters.map((a) => [accountKeyOf(a.platform, a.accountId), states.get(a) ?? "starting"]));
    const anyUp = adapters.length === 0 || adapters.some((a) => states.get(a) === "connected" || states.get(a) === "pairing");
    // Several machines: a node that cannot reach the database can neither own nor take an account.
    const database = cluster ? (cluster.databaseReachable() ? "reachable" : "unreachable") : undefined;
    return {
      healthy: this.#phase === "running" && anyUp && database !== "unreachable",
      state: this.#phase,
      ...(cluster ? { node: cluster.nodeId, database, owns: cluster.owned() } : {}),
      adapters: adaptersView,
      ...(this.#adapterReconnects.size > 0
        ? {
            reconnects: Object.fromEntries(
              adapters.flatMap((a) => {
                const counts = this.#adapterReconnects.get(a);
                return counts ? [[accountKeyOf(a.platform, a.accountId), counts]] : [];
              }),
            ),
          }
        : {}),
      pending: this.#store?.pending().length ?? 0,
      queued: this.#scheduler?.depth().totalWaiting ?? 0,
      stoppedRoutes: this.#relay ? [...this.#relay.stoppedRoutes.keys()] : [],
      config: {
        hash: this.#configHash,
        ...(this.#lastReload ? { lastReload: this.#lastReload } : {}),
        // Several machines: the other live nodes' hashes that differ from this one's (a reload that reached only some nodes).
        ...(cluster ? { otherNodesDiffer: cluster.peerConfigHashes().filter((h) => h !== this.#configHash) } : {}),
      },
    };
  }

  reload(): Promise<ReloadOutcome> {
    const next = this.#reloading.then(() => this.#reloadSteps());
    this.#reloading = next.catch(() => undefined);
    return next;
  }

  /** Read and check the file; refuse it with its problems, or apply it. */
  async #reloadSteps(): Promise<ReloadOutcome> {
    const at = this.#clock.now();
    const read = this.#options.reloadFrom;
    const checked: OfflineCheck = read ? await read() : { ok: false, problems: ["this daemon was not started from a config file: nothing to reload"] };
    if (this.#phase !== "running") return this.#settleReload({ ok: false, at, problems: [`the daemon is ${this.#phase}: not reloaded`] });
    if (!checked.ok) {
      this.logger.error({ problems: checked.problems }, "config reload refused: the file has problems; the running config stays");
      return this.#settleReload({ ok: false, at, problems: checked.problems });
    }
    const plan = planReload(this.#config, checked.config);
    this.#applyConfig(checked.config);
    // From here the new config is in place: whatever fails next, what reads it is refreshed, the
    // hash follows it, and the outcome is settled (counted and shown), not left half-applied.
    let channels: { restarted: string[]; added: string[]; removed: string[] } | undefined;
    const failures: string[] = [];
    try {
      channels = await this.#restartChannels(plan);
    } catch (error) {
      failures.push(`restarting the changed channels failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    try {
      // After the channels: a schedule of a channel new in the file starts with it.
      await this.#relay?.reloaded();
    } catch (error) {
      failures.push(`refreshing schedules and routes failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (failures.length || !channels) {
      this.#configHash = checked.hash;
      this.logger.error({ problems: failures }, "config reload applied in part: the new config is in place, but not everything it changes was restarted");
      return this.#settleReload({ ok: false, at, problems: failures });
    }
    const outcome: ReloadOutcome = {
      ok: true,
      at,
      hash: checked.hash,
      changed: checked.hash !== this.#configHash,
      restartNeeded: plan.restartNeeded,
      ...channels,
    };
    this.#configHash = checked.hash;
    if (plan.restartNeeded.length)
      this.logger.warn({ parts: plan.restartNeeded }, "config reloaded, but these parts change only at the next restart (the running ones stay)");
    this.logger.info({ hash: checked.hash, ...channels }, "config reloaded: it applies from the next message");
    return this.#settleReload(outcome);
  }

  #settleReload(outcome: ReloadOutcome): ReloadOutcome {
    this.#lastReload = outcome;
    this.#feed.emit({ type: "config", at: outcome.at });
    this.metrics.configReloadsTotal.inc({ result: outcome.ok ? "applied" : "refused" });
    this.metrics.configLastReloadOk.set(outcome.ok ? 1 : 0);
    return outcome;
  }

  /** The new config's fields into the running config object (those opened at the start keep their values), and the channel lookup anew. */
  #applyConfig(next: DaemonConfig): void {
    const config = this.#config;
    Object.assign(config, keepRunning(config, next));
    this.#channelIndex.clear();
    for (const c of config.channels) this.#channelIndex.set(c.id, c);
  }

  /**
   * The channels whose adapter must change: each restarts alone, the others keep their
   * connections. Given adapters (tests) and several machines (adapters come with leases) are left as they are.
   */
  async #restartChannels(plan: ReloadPlan): Promise<{ restarted: string[]; added: string[]; removed: string[] }> {
    const done = { restarted: [] as string[], added: [] as string[], removed: [] as string[] };
    if (this.#cluster || this.#options.adapters) return done;
    for (const id of [...plan.restart, ...plan.remove]) {
      const old = this.#adapters.find((a) => a.accountId === id);
      if (!old) continue;
      await this.#stopAdapter(old);
      this.#adapterIndex.delete(adapterKeyOf(old.platform, old.accountId));
      this.#adapters = this.#adapters.filter((a) => a !== old);
      this.#adapterStates.delete(old);
      if (plan.remove.includes(id)) done.removed.push(id);
    }
    for (const id of [...plan.restart, ...plan.add]) {
      const channel = this.#channelIndex.get(id);
      if (!channel) continue;
      const s = this.#store!;
      const adapter = await buildAdapter(this.#config, channel, { ...this.#adapterDeps(), stateFor: (c) => s.kv(adapterNamespaceOf(c.type, c.id)) });
      this.#adapterIndex.set(adapterKeyOf(adapter.platform, adapter.accountId), adapter);
      this.#adapters.push(adapter);
      await this.#startAdapter(adapter);
      (plan.add.includes(id) ? done.added : done.restarted).push(id);
    }
    return done;
  }

  /** The start, in order: the service client, the state, the adapters, the relay (held), the control and ops servers, then the adapters run. */
  async #startSteps(): Promise<void> {
    const client = this.#options.client ?? this.#serviceClient();
    this.#client = client;
    const store = await this.#openState();
    const pendingAtStart = store.pending().length;
    await this.#buildConfiguredAdapters(store);
    const relay = this.#startRelay(store, client);
    await this.#serveControl(relay);
    await this.#serveOps();
    if (this.#cluster) {
      const cluster = this.#cluster;
      await this.#loadPlatformLibraries();
      await this.#startReceivers(cluster);
      // The accounts come with their leases: taken now and whenever another node lets one go.
      await cluster.start();
      relay.release();
      this.logger.info(
        { node: cluster.nodeId, owns: cluster.owned().map((o) => o.unit), routes: this.#config.routes.length },
        "daemon started (one node of several)",
      );
      return;
    }
    await this.#startAdapters();
    relay.release();
    // One node: every channel's schedules run here (several machines: each with its account's lease, relay.adopt).
    relay.startSchedules();
    this.logger.info(
      { adapters: this.#adapters.map((a) => accountKeyOf(a.platform, a.accountId)), resumed: pendingAtStart, routes: this.#config.routes.length },
      "daemon started",
    );
  }

  /** Several machines: the receivers every node runs (Slack's Events API endpoint), keeping events for the accounts' owners. */
  async #startReceivers(cluster: ClusterNode): Promise<void> {
    for (const channel of this.#config.channels.filter((c) => c.enabled)) {
      const unit = accountKeyOf(channel.type, channel.id);
      for (const platform of platforms) {
        const receiver = await platform.receive(channel, {
          logger: this.logger.child({ channel: channel.id, type: channel.type }),
          clock: this.#clock,
          keep: (key, body) => cluster.state.inbox.put(unit, key, body),
          fileStores: cluster.store.fileStores,
        });
        if (receiver) this.#receivers.push(receiver);
      }
    }
  }

  async #closeReceivers(): Promise<void> {
    await Promise.allSettled(this.#receivers.splice(0).map((r) => r.close()));
  }

  #serviceClient(): ServiceClient {
    const { service } = this.#config;
    this.#dispatcher = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 256 });
    return createServiceClient({ baseUrl: service.baseUrl, apiKey: service.apiKey, dispatcher: this.#dispatcher, timeoutMs: service.requestTimeoutMs });
  }

  /** The file journal, or (several machines) this node's part of the bridge and its store. */
  async #openState(): Promise<Store> {
    const config = this.#config;
    if (config.state.kind !== "postgres") {
      const compact = this.#options.compactBytes ? { compactBytes: this.#options.compactBytes } : {};
      this.#store = await openStore({ dataDir: config.dataDir, clock: this.#clock, random: this.#random, ...compact });
      return this.#store;
    }
    // Loaded only here: `pg` is an optional dependency, needed by this mode alone.
    const { openClusterNode } = await import("./cluster-node.js").catch((error: unknown) => {
      throw isModuleNotFound(error, "pg") ? new Error('"state": {"kind": "postgres"} needs the pg package beside agent-bridge: npm install pg') : error;
    });
    this.#cluster = await openClusterNode({
      config,
      state: config.state,
      logger: this.logger.child({ component: "cluster" }),
      metrics: this.metrics,
      clock: this.#clock,
      take: (channel, entries, lease) => this.#takeAccount(channel, entries, lease),
      giveUp: (channel, graceful) => this.#giveUpAccount(channel, graceful),
      forget: (channel) => this.#forgetAccount(channel),
      configHash: () => this.#configHash,
    });
    this.#store = this.#cluster.store;
    return this.#store;
  }

  /**
   * Several machines: the platform libraries load before this node may own an account. Importing
   * discord.js holds the event loop for about 0.5 s of CPU, several seconds on a busy machine:
   * done while holding a lease, no renewal could run and the lease was lost right after the take.
   * A library that fails to load here is reported by the take of its account, as before.
   */
  async #loadPlatformLibraries(): Promise<void> {
    await loadAdapterModules(this.#config.channels).catch((error: unknown) =>
      this.logger.debug({ err: errorSummary(error) }, "a platform library could not be loaded ahead of its account"),
    );
  }

  /** One machine: the adapters of the configured channels (unless given); several: they come with the accounts' leases. */
  async #buildConfiguredAdapters(store: Store): Promise<void> {
    if (!this.#options.adapters && !this.#cluster) {
      this.#adapters = await buildAdapters(this.#config, {
        ...this.#adapterDeps(),
        stateFor: (channel) => store.kv(adapterNamespaceOf(channel.type, channel.id)),
      });
    }
    for (const a of this.#adapters) this.#adapterIndex.set(adapterKeyOf(a.platform, a.accountId), a);
  }

  /** What building any adapter takes, but its state. */
  #adapterDeps() {
    const options = this.#options;
    return {
      logger: this.logger,
      clock: this.#clock,
      countSend: (channel: { type: string; id: string }, kind: string) =>
        this.metrics.adapterSendsTotal.inc({ platform: channel.type, account: channel.id, kind }),
      ...(options.createAdapter ? { create: options.createAdapter } : {}),
      ...(options.stdin ? { stdin: options.stdin } : {}),
      ...(options.stdout ? { stdout: options.stdout } : {}),
    };
  }

  /** The relay, its scheduler held until the adapters run: resumed turns go first, new messages queue behind them. */
  #startRelay(store: Store, client: ServiceClient): Relay {
    const relay = createRelay({
      config: this.#config,
      store: observedStore(store, this.#feed),
      client,
      clock: this.#clock,
      random: this.#random,
      logger: this.logger.child({ component: "relay" }),
      metrics: this.#relayMetrics,
      adapterFor: (platform, accountId) => this.#adapterIndex.get(adapterKeyOf(platform, accountId)),
      channelFor: (accountId) => this.#channelIndex.get(accountId),
      onDepth: (instance, depth) => {
        this.metrics.queueDepth.set({ instance }, depth);
        const d = this.#scheduler?.depth(instance);
        if (d) this.#feed.emit({ type: "queue", at: this.#clock.now(), instance, waiting: d.instanceWaiting, running: d.instanceRunning });
      },
    });
    this.#relay = relay;
    this.#scheduler = relay.scheduler;
    relay.resume();
    return relay;
  }

  /** `agent-bridge pairing ...` answered while the daemon runs (on several machines, for the channels this node holds). */
  async #serveControl(relay: Relay): Promise<void> {
    const config = this.#config;
    const pairing = relay.pairing;
    this.#control = await serveControlRequests({
      dataDir: config.dataDir,
      clock: this.#clock,
      logger: this.logger,
      handle: async (request) =>
        request.op === "config.reload"
          ? describeReload(await this.reload())
          : answerPairingRequest(pairing, config.channels, request, (channelId) => {
              const channel = this.#channelIndex.get(channelId);
              const cluster = this.#cluster;
              return !cluster || (!!channel && cluster.store.units().includes(accountKeyOf(channel.type, channel.id)));
            }),
    });
  }

  async #serveOps(): Promise<void> {
    const { ops } = this.#config;
    if (ops.port === null) return;
    const ui = ops.console ? this.#console(ops.token) : undefined;
    this.#ops = await startOpsServer({ host: ops.host, port: ops.port, metrics: this.metrics, health: () => this.health(), ...(ui ? { console: ui } : {}) });
    this.logger.info(
      { url: this.#ops.url },
      ui ? "ops server listening (/healthz, /metrics, the console at /ui/)" : "ops server listening (/healthz, /metrics)",
    );
  }

  /** The operator's console, reading this daemon's parts as they are when asked. */
  #console(token: string | undefined) {
    const config = this.#config;
    return createConsole({
      token,
      config,
      clock: this.#clock,
      logger: this.logger.child({ component: "console" }),
      metrics: this.metrics,
      feed: this.#feed,
      channels: () => this.#adapters.map((a) => ({ id: a.accountId, platform: a.platform, state: this.#adapterStates.get(a) ?? "starting" })),
      queues: () =>
        [...new Set(config.routes.map((r) => r.instance))].map((instance) => {
          const d = this.#scheduler?.depth(instance);
          return { instance, waiting: d?.instanceWaiting ?? 0, running: d?.instanceRunning ?? 0 };
        }),
      instanceStatus: async (instanceId) => (await this.#client!.getInstanceStatus({ instance_id: instanceId })).status,
      pairing: () => this.#relay?.pairing,
      store: () => this.#store,
      links: () =>
        this.#adapters
          .filter((a) => a.link)
          .map((a) => ({ channel: a.accountId, platform: a.platform, state: this.#adapterStates.get(a) ?? "starting", linkCode: this.#linkCodes.get(a) })),
      relink: (channel) => this.#relink(channel),
      configState: () => ({ hash: this.#configHash, lastReload: this.#lastReload, peers: this.#cluster?.peerConfigs() }),
      cluster: () => {
        const cluster = this.#cluster;
        return (
          cluster && { nodeId: cluster.nodeId, status: () => cluster.state.status(), owned: () => cluster.owned(), handOver: (unit) => cluster.handOver(unit) }
        );
      },
    });
  }

  /** The console's re-link: the channel stops, forgets its link and starts again, showing a new code to scan. False when no such channel links. */
  async #relink(channelId: string): Promise<boolean> {
    const adapter = this.#adapters.find((a) => a.accountId === channelId && a.link);
    // A daemon on its way down starts nothing again.
    const link = adapter?.link;
    if (!adapter || !link || this.#phase !== "running") return false;
    await this.#stopAdapter(adapter);
    await link.forget();
    this.#stopping.delete(adapter);
    this.#adapterStates.set(adapter, "starting");
    await this.#startAdapter(adapter);
    return true;
  }

  /** Every adapter, in turn; the start fails only when there were some and none could start. */
  async #startAdapters(): Promise<void> {
    const adapters = this.#adapters;
    let startedCount = 0;
    for (const adapter of adapters) if (await this.#startAdapter(adapter)) startedCount++;
    if (adapters.length > 0 && startedCount === 0) throw new Error("no chat adapter could start (see the log)");
    if (adapters.length === 0) this.logger.warn("no chat channels configured: nothing will arrive");
  }

  /** Starts one adapter with the relay as its sink; false (logged) when it cannot start. */
  async #startAdapter(adapter: ChatAdapter): Promise<boolean> {
    const r = this.#relay!;
    const logger = this.logger;
    const sink: InboundSink = {
      accept: (message) => r.accept(adapter, message),
      admit: (question) => r.admit(adapter, question),
      status: (event) => {
        this.#adapterStates.set(adapter, event.state);
        if (event.state === "reconnecting") this.#countReconnect(adapter, event.reason ?? "other");
        if (event.linkCode !== undefined) this.#linkCodes.set(adapter, event.linkCode);
        else this.#linkCodes.delete(adapter);
        this.#feed.emit({ type: "channel", at: this.#clock.now(), channel: adapter.accountId, platform: adapter.platform, state: event.state });
        const level = event.state === "failed" || event.state === "logged_out" ? "error" : "info";
        logger[level]({ platform: adapter.platform, accountId: adapter.accountId, state: event.state, detail: event.detail }, "adapter status");
        this.#options.onAdapterStatus?.(adapter, event);
      },
    };
    try {
      await adapter.start(sink);
      return true;
    } catch (error) {
      this.#adapterStates.set(adapter, "failed");
      logger.error({ platform: adapter.platform, accountId: adapter.accountId, err: errorSummary(error) }, "adapter failed to start");
      return false;
    }
  }

  #stopAdapter(adapter: ChatAdapter): Promise<void> {
    const known = this.#stopping.get(adapter);
    if (known) return known;
    const stopped = adapter.stop().catch((error: unknown) => {
      this.logger.warn({ platform: adapter.platform, accountId: adapter.accountId, err: errorSummary(error) }, "adapter did not stop cleanly");
    });
    this.#stopping.set(adapter, stopped);
    return stopped;
  }

  /** Several machines: this node took an account's lease. */
  async #takeAccount(channel: ChannelConfig, entries: readonly JournalEntry[], lease: HeldLease): Promise<void> {
    const s = this.#store!;
    const adapter =
      this.#options.adapters?.find((a) => a.platform === channel.type && a.accountId === channel.id) ??
      (await buildAdapter(this.#config, channel, {
        ...this.#adapterDeps(),
        stateFor: (c) => s.kv(adapterNamespaceOf(c.type, c.id)),
        credentialsFor: (c) => this.#cluster!.store.credentials(accountKeyOf(c.type, c.id)),
        inboxFor: (c) => this.#cluster!.store.inbox(accountKeyOf(c.type, c.id)),
        fileStores: this.#cluster!.store.fileStores,
      }));
    // Lost while the adapter was built: it must not connect (another node may own the account
    // by now); the lease's end gives the account up, and this adapter never started.
    if (!lease.valid()) {
      this.logger.warn({ unit: accountKeyOf(channel.type, channel.id) }, "the account's lease ended before its adapter could start: not starting it");
      return;
    }
    this.#stopping.delete(adapter);
    this.#adapterIndex.set(adapterKeyOf(adapter.platform, adapter.accountId), adapter);
    if (!this.#adapters.includes(adapter)) this.#adapters.push(adapter);
    this.#relay!.adopt(adapter.platform, adapter.accountId, entries, lease);
    await this.#startAdapter(adapter);
  }

  /** Several machines: the account is being handed over (graceful) or was lost. Its adapter stays indexed until `#forgetAccount`. */
  async #giveUpAccount(channel: ChannelConfig, graceful: boolean): Promise<void> {
    const adapter = this.#adapterIndex.get(adapterKeyOf(channel.type, channel.id));
    // Lost: its sends stop now (the lease is gone). Handed over: the ones in progress are recorded first.
    const handedOver = this.#relay?.handOver(channel.type, channel.id) ?? Promise.resolve();
    if (adapter) await this.#stopAdapter(adapter);
    if (graceful) await handedOver;
  }

  /** After the account's state is gone from this node: its adapter goes (a turn of it finds neither). */
  #forgetAccount(channel: ChannelConfig): void {
    const key = adapterKeyOf(channel.type, channel.id);
    const adapter = this.#adapterIndex.get(key);
    this.#adapterIndex.delete(key);
    if (!adapter) return;
    this.#adapters = this.#adapters.filter((a) => a !== adapter);
    this.#adapterStates.delete(adapter);
  }

  async #teardown(requestedGraceMs: number): Promise<void> {
    // Several machines: in-flight turns get the handover grace, then the accounts go to other nodes.
    const graceMs = this.#cluster ? Math.min(requestedGraceMs, this.#cluster.handoverGraceMs) : requestedGraceMs;
    await this.#closeReceivers();
    // The adapters stop taking messages in first: one an adapter received meanwhile is still journaled
    // (Discord and WhatsApp never deliver it again); only then do new turns stop.
    await Promise.allSettled(this.#adapters.map((a) => this.#stopAdapter(a)));
    this.#relay?.beginStop();
    this.#scheduler?.stop();
    await this.#letTurnsFinish(graceMs);
    this.#control?.close();
    await this.#relay?.haltDelivery();
    const left = this.#store?.pending().length ?? 0;
    await this.#store?.close();
    await this.#ops?.close();
    await this.#dispatcher?.destroy().catch(() => undefined);
    if (left) this.logger.info({ pending: left }, "pending messages saved for the next start");
  }

  /** Waits up to `graceMs` for the turns and commands in flight; what is left stays journaled. */
  async #letTurnsFinish(graceMs: number): Promise<void> {
    const relay = this.#relay;
    const scheduler = this.#scheduler;
    if (!relay || !scheduler || graceMs <= 0) return;
    const timer: { pending?: { cancel(): void } } = {};
    const settled = Promise.all([scheduler.whenIdle(), relay.whenCommandsIdle()]).then(() => true);
    const timedOut = new Promise<boolean>((resolve) => {
      timer.pending = this.#clock.setTimeout(() => resolve(false), graceMs);
    });
    const done = await Promise.race([settled, timedOut]);
    timer.pending?.cancel();
    if (!done) this.logger.warn({ graceMs }, "turns still in flight at shutdown: they stay journaled and resume at the next start");
  }

  /** A connection the adapter re-opened, and why: /metrics counts it, /healthz shows the counts. */
  #countReconnect(adapter: ChatAdapter, reason: string): void {
    this.metrics.adapterReconnectsTotal.inc({ platform: adapter.platform, account: adapter.accountId, reason });
    const counts = this.#adapterReconnects.get(adapter) ?? {};
    counts[reason] = (counts[reason] ?? 0) + 1;
    this.#adapterReconnects.set(adapter, counts);
  }
}
