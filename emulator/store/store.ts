/**
 * The emulator's store: state is read once at start and lives in memory.
 * On disk it is split by how it changes:
 *
 * - `state.json`: the control state (organizations, keys, instances,
 *   channels, skills, sandboxes) as of its last full write, atomic;
 * - `state.log`: once state.json is past 256 KiB, the records changed since
 *   it was written, one line each (change-log.ts), appended by each write,
 *   so a write costs what changed, not what is stored; folded into
 *   `state.json` once it outgrows it, and at start. (A smaller state is
 *   rewritten whole, which costs no more than that.)
 *   Which records changed is known without the code saying so: the state's
 *   collections are tracked (tracked.ts).
 * - `conversations/<instance>.jsonl`: gateway turns, appended (see
 *   conversation-log.ts), so a flush never rewrites conversations.
 *
 * Changes are flushed by one coalescing writer: `commit()` (and every
 * recorded turn) is on disk within `flushMs`; `touch()` is for bookkeeping
 * such as `last_used_at` that may wait longer. A write that fails keeps the
 * state in memory, is retried with backoff until it succeeds, shows in
 * `health()`, and is reported once (and once more when it recovers).
 */
import { backoffDelay } from "../../shared/backoff.js";
import { cryptoRandom } from "../../shared/random.js";
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { Low } from "lowdb";
import { acquireDirLock, tempPrefixOf, writeFileAtomic } from "../../shared/durable-files.js";
import { appendFileDurable, writeFileDurable } from "../../shared/durable-files.js";
import { AtomicJsonFile } from "./atomic-file.js";
import { CHANGE_LOG, changeLines, replayChangeLog } from "./change-log.js";
import { DirtyRecords, trackState } from "./tracked.js";
import { conversationLogs, type ConversationLogs } from "./conversation-log.js";
import { ControlState } from "./schema.js";
import { type ControlFile, emptyState, type EmulatorState, STATE_VERSION, type StoredResponse } from "./state.js";

/**
 * Below this size state.json is simply rewritten whole (as cheap as an append, and the file
 * alone says everything); above it writes go to the log, folded in once it outgrows the state.
 */
const WHOLE_BELOW_BYTES = 256 * 1024;

export interface StoreOptions {
  /** Directory for `state.json` and `conversations/`; omit for a memory-only store. */
  dataDir?: string;
  /** Longest a committed change waits before it is on disk, ms (default 25). */
  flushMs?: number;
  /** Longest a touched (bookkeeping) change waits, ms (default 5000). */
  touchFlushMs?: number;
  /** Longest wait between retries of a failed write, ms (default 2000). */
  maxRetryMs?: number;
  /** The seeded generator's position, persisted with every write (see `Random.position`). */
  randomPosition?: () => number | undefined;
  /** Where failures and recoveries are reported (default: stderr). */
  report?: (message: string) => void;
}

export interface StoreHealth {
  persistent: boolean;
  /** False while the last write failed; the store keeps retrying. */
  ok: boolean;
  /** Changes in memory not yet on disk. */
  pending: boolean;
  /** When the current run of failures began (ISO), else null. */
  failing_since: string | null;
  last_error: string | null;
  /** Failed attempts in the current run of failures. */
  failed_attempts: number;
  writes: number;
}

export interface Store {
  readonly data: EmulatorState;
  readonly dataDir: string | undefined;
  commit(): void;
  touch(): void;
  /** A gateway turn was recorded in `data.gateway`: append it to its instance's log. */
  recordResponse(response: StoredResponse): void;
  /** Resolves once the instance's conversations are in `data.gateway` (logs are read on first use). */
  conversations(instanceId: string): Promise<void>;
  /** Resolves once every conversation is in `data.gateway` (snapshot export). */
  allConversations(): Promise<void>;
  /** An instance's conversations were forgotten: remove its log. */
  dropConversations(instanceId: string): void;
  /**
   * Resolves once every change committed so far (not `touch`) is on disk:
   * the router awaits it before answering a write, so an answered write is a
   * durable one. Waiting starts a write round at once; concurrent waiters
   * share it (group commit). Also resolves when that round failed (the change
   * stays in memory, is retried, and health shows the failure).
   */
  durable(): Promise<void>;
  /** Writes now if anything is pending; resolves when it is on disk, rejects if the write failed. */
  flush(): Promise<void>;
  /** A deep copy of the whole state as plain data (snapshot export). */
  copy(): EmulatorState;
  /** Swaps in a whole new state (reset, snapshot import) and commits it. */
  replace(state: EmulatorState): void;
  close(): Promise<void>;
  health(): StoreHealth;
  /** The seeded generator's position found on disk (0 for a new directory). */
  readonly randomPosition: number;
  /** Number of write rounds so far (tests and benchmarks check coalescing). */
  readonly writes: number;
  /** Number of `state.json` rewrites so far (conversation appends do not count). */
  readonly controlWrites: number;
}

export async function openStore(options: StoreOptions = {}): Promise<Store> {
  const flushMs = options.flushMs ?? 25;
  const touchFlushMs = options.touchFlushMs ?? 5_000;
  const maxRetryMs = options.maxRetryMs ?? 2_000;
  const report = options.report ?? ((message: string) => void process.stderr.write(`emulator: ${message}\n`));
  const dataDir = options.dataDir ? resolve(options.dataDir) : undefined;
  let data: EmulatorState = emptyState();
  let release = () => {};
  let control: Low<ControlFile> | undefined; // read at start; writes go through writeWhole and the log
  let logs: ConversationLogs | undefined;
  let randomPosition = 0;
  let migrate = false;
  /** Bytes in `state.log`, and in `state.json` when it was last written whole: the log is folded in once it outgrows the state. */
  let logBytes = 0;
  let snapshotBytes = 0;

  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    const lock = acquireDirLock(dataDir, "emulator");
    release = () => lock.release();
    try {
      removeCrashLeftovers(dataDir);
      control = new Low(new AtomicJsonFile<ControlFile>(join(dataDir, "state.json"), parseControl), controlOf(data));
      await control.read();
      const { gateway: legacy, random_position, ...rest } = control.data;
      logs = conversationLogs(dataDir, () => data.gateway, report);
      const opened = await logs.open();
      // A state.json from before conversations had their own logs: move them there once.
      migrate = legacy !== undefined && Object.keys(legacy.responses).length > 0;
      data = { ...rest, gateway: migrate ? legacy! : { responses: {}, heads: {} } };
      if (migrate) await logs.ensureAll();
      snapshotBytes = statSync(join(dataDir, "state.json"), { throwIfNoEntry: false })?.size ?? 0;
      const replayed = await replayChangeLog(join(dataDir, CHANGE_LOG), data, report);
      logBytes = replayed.bytes;
      randomPosition = Math.max(random_position ?? 0, replayed.randomPosition ?? 0, opened.position);
    } catch (error) {
      release();
      throw new Error(`Cannot read ${dataDir}/state.json: ${(error as Error).message}`);
    }
  }
  const dirty = new DirtyRecords();
  let tracked = trackState(data, dirty);
  // At start a log is folded into state.json at once (and a torn last line with it), so appends start clean.
  const foldAtOpen = migrate || logBytes > 0;
  if (foldAtOpen) dirty.markAll();

  let timer: NodeJS.Timeout | undefined;
  let dueAt = Infinity;
  let controlDirty = foldAtOpen;
  /** The generator position last written (to the log or state.json). */
  let writtenPosition: number | undefined;
  let writing: Promise<void> = Promise.resolve();
  let writes = 0;
  let controlWrites = 0;
  let closed = false;
  let failingSince: number | null = null;
  let lastError: string | null = null;
  let failedAttempts = 0;
  if (migrate) logs!.rewrite();

  const pending = () => controlDirty || (logs?.pending ?? false);

  /** Changes a client was told about, counted; `durableSeq` of them are on disk. */
  let changeSeq = 0;
  let durableSeq = 0;
  let waiters: { seq: number; resolve: () => void }[] = [];
  const settleWaiters = (upTo: number) => {
    if (!waiters.length) return;
    const still: typeof waiters = [];
    for (const w of waiters) w.seq <= upTo ? w.resolve() : still.push(w);
    waiters = still;
  };

  const writeOnce = async (): Promise<void> => {
    writes++;
    // Both parts take what they write synchronously, here: everything counted so far is in this round.
    const target = changeSeq;
    const results = await Promise.allSettled([writeControl(), logs?.pending ? logs.flush() : undefined]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      // The clients waiting are answered anyway (their change is in memory, retried, and health says so).
      settleWaiters(target);
      throw failed.reason;
    }
    durableSeq = Math.max(durableSeq, target);
    settleWaiters(durableSeq);
  };
  /** The changed records appended to the log, or the whole state written when it is due (see the header). */
  const writeControl = async (): Promise<void> => {
    if (!controlDirty || !dataDir) return;
    controlDirty = false;
    const taken = dirty.take();
    const position = options.randomPosition?.();
    const at = position === undefined ? undefined : Math.max(position, randomPosition);
    try {
      if (taken.all || snapshotBytes < WHOLE_BELOW_BYTES || logBytes > snapshotBytes) await writeWhole(at);
      else {
        const text = changeLines(data, taken.changed, at !== writtenPosition ? at : undefined);
        if (!text) return;
        await appendFileDurable(join(dataDir, CHANGE_LOG), text);
        logBytes += Buffer.byteLength(text);
      }
      writtenPosition = at;
      controlWrites++;
    } catch (error) {
      dirty.restore(taken);
      controlDirty = true;
      throw error;
    }
  };
  /** `state.json` whole (atomic), then the log emptied: state.json holds all of it now. */
  const writeWhole = async (position: number | undefined): Promise<void> => {
    const file = controlOf(data);
    const text = JSON.stringify(position === undefined ? file : { ...file, random_position: position });
    await writeFileAtomic(join(dataDir!, "state.json"), text);
    if (logBytes > 0) await writeFileDurable(join(dataDir!, CHANGE_LOG), "");
    snapshotBytes = Buffer.byteLength(text);
    logBytes = 0;
  };

  const writeNow = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    dueAt = Infinity;
    if (!pending()) return writing;
    // One writer: the next round starts after the previous settled; a failed
    // round leaves its changes pending for the retry.
    writing = writing
      .catch(() => {})
      .then(writeOnce)
      .then(
        () => {
          if (failingSince !== null) report(`writing state recovered after ${failedAttempts} failed attempt(s)`);
          failingSince = null;
          lastError = null;
          failedAttempts = 0;
        },
        (error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          if (failingSince === null) {
            failingSince = Date.now();
            // Once per run of failures, not once per retry.
            report(`writing state failed (retrying until it succeeds): ${message}`);
          }
          lastError = message;
          failedAttempts++;
          // The project's one backoff formula. Disk writes are scheduled on real time (not the
          // emulator's clock, which tests move): a write is I/O, not modelled time.
          if (!closed) schedule(backoffDelay(failedAttempts + 1, { baseMs: Math.max(flushMs, 10), maxMs: maxRetryMs }, cryptoRandom));
          throw error;
        },
      );
    return writing;
  };

  const schedule = (delay: number) => {
    if (closed || !dataDir) return;
    const at = Date.now() + delay;
    if (at >= dueAt) return;
    if (timer) clearTimeout(timer);
    dueAt = at;
    timer = setTimeout(() => void writeNow().catch(() => {}), delay);
    timer.unref?.();
  };
  const markControl = (delay: number, counted = true) => {
    controlDirty = true;
    if (counted) changeSeq++;
    schedule(delay);
  };
  const store: Store = {
    get data() {
      return tracked;
    },
    copy: () => structuredClone(data),
    dataDir,
    commit: () => markControl(flushMs),
    touch: () => markControl(touchFlushMs, false),
    conversations: (instanceId) => logs?.ensure(instanceId) ?? Promise.resolve(),
    allConversations: () => logs?.ensureAll() ?? Promise.resolve(),
    recordResponse(response) {
      if (!logs) return;
      logs.append(response, options.randomPosition?.());
      changeSeq++;
      schedule(flushMs);
    },
    dropConversations(instanceId) {
      if (!logs) return;
      logs.drop(instanceId);
      changeSeq++;
      schedule(flushMs);
    },
    durable() {
      if (!dataDir || closed || durableSeq >= changeSeq) return Promise.resolve();
      const seq = changeSeq;
      // Someone waits: start the round now (group commit) instead of after the coalescing delay.
      schedule(0);
      return new Promise<void>((resolve) => waiters.push({ seq, resolve }));
    },
    flush: () => (dataDir ? writeNow() : Promise.resolve()),
    replace(state) {
      data = state;
      tracked = trackState(data, dirty);
      dirty.markAll();
      logs?.rewrite();
      markControl(flushMs);
    },
    async close() {
      if (closed) return;
      try {
        if (dataDir) await writeNow();
      } finally {
        closed = true;
        if (timer) clearTimeout(timer);
        settleWaiters(Infinity);
        release();
      }
    },
    health: () => ({
      persistent: dataDir !== undefined,
      ok: failingSince === null,
      pending: dataDir !== undefined && pending(),
      failing_since: failingSince === null ? null : new Date(failingSince).toISOString(),
      last_error: lastError,
      failed_attempts: failedAttempts,
      writes,
    }),
    get randomPosition() {
      return randomPosition;
    },
    get writes() {
      return writes;
    },
    get controlWrites() {
      return controlWrites;
    },
  };
  // The one-time move of conversations out of an old state.json, and folding a log left by the last run, happen before the store is used.
  if (foldAtOpen) {
    try {
      await writeNow();
    } catch (error) {
      release();
      throw new Error(`Cannot move conversations out of ${dataDir}/state.json: ${(error as Error).message}`);
    }
  }
  return store;
}

/**
 * Removes the temporary files of `state.json` rewrites a crash interrupted
 * (`.state.json.<pid>.<hex>.tmp`: the rename never happened, so they hold
 * nothing the store needs). Safe only under the directory's lock: no live
 * writer can own one. Conversation logs clean their own folder on open.
 */
function removeCrashLeftovers(dataDir: string): void {
  const prefix = tempPrefixOf(join(dataDir, "state.json"));
  for (const name of readdirSync(dataDir)) {
    if (name.startsWith(prefix) && name.endsWith(".tmp")) rmSync(join(dataDir, name), { force: true });
  }
}

/** The part of the state that goes to `state.json`. */
function controlOf(state: EmulatorState): ControlFile {
  const { gateway: _, ...rest } = state;
  return rest;
}

function parseControl(value: unknown): ControlFile {
  const version = value && typeof value === "object" && "version" in value ? value.version : undefined;
  if (version !== STATE_VERSION) throw new Error(`state.json has version ${String(version)}; this emulator reads version ${STATE_VERSION}.`);
  const parsed = ControlState.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`state.json does not hold a valid state (${issue.path.join(".")}: ${issue.message})`);
  }
  return parsed.data;
}
