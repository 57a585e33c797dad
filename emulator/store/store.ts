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
import { createBackoff } from "../../shared/backoff.js";
import { cryptoRandom, type Random } from "../../shared/random.js";
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { Low } from "lowdb";
import { acquireDirLock, tempPrefixOf, writeFileAtomic } from "../../shared/durable-files.js";
import { appendFileDurable, writeFileDurable } from "../../shared/durable-files.js";
import { AtomicJsonFile } from "./atomic-file.js";
import { CHANGE_LOG, changeLines, replayChangeLog } from "./change-log.js";
import { DirtyRecords, trackState } from "./tracked.js";
import { GroupCommit } from "../../shared/group-commit.js";
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
  /**
   * Makes the generator from the position found on disk, once the load has read it; a seeded
   * one's position is persisted with every write after that (see `Random.position`).
   */
  random?: (start: number) => Random;
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
  /** The generator `options.random` made at open; undefined without that option. */
  readonly random: Random | undefined;
  /** Number of write rounds so far (tests and benchmarks check coalescing). */
  readonly writes: number;
  /** Number of `state.json` rewrites so far (conversation appends do not count). */
  readonly controlWrites: number;
}

export async function openStore(options: StoreOptions = {}): Promise<Store> {
  return FileStore.open(options);
}

/** The one pending timer of the writer: a write round at the earliest time asked for. */
class FlushTimer {
  /** The pending timer, if any; always the one due at `#dueAt`. */
  #timer: NodeJS.Timeout | undefined;
  /** When the pending timer fires (epoch ms); Infinity when none is pending. */
  #dueAt = Infinity;

  /** Runs `fire` in `delay` ms, unless a run is due sooner already. */
  at(delay: number, fire: () => void): void {
    const at = Date.now() + delay;
    if (at >= this.#dueAt) return;
    this.cancel();
    this.#dueAt = at;
    this.#timer = setTimeout(fire, delay);
    this.#timer.unref?.();
  }

  cancel(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#dueAt = Infinity;
  }
}

/** The current run of failed writes, as `health()` shows it. */
class WriteFailures {
  /** When the current run of failures began (epoch ms); null while writes succeed. */
  since: number | null = null;
  /** The last failure's message; null while writes succeed. */
  lastError: string | null = null;
  /** Failed attempts in the current run; 0 while writes succeed. */
  attempts = 0;

  /** Notes a failure; true for the first of a run (the one reported). */
  failed(error: unknown): boolean {
    const first = this.since === null;
    if (first) this.since = Date.now();
    this.lastError = error instanceof Error ? error.message : String(error);
    this.attempts++;
    return first;
  }

  /** Ends a run; the number of failed attempts it had (0: there was none). */
  recovered(): number {
    const attempts = this.since === null ? 0 : this.attempts;
    this.since = null;
    this.lastError = null;
    this.attempts = 0;
    return attempts;
  }
}

class FileStore implements Store {
  /** Absolute; undefined for a memory-only store, which never writes. */
  readonly dataDir: string | undefined;
  /** Settings from the options, fixed at open. */
  readonly #flushMs: number;
  readonly #touchFlushMs: number;
  readonly #maxRetryMs: number;
  /** Makes `#random` at the end of open. */
  readonly #makeRandom: ((start: number) => Random) | undefined;
  /** The generator whose position is persisted with each write; undefined until open has read the position on disk. */
  #random: Random | undefined;
  /** Where failures and recoveries are reported. */
  readonly #report: (message: string) => void;
  /** The plain state: never holds a tracking proxy (tracked.ts), so it can be cloned and written. */
  #data: EmulatorState;
  /** `#data` seen through the change tracking into `#dirty`; what `data` hands out. */
  #tracked: EmulatorState;
  /** Control records changed since the last control write took them. */
  readonly #dirty = new DirtyRecords();
  /** Releases the data directory's lock (a no-op for a memory-only store); set once, at open. */
  #release: () => void = () => {};
  /** The conversation logs; present exactly when there is a data directory (set at open). */
  #logs: ConversationLogs | undefined;
  /** The generator position found on disk at open (0 for a new directory). */
  #randomPosition = 0;
  /** Bytes in `state.log`: the log is folded into state.json once it outgrows it. */
  #logBytes = 0;
  /** Bytes of `state.json` when it was last written whole. */
  #snapshotBytes = 0;
  /** The control state has changes no write round has taken yet. */
  #controlDirty = false;
  /** The generator position last written (to the log or state.json). */
  #writtenPosition: number | undefined;
  /** Write rounds that had something to write, so far. */
  #writes = 0;
  /** Control writes (state.json or the log) so far. */
  #controlWrites = 0;
  /** Set by close(); never unset: no round is scheduled after it. */
  #closed = false;
  /** Changes a client was told about, counted. */
  #changeSeq = 0;
  /** How many of the counted changes are known to be on disk (never more than `#changeSeq`). */
  #durableSeq = 0;
  /** The coalescing delay's one timer: at most one round is scheduled ahead. */
  readonly #timer = new FlushTimer();
  /** The current run of failed writes (health, reports, backoff). */
  readonly #failures = new WriteFailures();
  /**
   * One write round at a time; callers that ask meanwhile (durable(), flush(), the timer)
   * share the next round (group commit). Started after the current I/O callbacks run, so the
   * writes answered together wait for one round.
   */
  readonly #rounds = new GroupCommit<void>({ gather: (start) => void setImmediate(start), commit: () => this.#round() });

  static async open(options: StoreOptions): Promise<FileStore> {
    const store = new FileStore(options);
    if (store.dataDir) await store.#load(store.dataDir);
    store.#random = store.#makeRandom?.(store.#randomPosition);
    return store;
  }

  private constructor(options: StoreOptions) {
    this.dataDir = options.dataDir ? resolve(options.dataDir) : undefined;
    this.#flushMs = options.flushMs ?? 25;
    this.#touchFlushMs = options.touchFlushMs ?? 5_000;
    this.#maxRetryMs = options.maxRetryMs ?? 2_000;
    this.#makeRandom = options.random;
    this.#report = options.report ?? ((message: string) => void process.stderr.write(`emulator: ${message}\n`));
    this.#data = emptyState();
    this.#tracked = trackState(this.#data, this.#dirty);
  }

  /** Locks the directory and reads what it holds: state.json, the change log replayed onto it, the conversation logs. */
  async #load(dataDir: string): Promise<void> {
    mkdirSync(dataDir, { recursive: true });
    const lock = acquireDirLock(dataDir, "emulator");
    this.#release = () => lock.release();
    let migrate: boolean;
    try {
      removeCrashLeftovers(dataDir);
      const control = new Low(new AtomicJsonFile<ControlFile>(join(dataDir, "state.json"), parseControl), controlOf(this.#data));
      await control.read();
      const { gateway: legacy, random_position, ...rest } = control.data;
      // The logs read the gateway of whatever state is current (replace() swaps it).
      const logs = conversationLogs(dataDir, () => this.#data.gateway, this.#report);
      this.#logs = logs;
      const opened = await logs.open();
      // A state.json from before conversations had their own logs: move them there once.
      migrate = legacy !== undefined && Object.keys(legacy.responses).length > 0;
      this.#data = { ...rest, gateway: migrate ? legacy! : { responses: {}, heads: {} } };
      this.#tracked = trackState(this.#data, this.#dirty);
      if (migrate) await logs.ensureAll();
      this.#snapshotBytes = statSync(join(dataDir, "state.json"), { throwIfNoEntry: false })?.size ?? 0;
      const replayed = await replayChangeLog(join(dataDir, CHANGE_LOG), this.#data, this.#report);
      this.#logBytes = replayed.bytes;
      this.#randomPosition = Math.max(random_position ?? 0, replayed.randomPosition ?? 0, opened.position);
    } catch (error) {
      this.#release();
      throw new Error(`Cannot read ${dataDir}/state.json: ${(error as Error).message}`);
    }
    // At start a log is folded into state.json at once (and a torn last line with it), so appends start clean;
    // the one-time move of conversations out of an old state.json happens then too, before the store is used.
    if (!migrate && this.#logBytes === 0) return;
    this.#dirty.markAll();
    this.#controlDirty = true;
    if (migrate) this.#logs.rewrite();
    try {
      await this.#writeNow();
    } catch (error) {
      // This store is never handed out: no retry may write after the lock is released.
      this.#closed = true;
      this.#timer.cancel();
      this.#release();
      throw new Error(`Cannot move conversations out of ${dataDir}/state.json: ${(error as Error).message}`);
    }
  }

  get data(): EmulatorState {
    return this.#tracked;
  }

  get randomPosition(): number {
    return this.#randomPosition;
  }

  get random(): Random | undefined {
    return this.#random;
  }

  get writes(): number {
    return this.#writes;
  }

  get controlWrites(): number {
    return this.#controlWrites;
  }

  copy(): EmulatorState {
    return structuredClone(this.#data);
  }

  commit(): void {
    this.#markControl(this.#flushMs);
  }

  touch(): void {
    this.#markControl(this.#touchFlushMs, false);
  }

  conversations(instanceId: string): Promise<void> {
    return this.#logs?.ensure(instanceId) ?? Promise.resolve();
  }

  allConversations(): Promise<void> {
    return this.#logs?.ensureAll() ?? Promise.resolve();
  }

  recordResponse(response: StoredResponse): void {
    if (!this.#logs) return;
    this.#logs.append(response, this.#random?.position?.());
    this.#changeSeq++;
    this.#schedule(this.#flushMs);
  }

  dropConversations(instanceId: string): void {
    if (!this.#logs) return;
    this.#logs.drop(instanceId);
    this.#changeSeq++;
    this.#schedule(this.#flushMs);
  }

  durable(): Promise<void> {
    if (!this.dataDir || this.#closed || this.#durableSeq >= this.#changeSeq) return Promise.resolve();
    // Someone waits: a round now (group commit), not after the coalescing delay. A failed
    // round answers too: the change stays in memory, is retried, and health says so.
    return this.#rounds.submit().then(
      () => {},
      () => {},
    );
  }

  flush(): Promise<void> {
    return this.dataDir ? this.#writeNow() : Promise.resolve();
  }

  replace(state: EmulatorState): void {
    this.#data = state;
    this.#tracked = trackState(state, this.#dirty);
    this.#dirty.markAll();
    this.#logs?.rewrite();
    this.#markControl(this.#flushMs);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    try {
      if (this.dataDir) await this.#writeNow();
    } finally {
      this.#closed = true;
      this.#timer.cancel();
      await this.#rounds.close();
      this.#release();
    }
  }

  health(): StoreHealth {
    const failures = this.#failures;
    return {
      persistent: this.dataDir !== undefined,
      ok: failures.since === null,
      pending: this.dataDir !== undefined && this.#pending(),
      failing_since: failures.since === null ? null : new Date(failures.since).toISOString(),
      last_error: failures.lastError,
      failed_attempts: failures.attempts,
      writes: this.#writes,
    };
  }

  #pending(): boolean {
    return this.#controlDirty || (this.#logs?.pending ?? false);
  }

  #markControl(delay: number, counted = true): void {
    this.#controlDirty = true;
    if (counted) this.#changeSeq++;
    this.#schedule(delay);
  }

  #schedule(delay: number): void {
    if (this.#closed || !this.dataDir) return;
    this.#timer.at(delay, () => void this.#writeNow().catch(() => {}));
  }

  /** A round now (sharing one already asked for); resolves when what is pending is on disk, rejects if that failed. */
  #writeNow(): Promise<void> {
    this.#timer.cancel();
    if (!this.#pending()) return this.#rounds.onIdle();
    return this.#rounds.submit().then(() => {});
  }

  /** One write round: what is pending goes to disk; a failure is reported once per run and retried with backoff. */
  async #round(): Promise<void> {
    if (!this.#pending()) {
      // Everything counted was written by an earlier round (a caller asked after it began).
      this.#durableSeq = this.#changeSeq;
      return;
    }
    try {
      await this.#writeOnce();
    } catch (error) {
      const first = this.#failures.failed(error);
      // Once per run of failures, not once per retry.
      if (first) this.#report(`writing state failed (retrying until it succeeds): ${this.#failures.lastError}`);
      // The project's one backoff formula. Disk writes are scheduled on real time (not the
      // emulator's clock, which tests move): a write is I/O, not modelled time.
      this.#schedule(createBackoff({ baseMs: Math.max(this.#flushMs, 10), maxMs: this.#maxRetryMs }, cryptoRandom).delayFor(this.#failures.attempts + 1));
      throw error;
    }
    const recovered = this.#failures.recovered();
    if (recovered > 0) this.#report(`writing state recovered after ${recovered} failed attempt(s)`);
  }

  async #writeOnce(): Promise<void> {
    this.#writes++;
    // Both parts take what they write synchronously, here: everything counted so far is in this round.
    const target = this.#changeSeq;
    const results = await Promise.allSettled([this.#writeControl(), this.#logs?.pending ? this.#logs.flush() : undefined]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    this.#durableSeq = Math.max(this.#durableSeq, target);
  }

  /** The changed records appended to the log, or the whole state written when it is due (see the header). */
  async #writeControl(): Promise<void> {
    const dataDir = this.dataDir;
    if (!this.#controlDirty || !dataDir) return;
    this.#controlDirty = false;
    const taken = this.#dirty.take();
    const position = this.#random?.position?.();
    const at = position === undefined ? undefined : Math.max(position, this.#randomPosition);
    try {
      if (taken.all || this.#snapshotBytes < WHOLE_BELOW_BYTES || this.#logBytes > this.#snapshotBytes) await this.#writeWhole(dataDir, at);
      else {
        const text = changeLines(this.#data, taken.changed, at !== this.#writtenPosition ? at : undefined);
        if (!text) return;
        await appendFileDurable(join(dataDir, CHANGE_LOG), text);
        this.#logBytes += Buffer.byteLength(text);
      }
      this.#writtenPosition = at;
      this.#controlWrites++;
    } catch (error) {
      this.#dirty.restore(taken);
      this.#controlDirty = true;
      throw error;
    }
  }

  /** `state.json` whole (atomic), then the log emptied: state.json holds all of it now. */
  async #writeWhole(dataDir: string, position: number | undefined): Promise<void> {
    const file = controlOf(this.#data);
    const text = JSON.stringify(position === undefined ? file : { ...file, random_position: position });
    await writeFileAtomic(join(dataDir, "state.json"), text);
    if (this.#logBytes > 0) await writeFileDurable(join(dataDir, CHANGE_LOG), "");
    this.#snapshotBytes = Buffer.byteLength(text);
    this.#logBytes = 0;
  }
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
