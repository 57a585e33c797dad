/**
 * The emulator's store: state is read once at start and lives in memory;
 * changes are flushed by a coalescing writer, so a burst of requests costs one
 * atomic file write, not one each. `commit()` is for changes a client was
 * told about (flushed within `flushMs`); `touch()` is for bookkeeping such as
 * `last_used_at` that may wait longer.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { Low, Memory } from "lowdb";
import { AtomicJsonFile } from "./atomic-file.js";
import { acquireDirLock } from "../../shared/durable-files.js";
import { emptyState, STATE_VERSION, type EmulatorState } from "./state.js";

export interface StoreOptions {
  /** Directory for `state.json`; omit for a memory-only store. */
  dataDir?: string;
  /** Longest a committed change waits before it is on disk, ms. */
  flushMs?: number;
  /** Longest a touched (bookkeeping) change waits, ms. */
  touchFlushMs?: number;
}

export interface Store {
  readonly data: EmulatorState;
  readonly dataDir: string | undefined;
  commit(): void;
  touch(): void;
  /** Writes now if anything is pending; resolves when it is on disk. */
  flush(): Promise<void>;
  /** Swaps in a whole new state (reset, snapshot import) and commits it. */
  replace(state: EmulatorState): void;
  close(): Promise<void>;
  /** Number of file writes so far (tests and benchmarks check coalescing). */
  readonly writes: number;
}

export async function openStore(options: StoreOptions = {}): Promise<Store> {
  const flushMs = options.flushMs ?? 25;
  const touchFlushMs = options.touchFlushMs ?? 5_000;
  const dataDir = options.dataDir ? resolve(options.dataDir) : undefined;
  let release = () => {};
  let db: Low<EmulatorState>;
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    const lock = acquireDirLock(dataDir, "emulator");
    release = () => lock.release();
    db = new Low(new AtomicJsonFile<EmulatorState>(join(dataDir, "state.json")), emptyState());
  } else {
    db = new Low(new Memory<EmulatorState>(), emptyState());
  }
  try {
    await db.read();
  } catch (error) {
    release();
    throw new Error(`Cannot read ${dataDir}/state.json: ${(error as Error).message}`);
  }
  if (db.data.version !== STATE_VERSION) {
    release();
    throw new Error(`state.json has version ${db.data.version}; this emulator reads version ${STATE_VERSION}.`);
  }

  let timer: NodeJS.Timeout | undefined;
  let dueAt = Infinity;
  let dirty = false;
  let writing: Promise<void> = Promise.resolve();
  let writes = 0;
  let closed = false;

  const writeNow = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    dueAt = Infinity;
    if (!dirty) return writing;
    dirty = false;
    // Serialise writes: the next one starts after the previous settled. A failed
    // write must not poison the chain, and leaves the state dirty so the next
    // commit or flush writes it again.
    writing = writing
      .catch(() => {})
      .then(async () => {
        writes++;
        try {
          await db.write();
        } catch (error) {
          dirty = true;
          throw error;
        }
      });
    return writing;
  };

  const schedule = (delay: number) => {
    dirty = true;
    if (closed || !dataDir) return;
    const at = Date.now() + delay;
    if (at >= dueAt) return;
    if (timer) clearTimeout(timer);
    dueAt = at;
    timer = setTimeout(() => void writeNow().catch(reportWriteFailure), delay);
    timer.unref?.();
  };

  return {
    get data() {
      return db.data;
    },
    dataDir,
    commit: () => schedule(flushMs),
    touch: () => schedule(touchFlushMs),
    flush: () => (dataDir ? writeNow() : Promise.resolve()),
    replace(state) {
      db.data = state;
      schedule(flushMs);
    },
    async close() {
      if (closed) return;
      if (dataDir) await writeNow();
      closed = true;
      release();
    },
    get writes() {
      return writes;
    },
  };
}

function reportWriteFailure(error: unknown): void {
  // Nothing to answer: the next commit retries. Say it loudly once per failure.
  console.error(`emulator: writing state failed: ${(error as Error).message}`);
}
