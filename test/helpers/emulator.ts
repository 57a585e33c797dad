/**
 * Shared helpers for tests that drive the emulator: start one with the test
 * defaults (manual clock, instant provisioning, response validation), sign up
 * an organization, get a running instance. Everything goes through the public
 * HTTP API (supertest against `emulator.app`), so the helpers exercise the
 * same paths a client does. Supertest calls go to one server per emulator, listening from the
 * start (supertest would otherwise create, listen and close a server for every request).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { Express } from "express";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import request from "supertest";
import { createEmulator, type Emulator, type EmulatorOptions } from "../../emulator/index.js";
import { createExpressServer } from "../../emulator/http/express-server.js";
import { requestDetail } from "../../emulator/events/capture.js";
import { createManualClock, type ManualClock } from "../../shared/clock.js";
import type { Provider, Tier } from "../../shared/schemas/common.js";
import type { Instance } from "../../shared/schemas/instances.js";
import type { Organization } from "../../shared/schemas/organization.js";

/** What supertest's `request(...)` is given: the emulator's app on a listening server (or, where a test has only the app, the app). */
export type App = Server | Express;

export interface TestEmulator {
  emulator: Emulator;
  app: App;
  /** The emulator's clock: advance it to finish provisioning or expire keys. */
  clock: ManualClock;
  /** What the emulator logged (its unexpected errors), one parsed object per line. */
  errorLog: Record<string, unknown>[];
  /** Closes it; throws first when a 500 it answered left no log line (or more than one). */
  close(): Promise<void>;
}

/**
 * An emulator for tests: `validateResponses` on, `provisionMs: 0` and a manual
 * clock unless overridden. Memory-only unless `dataDir` is given. Its log goes
 * to `errorLog`, and closing it fails the test when a 500 left no line there.
 */
export async function startEmulator(options: EmulatorOptions & { clock?: ManualClock } = {}): Promise<TestEmulator> {
  const clock = options.clock ?? createManualClock();
  const errorLog: Record<string, unknown>[] = [];
  const logger = pino({ base: null }, { write: (line: string) => void errorLog.push(JSON.parse(line) as Record<string, unknown>) });
  const emulator = await createEmulator({ provisionMs: 0, validateResponses: true, logger, ...options, clock });
  // Not `emulator.listen()`: the emulator's own URL stays unset, as for an app never listened on.
  const server = createExpressServer(emulator.app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    emulator,
    app: server,
    clock,
    errorLog,
    async close() {
      const unlogged = silent500s(emulator, errorLog);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await emulator.close();
      if (unlogged.length) throw new Error(`500 answers without exactly one log line: ${unlogged.join("; ")}`);
    },
  };
}

/**
 * 500s in the request journal whose request id has not exactly one line in the
 * log per answer. A 500 the test asked for with an API fault rule is not an
 * error of the emulator's own and is left out.
 */
export function silent500s(emulator: Emulator, log: Record<string, unknown>[]): string[] {
  const injected = new Set(
    emulator.requests
      .list()
      .filter((line) => line.status === 500 && String(JSON.stringify(requestDetail(emulator.requests, line.id)?.response.body)).includes("Injected fault"))
      .map((line) => line.request_id),
  );
  const answered = new Map<string, { count: number; line: string }>();
  for (const { status, request_id, method, path } of emulator.requests.journal()) {
    if (status !== 500 || injected.has(request_id)) continue;
    const seen = answered.get(request_id);
    answered.set(request_id, { count: (seen?.count ?? 0) + 1, line: `${method} ${path} (${request_id})` });
  }
  return [...answered].filter(([id, { count }]) => log.filter((l) => l.request_id === id).length !== count).map(([, { line }]) => line);
}

export const bearer = (key: string): { Authorization: string } => ({ Authorization: `Bearer ${key}` });

export interface TestOrg {
  apiKey: string;
  organization: Organization;
  /** Headers carrying the organization key. */
  auth: { Authorization: string };
}

/** Fake provider keys; recognisable so tests can check they never come back. */
export const providerKey = (provider: Provider): string => `${provider}-test-secret-0123456789abcdef`;

/**
 * Signs up an organization and, by default, stores an `anthropic` key so it
 * can create instances at once. `tier` switches the plan through the control plane.
 */
export async function signupOrg(app: App, options: { name?: string; providers?: Provider[]; tier?: Tier } = {}): Promise<TestOrg> {
  const signup = await request(app)
    .post("/v1/organization/signup")
    .send({ name: options.name ?? "acme" });
  if (signup.status !== 201) throw new Error(`signup answered ${signup.status}: ${signup.text}`);
  const apiKey = (signup.body as { api_key: string }).api_key;
  let organization = (signup.body as { organization: Organization }).organization;
  const providers = options.providers ?? ["anthropic"];
  if (providers.length) {
    const keys = Object.fromEntries(providers.map((p) => [p, providerKey(p)]));
    const patch = await request(app).patch("/v1/organization").set(bearer(apiKey)).send({ model_api_keys: keys });
    if (patch.status !== 200) throw new Error(`setting provider keys answered ${patch.status}: ${patch.text}`);
    organization = patch.body as Organization;
  }
  if (options.tier) {
    const tier = await request(app).post(`/_emulator/organizations/${organization.id}/tier`).send({ tier: options.tier });
    if (tier.status !== 200) throw new Error(`setting the tier answered ${tier.status}: ${tier.text}`);
    organization = tier.body as Organization;
  }
  return { apiKey, organization, auth: bearer(apiKey) };
}

/**
 * Creates an instance and brings it to `running`: advances the manual clock
 * past the provisioning delay when there is one.
 */
export async function runningInstance(t: TestEmulator, org: TestOrg, body: Record<string, unknown> = {}): Promise<Instance> {
  const created = await request(t.app)
    .post("/v1/instances")
    .set(org.auth)
    .send({ name: "agent", ...body });
  if (created.status !== 201) throw new Error(`create instance answered ${created.status}: ${created.text}`);
  let instance = created.body as Instance;
  if (instance.status === "provisioning") {
    t.clock.advance(t.emulator.env.settings.provisionMs);
    const got = await request(t.app).get(`/v1/instances/${instance.id}`).set(org.auth);
    instance = got.body as Instance;
  }
  if (instance.status !== "running") throw new Error(`instance is ${instance.status}, not running`);
  return instance;
}

/** Forces an instance's state (and optionally its gateway) through the control plane. */
export async function forceState(
  app: App,
  instanceId: string,
  body: { status: Instance["status"]; error_message?: string; gateway_url?: string },
): Promise<Instance> {
  const res = await request(app).post(`/_emulator/instances/${instanceId}/state`).send(body);
  if (res.status !== 200) throw new Error(`forcing state answered ${res.status}: ${res.text}`);
  return res.body as Instance;
}

/** The whole exported state, for before/after comparisons. */
export async function snapshot(app: App): Promise<unknown> {
  const res = await request(app).get("/_emulator/snapshot");
  if (res.status !== 200) throw new Error(`snapshot answered ${res.status}`);
  return res.body as unknown;
}

/** The assistant text of a response object (first output text block). */
export function replyText(body: unknown): string | undefined {
  const output = (body as { output?: { content?: { type?: string; text?: string }[] }[] } | undefined)?.output;
  const block = output?.[0]?.content?.find((c) => c.type === "output_text");
  return block?.text;
}

/** A temporary directory removed by the returned cleanup. */
export function tempDir(prefix = "agent-bridge-test-"): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** Whether a connection to 127.0.0.1:`port` is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}

/**
 * A loopback port that refuses connections, and keeps refusing: one just below the kernel's
 * range of ephemeral ports, which no test's server (all listen on port 0) can be handed. A
 * port bound and released was not enough: with files running side by side, another file's
 * server could get it a moment later, and "cannot reach" became "does not accept the key".
 */
export async function deadPort(): Promise<number> {
  let low = 32_768;
  try {
    low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: ephemeral ports start at 49152 elsewhere, above this default
  }
  for (let port = Math.min(low, 49_152) - 1; port > 1024; port--) if (await refused(port)) return port;
  throw new Error("no refused loopback port below the ephemeral range");
}

/** Starts a plain HTTP server on a loopback ephemeral port; resolves its base URL and a closer. */
export async function listenOn(server: Server): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
