/**
 * Test plumbing for the daemon's end-to-end tests: a real emulator on an
 * ephemeral port with an organization, running instances and a scoped key,
 * and a daemon config pointing at it with fake chat accounts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { createServiceClient, type ServiceClient } from "../../shared/client/index.js";
import { parseConfig } from "../../daemon/config/load.js";
import type { DaemonConfig, DaemonConfigInput } from "../../daemon/config/schema.js";
import { createDaemon, type Daemon, type DaemonOptions } from "../../daemon/daemon.js";
import { createLogger } from "../../daemon/ops/logger.js";
import { systemClock, type Clock } from "../../shared/clock.js";
import { createFakeAdapter, type FakeChatAdapter } from "../fakes/chat-adapter.js";
import { waitUntil } from "../helpers/wait.js";

export type Permission = "read" | "interact" | "configure" | "files" | "channels";

export interface Service {
  emulator: Emulator;
  url: string;
  /** Organization-key client. */
  org: ServiceClient;
  instanceIds: string[];
  /** A scoped key on every instance. */
  key: string;
  mintKey(permissions: Permission[]): Promise<{ id: string; raw: string }>;
  /** POST to the emulator's control plane. */
  admin(path: string, body?: unknown): Promise<unknown>;
  /** Removes every fault rule. */
  clearFaults(): Promise<void>;
  /** Responses calls the emulator has seen. */
  responseCalls(): Promise<number>;
  /**
   * Resolves when the fake model next starts a `!sleep ms` (or any gateway wait of
   * that length): a turn is then out at the service and its reply is not. Call it
   * before sending the message.
   */
  nextSleep(ms: number): Promise<void>;
  /**
   * Holds every `!sleep ms` of the fake model (that length only) until `release()`: a
   * turn stays out at the service for exactly as long as the test needs, rather than
   * for a real-time sleep chosen long enough for a loaded machine. `started` resolves
   * when the first held sleep begins; after `release()`, sleeps of that length end at
   * once (a turn tried again after a restart does not sleep for real either).
   * `close()` releases whatever is still held.
   */
  hold(ms: number): { started: Promise<void>; release(): void };
  close(): Promise<void>;
}

export async function startService(options: { instances?: number; permissions?: Permission[] } = {}): Promise<Service> {
  // The system clock, except that the gateway's sleeps (`!sleep N`) are announced to
  // `nextSleep`, and those of a held length wait for the test's release instead.
  const sleepWaiters: { ms: number; resolve: () => void }[] = [];
  const holds = new Map<number, { gate: Promise<void>; open(): void; started(): void }>();
  const clock: Clock = {
    ...systemClock,
    sleep(ms, signal) {
      for (const w of sleepWaiters.filter((x) => x.ms === ms)) {
        sleepWaiters.splice(sleepWaiters.indexOf(w), 1);
        w.resolve();
      }
      const held = holds.get(ms);
      if (held) {
        held.started();
        return held.gate;
      }
      return systemClock.sleep(ms, signal);
    },
  };
  function hold(ms: number): { started: Promise<void>; release(): void } {
    let open!: () => void;
    let started!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const begun = new Promise<void>((resolve) => (started = resolve));
    holds.set(ms, { gate, open, started });
    return {
      started: begun,
      release: open,
    };
  }
  const emulator = await createEmulator({ inMemory: true, provisionMs: 20, clock });
  const url = await emulator.listen(0, "127.0.0.1");
  const anon = createServiceClient({ baseUrl: url });
  const signup = await anon.signup({ body: { name: "bridge-test" } });
  const org = anon.withKey(signup.api_key);
  await org.updateOrganization({ body: { model_api_keys: { anthropic: "sk-ant-test-placeholder" } } });
  const count = options.instances ?? 1;
  if (count > 1) await admin(`/_emulator/organizations/${signup.organization.id}/tier`, { tier: "crab" });
  const instanceIds: string[] = [];
  for (let i = 0; i < count; i++) instanceIds.push((await org.createInstance({ body: { name: `agent-${i}` } })).id);
  for (const id of instanceIds) {
    await waitUntil(async () => (await org.getInstanceStatus({ instance_id: id })).status === "running", `instance ${id} to run`);
  }
  const mintKey = async (permissions: Permission[]) => {
    const created = await org.createKey({ body: { name: `bridge-${permissions.join("-")}`, instance_ids: instanceIds, permissions } });
    return { id: created.id, raw: created.raw_key };
  };
  const key = (await mintKey(options.permissions ?? ["interact"])).raw;

  async function admin(path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body ?? {}),
    });
    if (res.status >= 400) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    const text = await res.text();
    return text ? JSON.parse(text) : undefined;
  }

  return {
    emulator,
    url,
    org,
    instanceIds,
    key,
    mintKey,
    admin,
    async clearFaults() {
      const res = await fetch(`${url}/_emulator/faults`, { method: "DELETE" });
      if (res.status >= 400) throw new Error(`clear faults: ${res.status}`);
    },
    async responseCalls() {
      const res = await fetch(`${url}/_emulator/requests`);
      const list = (await res.json()) as { method: string; path: string }[];
      return list.filter((r) => r.method === "POST" && r.path.endsWith("/responses")).length;
    },
    nextSleep: (ms) => new Promise<void>((resolve) => sleepWaiters.push({ ms, resolve })),
    hold,
    close() {
      for (const held of holds.values()) held.open();
      holds.clear();
      return emulator.close();
    },
  };
}

export const tempDir = (): { path: string; remove(): void } => {
  const path = mkdtempSync(join(tmpdir(), "bridge-daemon-"));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
};

/**
 * A config for fake accounts (`acct0`, `acct1`, ...; open access), routing
 * account i to instance i, with fast retries and no debounce unless overridden.
 */
export function testConfig(
  service: { url: string; key: string; instanceIds: string[] },
  dataDir: string,
  overrides: Partial<DaemonConfigInput> = {},
  accounts = service.instanceIds.length,
): DaemonConfig {
  const channels = Array.from({ length: accounts }, (_, i) => ({ type: "terminal" as const, id: `acct${i}`, access: { mode: "open" as const } }));
  const routes = channels.map((c, i) => ({ match: { accountId: c.id }, instance: service.instanceIds[i % service.instanceIds.length]! }));
  return parseConfig(
    {
      service: { baseUrl: service.url, apiKey: service.key, requestTimeoutMs: 10_000 },
      dataDir,
      logLevel: "silent",
      ops: { port: null },
      queue: { debounceMs: 0, concurrencyPerInstance: 4 },
      retry: { maxAttempts: 5, baseDelayMs: 5, maxDelayMs: 40, errorCooldownMs: 60_000, instanceWaitMs: 10_000 },
      channels,
      routes,
      ...overrides,
    },
    {},
  );
}

export interface Bridge {
  daemon: Daemon;
  adapters: FakeChatAdapter[];
  /** The first adapter. */
  chat: FakeChatAdapter;
}

export async function startBridge(
  config: DaemonConfig,
  options: Partial<DaemonOptions> & { maxMessageLength?: number; typingRefreshMs?: number; redelivers?: boolean } = {},
): Promise<Bridge> {
  const adapters = config.channels.map((c) =>
    createFakeAdapter({
      accountId: c.id,
      ...(options.maxMessageLength ? { maxMessageLength: options.maxMessageLength } : {}),
      ...(options.typingRefreshMs ? { typingRefreshMs: options.typingRefreshMs } : {}),
      ...(options.redelivers ? { redelivers: true } : {}),
    }),
  );
  const daemon = createDaemon({ config, adapters, logger: createLogger({ level: "silent" }), shutdownGraceMs: 2000, ...options });
  await daemon.start();
  return { daemon, adapters, chat: adapters[0]! };
}

/** Sends texts one after another from one user, each awaiting its reply; returns the replies. */
export async function converse(chat: FakeChatAdapter, userId: string, texts: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const text of texts) {
    const before = chat.repliesTo(userId).length;
    await chat.inject({ userId, text });
    const replies = await chat.waitForReplies(userId, before + 1);
    out.push(replies[before]!.text);
  }
  return out;
}
