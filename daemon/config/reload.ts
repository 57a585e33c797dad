/**
 * Live config: what a reload reads, and what it changes. The new file is
 * checked as `agent-bridge check --offline` checks it (the schema, the
 * loader's cross-checks, at least one route); a file with problems is refused
 * and the running config stays. A good one is compared with the running one:
 * most of it applies from the next message; a channel whose connection
 * settings (a token, an address, a file) changed restarts alone; the parts the
 * daemon opened or built at its start (the service client, the state, the ops
 * server, the log, the retry policy...) wait for a restart, and the reload
 * says which. `RELOAD_CLASSES` says which key is which.
 */
import { createHash } from "node:crypto";
import { ConfigError, loadConfig } from "./load.js";
import type { ChannelConfig, DaemonConfig } from "./schema.js";

/** What the offline check of a config file found: the config, or its problems. */
export type OfflineCheck = { ok: true; config: DaemonConfig; hash: string } | { ok: false; problems: string[] };

/** The checks that need nothing but the file and the environment: what `check --offline` runs and a reload applies. */
export async function checkOffline(file: string, env: NodeJS.ProcessEnv): Promise<OfflineCheck> {
  let config: DaemonConfig;
  try {
    config = await loadConfig(file, env);
  } catch (error) {
    if (error instanceof ConfigError) return { ok: false, problems: [...error.problems] };
    return { ok: false, problems: [error instanceof Error ? error.message : String(error)] };
  }
  if (config.routes.length === 0) return { ok: false, problems: ["routes: none: no message could reach an agent; add at least one"] };
  return { ok: true, config, hash: configHash(config) };
}

/**
 * A short digest of a config as loaded (variables filled in), for telling
 * nodes with different configs apart; it shows nothing of the config. What
 * is each machine's own is left out: `dataDir`, `ops` and `state.nodeId`.
 */
export function configHash(config: DaemonConfig): string {
  const { dataDir: _dir, ops: _ops, state, ...shared } = config;
  const { nodeId: _node, ...sharedState } = state.kind === "postgres" ? state : { ...state, nodeId: undefined };
  return createHash("sha256")
    .update(canonicalJson({ ...shared, state: sharedState }))
    .digest("hex")
    .slice(0, 16);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * How a reload treats a key of the file: "live", read where it is used (at
 * the next message, turn or slot); "channel", each channel's settings (its
 * `LIVE_CHANNEL_KEYS` live, any other change restarts that channel alone);
 * "restart", fixed when the daemon starts (opened, or built into a part): a
 * reload keeps the running value and says that it waits for a restart.
 */
export type ReloadClass = "live" | "channel" | "restart";

/**
 * Every key of the config file, by dotted path: a section whole, or each of
 * its keys. The one list: the plan, the reload's answer and docs/bridge.md
 * follow it, and reload-plan.test.ts walks the zod schema so that a key in
 * neither class fails it.
 */
export const RELOAD_CLASSES = {
  service: "restart",
  dataDir: "restart",
  state: "restart",
  ops: "restart",
  logLevel: "restart",
  // The CLI starts watching the file (or not) when the daemon starts.
  watchConfig: "restart",
  // An instance's concurrency is fixed when the scheduler is built.
  "queue.concurrencyPerInstance": "restart",
  "queue.maxPendingPerSession": "live",
  "queue.maxPendingTotal": "live",
  "queue.debounceMs": "live",
  "queue.maxTurnAgeMs": "live",
  "queue.typingDelayMs": "live",
  "queue.mode": "live",
  // Delivery, service calls and notices take their backoff and cool-down when they are built.
  retry: "restart",
  routes: "live",
  "attachments.enabled": "live",
  // Each adapter downloads up to the size it was built with.
  "attachments.maxBytes": "restart",
  replyFiles: "live",
  transcription: "live",
  schedules: "live",
  identityLinks: "live",
  // Read at each turn (questions.ts buttonsConfigOf), routes' and channels' too.
  buttons: "live",
  channels: "channel",
} as const satisfies Record<string, ReloadClass>;

/** The paths fixed at the start: a change to them waits for a restart. */
export const RESTART_ONLY: readonly string[] = pathsOf("restart");

/** The paths read where they are used: a change applies from the next message. */
export const LIVE: readonly string[] = pathsOf("live");

function pathsOf(kind: ReloadClass): string[] {
  return Object.entries(RELOAD_CLASSES)
    .filter(([, k]) => k === kind)
    .map(([path]) => path);
}

/** The value at a dotted path of a config (undefined when a part of the path is missing). */
export function valueAt(config: unknown, path: string): unknown {
  let value: unknown = config;
  for (const part of path.split(".")) value = value !== null && typeof value === "object" ? new Map(Object.entries(value)).get(part) : undefined;
  return value;
}

/**
 * The config a reload puts in place: the new file's, but the running values
 * of the restart-only keys (what runs keeps matching what the config says).
 * reload-plan.test.ts checks it against `RELOAD_CLASSES`.
 */
export function keepRunning(running: DaemonConfig, next: DaemonConfig): DaemonConfig {
  return {
    ...next,
    service: running.service,
    dataDir: running.dataDir,
    state: running.state,
    ops: running.ops,
    logLevel: running.logLevel,
    watchConfig: running.watchConfig,
    queue: { ...next.queue, concurrencyPerInstance: running.queue.concurrencyPerInstance },
    retry: running.retry,
    attachments: { ...next.attachments, maxBytes: running.attachments.maxBytes },
  };
}

/**
 * A channel's keys the core reads when a message comes (through the channel
 * lookup): a change applies from the next message. Any other key is the
 * adapter's own (credentials, addresses, files, pace) and restarts the channel.
 */
export const LIVE_CHANNEL_KEYS: ReadonlySet<string> = new Set([
  "access",
  "requireMention",
  "groupContext",
  "ackReaction",
  "streaming",
  "sessionReset",
  "queue",
  "buttons",
]);

/** What a reload changes. */
export interface ReloadPlan {
  /** Restart-only keys (dotted paths) that differ: they wait for a restart (the running values stay). */
  restartNeeded: string[];
  /** Channels (by id) whose adapter restarts: their connection settings changed. */
  restart: string[];
  /** Channels new in the file (enabled). */
  add: string[];
  /** Channels gone from the file, or disabled. */
  remove: string[];
}

export function planReload(current: DaemonConfig, next: DaemonConfig): ReloadPlan {
  const restartNeeded = RESTART_ONLY.filter((path) => canonicalJson(valueAt(current, path)) !== canonicalJson(valueAt(next, path)));
  const enabled = (c: DaemonConfig) => new Map(c.channels.filter((ch) => ch.enabled).map((ch) => [ch.id, ch]));
  const before = enabled(current);
  const after = enabled(next);
  const restart: string[] = [];
  const add: string[] = [];
  for (const [id, channel] of after) {
    const old = before.get(id);
    if (!old) add.push(id);
    else if (connectionOf(old) !== connectionOf(channel)) restart.push(id);
  }
  const remove = [...before.keys()].filter((id) => !after.has(id));
  return { restartNeeded, restart, add, remove };
}

/** A channel's connection settings (everything but the live keys), comparable as text. */
function connectionOf(channel: ChannelConfig): string {
  return canonicalJson(Object.fromEntries(Object.entries(channel).filter(([k]) => !LIVE_CHANNEL_KEYS.has(k))));
}
