/**
 * The daemon, wired: config in, adapters at the edges, the durable store,
 * the scheduler and the relay in the middle, and the ops server beside.
 *
 *   const daemon = createDaemon({ config });
 *   await daemon.start();   // resumes the journal, starts adapters
 *   await daemon.stop();    // intake off, in-flight turns finish (bounded), state saved
 *
 * Tests pass `adapters` (used instead of building them from config.channels),
 * and may pass `clock`, `random`, `logger` and `client`.
 */
import type { ScheduleRunner } from "./schedules/runner.js";
import type { Readable, Writable } from "node:stream";
import { Agent } from "undici";
import type { Logger } from "pino";
import { systemClock, type Clock } from "../shared/clock.js";
import { createServiceClient, type ServiceClient } from "../shared/client/index.js";
import { cryptoRandom, type Random } from "../shared/random.js";
import { buildAdapter, buildAdapters } from "./adapters/index.js";
import type { PlatformDeps } from "./adapters/platform.js";
import type { ClusterNode } from "./cluster-node.js";
import type { ChannelConfig, DaemonConfig } from "./config/schema.js";
import { secretsOf } from "./config/secrets.js";
import type { AdapterStatusEvent, ChatAdapter, InboundSink } from "./core/adapter.js";
import { adapterKeyOf, type AdapterKey } from "./core/keys.js";
import { createRelay, type Relay } from "./core/relay.js";
import { errorSummary, type RelayMetrics } from "./core/relay-types.js";
import type { Scheduler } from "./core/scheduler.js";
import { serveControlRequests, type ControlRequests } from "./ops/control-requests.js";
import { startOpsServer, type HealthReport, type OpsServer } from "./ops/http.js";
import { answerPairingRequest } from "./ops/pairing-requests.js";
import { createLogger } from "./ops/logger.js";
import { createMetrics, type Metrics } from "./ops/metrics.js";
import { openStore, type JournalEntry, type Store } from "./state/store.js";

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
}

export interface Daemon {
  start(): Promise<void>;
  /** Graceful: adapters stop, in-flight turns get `graceMs`, the rest stays journaled for next time. */
  stop(options?: { graceMs?: number }): Promise<void>;
  /** What a crash leaves behind, for tests: nothing more is written or sent, the lock is freed. */
  crash(): Promise<void>;
  /** Resolves once no accepted message is waiting for its reply. */
  whenIdle(): Promise<void>;
  health(): HealthReport;
  readonly adapters: readonly ChatAdapter[];
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Set once started, when the ops server is on. */
  readonly opsUrl: string | undefined;
  /** Set once started. */
  readonly store: Store | undefined;
  readonly scheduler: Scheduler<string> | undefined;
  /** Set once started: the scheduled prompts and their timers. */
  readonly schedules: ScheduleRunner | undefined;
}

export function createDaemon(options: DaemonOptions): Daemon {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? cryptoRandom;
  const logger = options.logger ?? createLogger({ level: config.logLevel, secrets: secretsOf(config) });
  const metrics = options.metrics ?? createMetrics();
  const graceDefault = options.shutdownGraceMs ?? 10_000;

  let state: "new" | "starting" | "running" | "stopping" | "stopped" = "new";
  let store: Store | undefined;
  let scheduler: Scheduler<string> | undefined;
  let relay: Relay | undefined;
  let ops: OpsServer | undefined;
  /** `agent-bridge pairing ...` while the daemon runs. */
  let control: ControlRequests | undefined;
  let dispatcher: Agent | undefined;
  let adapters: ChatAdapter[] = options.adapters ? [...options.adapters] : [];
  const adapterStates = new Map<ChatAdapter, AdapterStatusEvent["state"]>();
  /** With `"state": {"kind": "postgres"}`: this node's part in the bridge (which accounts it owns). */
  let cluster: ClusterNode | undefined;
  /** Each adapter is stopped once, whoever asks first (teardown, a handover). */
  const stopping = new WeakMap<ChatAdapter, Promise<void>>();

  const adapterIndex = new Map<AdapterKey, ChatAdapter>();
  const channelIndex = new Map<string, ChannelConfig>(config.channels.map((c) => [c.id, c]));

  const relayMetrics: RelayMetrics = {
    inbound: (platform, outcome) => metrics.countInbound(platform, outcome),
    turn: (instance, outcome, seconds) => metrics.countTurn(instance, outcome, seconds),
    retry: (instance, reason) => metrics.countRetry(instance, reason),
    error: (route, kind) => metrics.errorsTotal.inc({ route, kind }),
    transcription: (platform, outcome) => metrics.countTranscription(platform, outcome),
    scheduled: (schedule, outcome) => metrics.countScheduled(schedule, outcome),
  };

  async function start(): Promise<void> {
    if (state !== "new") throw new Error(`daemon already ${state}`);
    state = "starting";
    try {
      await startInner();
      state = "running";
    } catch (error) {
      state = "stopped";
      await teardown(0).catch(() => undefined);
      throw error;
    }
  }

  async function startInner(): Promise<void> {
    let client = options.client;
    if (!client) {
      dispatcher = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 256 });
      client = createServiceClient({
        baseUrl: config.service.baseUrl,
        apiKey: config.service.apiKey,
        dispatcher,
        timeoutMs: config.service.requestTimeoutMs,
      });
    }
    if (config.state.kind === "postgres") {
      // Loaded only here: `pg` is an optional dependency, needed by this mode alone.
      const { openClusterNode } = await import("./cluster-node.js").catch((error: unknown) => {
        const missing = error instanceof Error && "code" in error && error.code === "ERR_MODULE_NOT_FOUND" && error.message.includes("'pg'");
        throw missing ? new Error('"state": {"kind": "postgres"} needs the pg package beside agent-bridge: npm install pg') : error;
      });
      cluster = await openClusterNode({
        config,
        state: config.state,
        logger: logger.child({ component: "cluster" }),
        metrics,
        clock,
        take: takeAccount,
        giveUp: giveUpAccount,
        forget: forgetAccount,
      });
      store = cluster.store;
    } else {
      store = await openStore({ dataDir: config.dataDir, clock, random, ...(options.compactBytes ? { compactBytes: options.compactBytes } : {}) });
    }
    const opened = store;
    const pendingAtStart = opened.pending().length;

    if (!options.adapters && !cluster) {
      adapters = await buildAdapters(config, {
        logger,
        clock,
        stateFor: (channel) => opened.kv(`adapter:${channel.type}:${channel.id}`),
        ...(options.createAdapter ? { create: options.createAdapter } : {}),
        ...(options.stdin ? { stdin: options.stdin } : {}),
        ...(options.stdout ? { stdout: options.stdout } : {}),
      });
    }
    for (const a of adapters) adapterIndex.set(adapterKeyOf(a.platform, a.accountId), a);

    // The relay's scheduler is held until the adapters run: resumed turns go first, new messages queue behind them.
    relay = createRelay({
      config,
      store: opened,
      client,
      clock,
      random,
      logger: logger.child({ component: "relay" }),
      metrics: relayMetrics,
      adapterFor: (platform, accountId) => adapterIndex.get(adapterKeyOf(platform, accountId)),
      channelFor: (accountId) => channelIndex.get(accountId),
      onDepth: (instance, depth) => metrics.queueDepth.set({ instance }, depth),
    });
    scheduler = relay.scheduler;
    relay.resume();
    const pairing = relay.pairing;
    control = await serveControlRequests({
      dataDir: config.dataDir,
      clock,
      logger,
      handle: (request) =>
        answerPairingRequest(pairing, config.channels, request, (channelId) => {
          const channel = channelIndex.get(channelId);
          return !cluster || (!!channel && cluster.store.units().includes(`${channel.type}:${channel.id}`));
        }),
    });

    if (config.ops.port !== null) {
      ops = await startOpsServer({ host: config.ops.host, port: config.ops.port, metrics, health });
      logger.info({ url: ops.url }, "ops server listening (/healthz, /metrics)");
    }

    const r = relay;
    if (cluster) {
      // The accounts come with their leases: taken now and whenever another node lets one go.
      await cluster.start();
      r.release();
      logger.info({ node: cluster.nodeId, owns: cluster.owned().map((o) => o.unit), routes: config.routes.length }, "daemon started (one node of several)");
      return;
    }
    let startedCount = 0;
    for (const adapter of adapters) if (await startAdapter(adapter)) startedCount++;
    if (adapters.length > 0 && startedCount === 0) throw new Error("no chat adapter could start (see the log)");
    if (adapters.length === 0) logger.warn("no chat channels configured: nothing will arrive");

    r.release();
    // One node: every channel's schedules run here (several machines: each with its account's lease, relay.adopt).
    r.startSchedules();
    logger.info({ adapters: adapters.map((a) => `${a.platform}:${a.accountId}`), resumed: pendingAtStart, routes: config.routes.length }, "daemon started");
  }

  /** Starts one adapter with the relay as its sink; false (logged) when it cannot start. */
  async function startAdapter(adapter: ChatAdapter): Promise<boolean> {
    const r = relay!;
    const sink: InboundSink = {
      accept: (message) => r.accept(adapter, message),
      admit: (question) => r.admit(adapter, question),
      status(event) {
        adapterStates.set(adapter, event.state);
        const level = event.state === "failed" || event.state === "logged_out" ? "error" : "info";
        logger[level]({ platform: adapter.platform, accountId: adapter.accountId, state: event.state, detail: event.detail }, "adapter status");
        options.onAdapterStatus?.(adapter, event);
      },
    };
    try {
      await adapter.start(sink);
      return true;
    } catch (error) {
      adapterStates.set(adapter, "failed");
      logger.error({ platform: adapter.platform, accountId: adapter.accountId, err: errorSummary(error) }, "adapter failed to start");
      return false;
    }
  }

  function stopAdapter(adapter: ChatAdapter): Promise<void> {
    let stopped = stopping.get(adapter);
    if (!stopped) {
      stopped = adapter.stop().catch((error: unknown) => {
        logger.warn({ platform: adapter.platform, accountId: adapter.accountId, err: errorSummary(error) }, "adapter did not stop cleanly");
      });
      stopping.set(adapter, stopped);
    }
    return stopped;
  }

  /** Several machines: this node took an account's lease. */
  async function takeAccount(channel: ChannelConfig, entries: readonly JournalEntry[]): Promise<void> {
    const s = store!;
    const adapter =
      options.adapters?.find((a) => a.platform === channel.type && a.accountId === channel.id) ??
      (await buildAdapter(config, channel, {
        logger,
        clock,
        stateFor: (c) => s.kv(`adapter:${c.type}:${c.id}`),
        credentialsFor: (c) => cluster!.store.credentials(`${c.type}:${c.id}`),
        ...(options.createAdapter ? { create: options.createAdapter } : {}),
        ...(options.stdin ? { stdin: options.stdin } : {}),
        ...(options.stdout ? { stdout: options.stdout } : {}),
      }));
    stopping.delete(adapter);
    adapterIndex.set(adapterKeyOf(adapter.platform, adapter.accountId), adapter);
    if (!adapters.includes(adapter)) adapters.push(adapter);
    relay!.adopt(adapter.platform, adapter.accountId, entries);
    await startAdapter(adapter);
  }

  /** Several machines: the account is being handed over (graceful) or was lost. Its adapter stays indexed until `forgetAccount`. */
  async function giveUpAccount(channel: ChannelConfig, graceful: boolean): Promise<void> {
    const adapter = adapterIndex.get(adapterKeyOf(channel.type, channel.id));
    // Lost: its sends stop now (the lease is gone). Handed over: the ones in progress are recorded first.
    const handedOver = relay?.handOver(channel.type, channel.id) ?? Promise.resolve();
    if (adapter) await stopAdapter(adapter);
    if (graceful) await handedOver;
  }

  /** After the account's state is gone from this node: its adapter goes (a turn of it finds neither). */
  function forgetAccount(channel: ChannelConfig): void {
    const key = adapterKeyOf(channel.type, channel.id);
    const adapter = adapterIndex.get(key);
    adapterIndex.delete(key);
    if (!adapter) return;
    adapters = adapters.filter((a) => a !== adapter);
    adapterStates.delete(adapter);
  }

  async function teardown(requestedGraceMs: number): Promise<void> {
    // Several machines: in-flight turns get the handover grace, then the accounts go to other nodes.
    const graceMs = cluster ? Math.min(requestedGraceMs, cluster.handoverGraceMs) : requestedGraceMs;
    // Intake stops first: a message an adapter received meanwhile is still journaled
    // (Discord and WhatsApp never deliver it again); only then do new turns stop.
    await Promise.allSettled(adapters.map(stopAdapter));
    relay?.beginStop();
    scheduler?.stop();
    if (relay && scheduler && graceMs > 0) {
      let timer: { cancel(): void } | undefined;
      const settled = Promise.all([scheduler.whenIdle(), relay.whenCommandsIdle()]).then(() => true);
      const timedOut = new Promise<boolean>((resolve) => {
        timer = clock.setTimeout(() => resolve(false), graceMs);
      });
      const done = await Promise.race([settled, timedOut]);
      timer?.cancel();
      if (!done) logger.warn({ graceMs }, "turns still in flight at shutdown: they stay journaled and resume at the next start");
    }
    control?.close();
    await relay?.haltDelivery();
    const left = store?.pending().length ?? 0;
    await store?.close();
    await ops?.close();
    await dispatcher?.destroy().catch(() => undefined);
    if (left) logger.info({ pending: left }, "pending messages saved for the next start");
  }

  function health(): HealthReport {
    const adaptersView = Object.fromEntries(adapters.map((a) => [`${a.platform}:${a.accountId}`, adapterStates.get(a) ?? "starting"]));
    const anyUp = adapters.length === 0 || adapters.some((a) => adapterStates.get(a) === "connected" || adapterStates.get(a) === "pairing");
    // Several machines: a node that cannot reach the database can neither own nor take an account.
    const database = cluster ? (cluster.databaseReachable() ? "reachable" : "unreachable") : undefined;
    return {
      healthy: state === "running" && anyUp && database !== "unreachable",
      state,
      ...(cluster ? { node: cluster.nodeId, database, owns: cluster.owned() } : {}),
      adapters: adaptersView,
      pending: store?.pending().length ?? 0,
      queued: scheduler?.depth().totalWaiting ?? 0,
      stoppedRoutes: relay ? [...relay.stoppedRoutes.keys()] : [],
    };
  }

  return {
    start,
    async stop(opts) {
      if (state === "new") {
        state = "stopped";
        return;
      }
      if (state === "stopping" || state === "stopped") return;
      state = "stopping";
      await teardown(opts?.graceMs ?? graceDefault);
      state = "stopped";
      logger.info("daemon stopped");
    },
    async crash() {
      state = "stopped";
      relay?.beginStop();
      scheduler?.stop();
      void relay?.haltDelivery();
      control?.close();
      await store?.abandon();
      await Promise.allSettled(adapters.map((a) => a.stop()));
      await ops?.close();
      await dispatcher?.destroy().catch(() => undefined);
    },
    whenIdle() {
      const s = store;
      if (!s || s.pending().length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const off = s.onDrained(() => {
          off();
          resolve();
        });
      });
    },
    health,
    get adapters() {
      return adapters;
    },
    metrics,
    logger,
    get opsUrl() {
      return ops?.url;
    },
    get store() {
      return store;
    },
    get scheduler() {
      return scheduler;
    },
    get schedules() {
      return relay?.schedules;
    },
  };
}
