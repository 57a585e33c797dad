/**
 * `createEmulator(options)`: the whole `/v1` service in one process, with the
 * fake gateway behind real HTTP. Memory-only by default (tests); give
 * `dataDir` to keep state across restarts.
 *
 *   const emulator = await createEmulator();
 *   await request(emulator.app).post("/v1/organization/signup").send({ name: "acme" });
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { pino } from "pino";
import { Agent } from "undici";
import { systemClock, type Clock } from "../shared/clock.js";
import { cryptoRandom, seededRandom, type Random } from "../shared/random.js";
import { makeOwnedTempDirSync } from "../shared/temp-dirs.js";
import { withoutUndefined } from "../shared/util/without-undefined.js";
import type { EmulatorEnv, EmulatorSettings } from "./env.js";
import { sendError } from "./errors.js";
import { createFaultRegistry } from "./faults.js";
import { createGateway, type FakeGateway } from "./gateway/index.js";
import { treeFileWriter } from "./gateway/media.js";
import { inProcessConnector } from "./gateway/in-process.js";
import { type ModelScriptInput, openScripts } from "./gateway/script/index.js";
import { modelScriptHandlers } from "./routes/model-scripts.js";
import { applyFixture, checkFixture, describeFixtureProblems, type FixtureInput, readFixtureFile } from "./seed/index.js";
import { apiRoutes, type Handlers } from "./http/router.js";
import { type EmulatorLogger, reportUnexpectedErrors } from "./events/error-log.js";
import { assignRequestIds } from "./events/request-id.js";
import { ApiListener } from "./http/api-listener.js";
import { applyApiFault } from "./http/api-faults.js";
import { inOrder } from "./http/in-order.js";
import { mountOpenApi } from "./http/openapi.js";
import { mountBillingPage } from "./billing-page.js";
import { adminHandlers } from "./routes/admin.js";
import { instanceHandlers, settleInstance } from "./routes/instances.js";
import { keyHandlers } from "./routes/keys.js";
import { organizationHandlers } from "./routes/organization.js";
import { responseHandlers } from "./routes/responses.js";
import { openStore, type Store } from "./store/store.js";
import { isMintedId } from "./store/schema.js";
import { createWorkspaces } from "./workspace/workspaces.js";
import { channelHandlers } from "./routes/channels.js";
import { fileHandlers } from "./routes/files.js";
import { skillHandlers } from "./routes/skills.js";
import { createRuntimeConfigs } from "./workspace/runtime-config.js";
import { consoleHandlers } from "./console/handlers.js";
import { mountConsole } from "./console/routes.js";
import { captureRequests } from "./events/capture.js";
import { createRequestLog, type RequestLog } from "./events/request-log.js";
import { createEventHub, type EventHub } from "./events/hub.js";
import { observeStore } from "./events/observe.js";
import { mountEvents } from "./events/routes.js";
import { turnEvent } from "./events/turn.js";
import { attributeToSandbox } from "./sandboxes/attribution.js";
import { createSandboxClocks } from "./sandboxes/clock.js";
import { createSandboxJournals } from "./sandboxes/journal.js";
import { sandboxOfInstance } from "./sandboxes/membership.js";
import { sandboxesApi, type SandboxesApi } from "./sandboxes/handle.js";
import { createSandboxService } from "./sandboxes/sandboxes.js";
import { sandboxHandlers } from "./routes/sandboxes.js";
import { openReplay, type Replayer, type ReplayOptions } from "./recording/replay.js";
import { recordingHandlers } from "./recording/routes.js";

export const EMULATOR_VERSION = "0.1.0";

// What a test suite that installs the package needs beside createEmulator: time it controls, and the types of the handles it gets.
export { type Clock, createManualClock, type ManualClock, systemClock } from "../shared/clock.js";
export { type Random, seededRandom } from "../shared/random.js";
export type { ModelScriptInput } from "./gateway/script/schema.js";
export type { FixtureInput } from "./seed/schema.js";
export type { LoadedFixture } from "../shared/schemas/sandboxes.js";
export type { SandboxCreateOptions, SandboxesApi, SandboxHandle } from "./sandboxes/handle.js";
export type { RequestFilter, SandboxRequestEntry, UnmatchedEntry } from "./sandboxes/journal.js";
export type { ClockMove, SandboxView } from "./sandboxes/sandboxes.js";
export type { RecordingUsage, Replayer, ReplayMode, ReplayOptions } from "./recording/replay.js";
// Record, replay and drift (docs/testing.md): the validating proxy and the contract checker it judges with.
export { createValidatingProxy, type ProxyOptions, type ValidatingProxy } from "./proxy/server.js";
export type { DriftReport } from "./proxy/drift-report.js";
export { type ContractValidator, createContractValidator, type Drift, type DriftKind } from "../shared/contract/index.js";

export interface EmulatorOptions {
  /** Keep state in memory only (default unless `dataDir` is given). */
  inMemory?: boolean;
  /** Directory for `state.json` and instance workspaces. */
  dataDir?: string;
  clock?: Clock;
  /** Randomness for ids, keys and fault probabilities. */
  random?: Random;
  /** Shorthand for `random: seededRandom(seed)`: every id repeats from run to run. */
  seed?: string | number;
  /** How long provisioning takes, ms (default 1500). */
  provisionMs?: number;
  /** Longest a committed change waits before it is written, ms (default 25). */
  flushMs?: number;
  uploadLimitBytes?: number;
  gatewayTimeoutMs?: number;
  /** Use this Responses server for new instances instead of the bundled gateway. */
  gatewayUrl?: string;
  adminToken?: string;
  /** Check every success body against its schema (on in the project's tests). */
  validateResponses?: boolean;
  /** Host the gateway listens on (default 127.0.0.1). */
  gatewayHost?: string;
  /** Interval of heartbeat comments on `/_emulator/events`, ms (default 15000). */
  eventsHeartbeatMs?: number;
  /** Most bytes an events client may have waiting before its backlog is dropped (default 1 MiB). */
  eventsMaxQueuedBytes?: number;
  /** Most `/_emulator/events` streams open at once; more answer 503 (default 100). */
  eventsMaxClients?: number;
  /**
   * The global model script from the start (docs/api-contract.md, "Scripting the model"):
   * a file (JSON with comments) or the script itself. A script with an error throws, naming
   * its place, before anything is opened. Default: none (the echo and its directives answer).
   */
  modelScript?: string | ModelScriptInput;
  /**
   * A starting state a person writes (docs/emulator.md, "Fixtures"): a file
   * (JSON with comments) or the fixture itself. Loaded into an empty state
   * only (a data directory that holds organizations already keeps them and
   * skips it). A fixture with an error throws one line per problem, each
   * naming its place, and nothing stays open. Default: none.
   */
  fixtures?: string | FixtureInput;
  /**
   * Where an unexpected error (a 500) is logged, one line per error with its
   * request id, method, route and sandbox (a pino logger fits). Default: JSON
   * lines on stderr.
   */
  logger?: EmulatorLogger;
  /**
   * Answer `/v1` requests from recordings (docs/testing.md, "Record, replay and drift"): the
   * directory, the mode (`strict`, `record-if-missing`, `passthrough`; `strict` under `CI=true`)
   * and the upstream to record from. A recording that cannot be read throws, naming file and line.
   */
  replay?: ReplayOptions;
}

export interface Emulator {
  app: Express;
  gateway: FakeGateway;
  env: EmulatorEnv;
  store: Store;
  /** The one ring of recent requests behind `/_emulator/requests` and the console's log. */
  requests: RequestLog;
  /** The live feed behind `/_emulator/events`. */
  events: EventHub;
  /**
   * Sandboxes: one emulator shared by tests that never see each other.
   * `await emulator.sandboxes.create()` gives a handle with the sandbox's key,
   * its journal, its clock and its fault rules (docs/emulator.md, "Sandboxes").
   */
  sandboxes: SandboxesApi;
  /** The replay of recordings, when `replay` was given: its mode and how much of each recording was used. */
  replay?: Replayer;
  /** Starts the API on `port` (0 = any free port); resolves its base URL. */
  listen(port?: number, host?: string): Promise<string>;
  readonly url: string;
  /** Stops both servers and flushes the store. */
  close(): Promise<void>;
}

export async function createEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const baseClock = options.clock ?? systemClock;
  // First: a refused script must not leave a store open (and its data directory locked).
  // A request of a sandbox replays the recording named like the sandbox (unless it names one itself).
  const replay = options.replay
    ? await openReplay(options.replay, (res) => {
        const id = res.locals.sandboxId as string | undefined;
        return id !== undefined && Object.hasOwn(store.data.sandboxes, id) ? store.data.sandboxes[id]!.name : undefined;
      })
    : undefined;
  // Without a script of its own, the emulator's model answers from the recordings' rules (what a passthrough replay falls back on).
  const scripts = await openScripts(options.modelScript ?? replay?.modelScript());
  const persistent = options.dataDir !== undefined && options.inMemory !== true;
  const events = createEventHub(
    withoutUndefined({ heartbeatMs: options.eventsHeartbeatMs, maxQueuedBytes: options.eventsMaxQueuedBytes, maxClients: options.eventsMaxClients }),
  );
  // The store makes the generator once it has read the position on disk: a seeded one continues
  // from there, so ids drawn before a restart are never drawn again.
  const store = observeStore(
    await openStore({
      ...withoutUndefined({ dataDir: persistent ? options.dataDir : undefined, flushMs: options.flushMs }),
      random: (start) => options.random ?? (options.seed !== undefined ? seededRandom(options.seed, start) : cryptoRandom),
    }),
    (replaced) => events.publish({ type: "state", data: { at: new Date(baseClock.now()).toISOString(), replaced } }),
  );
  // Inside a sandbox's request every part reads the sandbox's own time; the offset's one owner is its record.
  const sandboxClocks = createSandboxClocks(baseClock, (id) => (Object.hasOwn(store.data.sandboxes, id) ? store.data.sandboxes[id]!.clock_offset_ms : 0));
  const clock = sandboxClocks.clock;
  const journals = createSandboxJournals();
  const random = store.random ?? cryptoRandom;
  const scratch = persistent ? undefined : makeOwnedTempDirSync("agent-bridge-emulator-");
  const workspaceRoot = persistent ? join(store.dataDir!, "instances") : scratch!;

  const settings: EmulatorSettings = {
    provisionMs: options.provisionMs ?? 1500,
    uploadLimitBytes: options.uploadLimitBytes ?? 50 * 1024 * 1024,
    gatewayTimeoutMs: options.gatewayTimeoutMs ?? 120_000,
    gatewayUrl: options.gatewayUrl?.replace(/\/+$/, ""),
    adminToken: options.adminToken,
    workspaceRoot,
    version: EMULATOR_VERSION,
  };
  const faults = createFaultRegistry(random);
  const gateway = createGateway({
    state: () => store.data.gateway,
    onChange(change) {
      if (change.kind === "forget") return store.dropConversations(change.instanceId);
      store.recordResponse(change.response);
      return store.durable();
    },
    onTurn: (response) => events.publish({ type: "turn", data: turnEvent(response) }),
    // Only instances of the form the API mints: an id from a gateway URL may name a log file.
    serves: isMintedId,
    prepare: (instanceId) => store.conversations(instanceId),
    clock,
    random,
    scripts,
    sandboxOf: (instanceId) => sandboxOfInstance(store.data, instanceId)?.id,
    inSandbox: (sandboxId, fn) => sandboxClocks.run(sandboxId, fn),
    writeFile: treeFileWriter(
      (id) => env.workspaces.rootOf(id),
      () => env.workspaces.tempPath(),
    ),
    faultFor(instanceId) {
      const rule = faults.take({ target: "gateway", instanceId, ...withoutUndefined({ sandboxId: sandboxOfInstance(store.data, instanceId)?.id }) });
      return rule && withoutUndefined({ status: rule.status, error: rule.error, latencyMs: rule.latency_ms, resetAfterDeltas: rule.after_deltas });
    },
  });
  await gateway.listen(0, options.gatewayHost ?? "127.0.0.1");
  // Remembered so instance views keep answering after the gateway is closed (tests close it on purpose).
  const gatewayBase = gateway.url;
  /** The gateway's `host:port`: connections to it are made in process (refused once it is closed). */
  const gatewayHost = new URL(gatewayBase).host;

  const requests = createRequestLog();
  const env: EmulatorEnv = {
    store,
    clock,
    sandboxClocks,
    journals,
    random,
    gateway,
    faults,
    settings,
    workspaces: createWorkspaces(workspaceRoot),
    // The hop to this emulator's own gateway is made in process (gateway/in-process.ts); an instance's gateway_override goes over TCP.
    gatewayDispatcher: new Agent({
      keepAliveTimeout: 30_000,
      connections: 256,
      connect: inProcessConnector(gatewayHost, () => gateway.connectInProcess()),
    }),
    publicUrl: () => listener.linkBase(),
    gatewayUrlOf: (instance) => instance.gateway_override ?? `${gatewayBase}/instances/${encodeURIComponent(instance.id)}`,
    settle: (instance) => settleInstance(env, instance),
  };

  const app = express();
  const listener = new ApiListener(app);
  app.disable("x-powered-by");
  app.set("etag", false);
  const onAnswered = reportUnexpectedErrors({ logger: options.logger ?? pino({ base: null }, process.stderr), hub: events, clock });
  // Snapshots carry whole workspaces: their import gets a larger limit than the API's 1 MiB.
  // Not `strict`: valid JSON that is not an object (`null`, `1`) reaches the route's schema and gets its 422.
  const snapshotJson = express.json({ limit: "1gb", strict: false });
  const json = express.json({ limit: "1mb", strict: false });
  // One `runtime.json` editor for skills and channels, so their edits of one instance queue behind each other.
  const runtime = createRuntimeConfigs(env.workspaces);
  const sandboxes = createSandboxService(env, scripts);
  const handlers: Partial<Handlers> = {
    ...organizationHandlers(env),
    ...keyHandlers(env),
    ...instanceHandlers(env),
    ...responseHandlers(env),
    ...adminHandlers(env, requests),
    ...fileHandlers(env),
    ...skillHandlers(env, runtime),
    ...channelHandlers(env, runtime),
    ...consoleHandlers(env, requests),
    ...sandboxHandlers(env, sandboxes),
    ...modelScriptHandlers(env, scripts),
    ...recordingHandlers(replay),
  };
  // What every request passes, in this order, as one express layer (http/in-order.ts): the steps
  // before any route, a recording's replay, then the API's route table. What no route takes goes
  // on to the layers below (the OpenAPI document, the billing page, the event stream, the console,
  // the 404); none of their paths is one of the API's.
  app.use(
    inOrder(
      assignRequestIds(),
      captureRequests({ clock, log: requests, hub: events, journals, sandboxClocks, onAnswered, responses: app.response }),
      attributeToSandbox(env),
      applyApiFault(env),
      (req, res, next) => (SNAPSHOT_PATH.test(req.path) ? snapshotJson(req, res, next) : next()),
      json,
      // The body arrived in the socket's own async context: the request goes back into its sandbox.
      (_req, res, next) => {
        sandboxClocks.enter(res.locals.sandboxId as string | undefined);
        next();
      },
      ...(replay ? [replay.handle] : []),
      apiRoutes(env, handlers, withoutUndefined({ validateResponses: options.validateResponses })),
    ),
  );
  mountOpenApi(app, env, () => listener.usableUrl());
  mountBillingPage(app, env);
  mountEvents(app, env, events);
  mountConsole(app, env);
  app.use((_req: Request, res: Response) => {
    res.locals.unmatched = "unknown_route";
    res.status(404).json({ detail: "Not found." });
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => sendError(res, error));

  const emulator: Emulator = {
    app,
    gateway,
    env,
    store,
    requests,
    events,
    sandboxes: sandboxesApi(env, sandboxes, scripts),
    ...(replay ? { replay } : {}),
    async listen(port = 0, host = "127.0.0.1") {
      const url = await listener.listen(port, host);
      settings.listenHost = host;
      return url;
    },
    get url() {
      return listener.url;
    },
    async close() {
      if (!listener.markClosed()) return;
      // Event streams end cleanly (clients see the end, not a reset) before sockets are cut.
      events.close();
      await listener.stopServer();
      await replay?.close();
      await gateway.close();
      await env.gatewayDispatcher.close().catch(() => {});
      try {
        await store.close();
      } finally {
        sandboxClocks.close();
        if (scratch) rmSync(scratch, { recursive: true, force: true });
      }
    },
  };
  if (options.fixtures !== undefined) {
    try {
      await loadStartFixture(env, options.fixtures);
    } catch (error) {
      await emulator.close();
      throw error;
    }
  }
  return emulator;
}

/** The start-up fixture, into an empty state only: a restart on the same data directory keeps what it had. */
async function loadStartFixture(env: EmulatorEnv, source: string | FixtureInput): Promise<void> {
  if (Object.keys(env.store.data.organizations).length > 0) return;
  const checked = typeof source === "string" ? await readFixtureFile(source, env.store.data) : checkFixture(source, env.store.data);
  if (!checked.ok)
    throw new Error(`The fixture ${typeof source === "string" ? source : "fixtures"} was refused:\n${describeFixtureProblems(checked.problems)}`);
  await applyFixture(env, checked.fixture);
}

/** Where `app.use("/_emulator/snapshot", ...)` applied: the path or below it, in any case (express matches paths case-insensitively). */
const SNAPSHOT_PATH = /^\/_emulator\/snapshot(?:\/|$)/i;
