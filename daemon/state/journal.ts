/**
 * An append-only JSON-lines file with group commit: every `append` resolves
 * only after its lines are on disk (written O_DSYNC, or written and fdatasync'ed), and appends that arrive
 * while a sync is under way share the next one (50 people typing at once cost
 * a handful of fsyncs, not 50). A torn last line left by a crash is cut off at
 * open, so later appends never glue onto it.
 */
import { constants as fsConstants } from "node:fs";
import { open, readFile, type FileHandle } from "node:fs/promises";

/**
 * The journal is opened O_DSYNC where the platform has it: each write then
 * returns once its data is on disk, as write + fdatasync did, in one call.
 * Each fs call is a trip to libuv's thread pool (futexes and a wake-up of the
 * loop); a turn journals about four times, so at one chat this halved the
 * trips and cut the daemon's CPU per turn. Elsewhere: "a+" and an explicit
 * fdatasync after each write.
 */
const DSYNC_APPEND = fsConstants.O_DSYNC === undefined ? undefined : fsConstants.O_RDWR | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_DSYNC;

export interface JournalFile {
  /** Records read at open, in file order (a torn tail excluded). */
  readonly initial: readonly unknown[];
  /** Current size in bytes, including lines still being written. */
  readonly size: number;
  /** Durably appends the records as one write, in call order. */
  append(records: readonly unknown[]): Promise<void>;
  /**
   * In order with appends: once everything before is on disk, runs `snapshot`
   * (which must capture the caller's state synchronously at its start and
   * persist it), then empties the file. Appends made meanwhile wait.
   */
  compact(snapshot: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export class JournalClosedError extends Error {
  override readonly name = "JournalClosedError";
  readonly status = 503;
  constructor() {
    super("The journal is closed.");
  }
}

type Op =
  | { kind: "data"; data: string; resolve(): void; reject(error: unknown): void }
  | { kind: "compact"; snapshot: () => Promise<void>; resolve(): void; reject(error: unknown): void };

export async function openJournalFile(path: string): Promise<JournalFile> {
  let text = "";
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "ENOENT")) throw error;
  }
  const initial: unknown[] = [];
  let goodBytes = 0;
  let offset = 0;
  while (offset < text.length) {
    const end = text.indexOf("\n", offset);
    if (end < 0) break; // no newline: a torn write
    const line = text.slice(offset, end);
    let parsed: unknown;
    try {
      parsed = line.trim() ? JSON.parse(line) : undefined;
    } catch {
      break; // garbage: everything from here on is unreliable
    }
    if (parsed !== undefined) initial.push(parsed);
    offset = end + 1;
    goodBytes += Buffer.byteLength(line, "utf8") + 1;
  }

  const handle: FileHandle = await open(path, DSYNC_APPEND ?? "a+", 0o600);
  const stat = await handle.stat();
  if (stat.size !== goodBytes) {
    await handle.truncate(goodBytes);
    await handle.datasync();
  }

  let size = goodBytes;
  const queue: Op[] = [];
  let running: Promise<void> | undefined;
  let closed = false;

  async function drain(): Promise<void> {
    while (queue.length) {
      const head = queue[0]!;
      if (head.kind === "compact") {
        queue.shift();
        try {
          // Everything queued before is on disk; nothing queued after is written
          // until the file is empty again, so the snapshot covers exactly what goes.
          await head.snapshot();
          await handle.truncate(0);
          await handle.datasync();
          size = queue.reduce((n, op) => n + (op.kind === "data" ? Buffer.byteLength(op.data, "utf8") : 0), 0);
          head.resolve();
        } catch (error) {
          head.reject(error);
        }
        continue;
      }
      const batch: Extract<Op, { kind: "data" }>[] = [];
      while (queue[0]?.kind === "data") batch.push(queue.shift() as Extract<Op, { kind: "data" }>);
      try {
        // "a" mode: the kernel appends at the end whatever the position.
        await handle.write(batch.map((w) => w.data).join(""));
        if (DSYNC_APPEND === undefined) await handle.datasync();
        for (const w of batch) w.resolve();
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    running = undefined;
  }

  const enqueue = (op: Op) => {
    queue.push(op);
    running ??= drain();
  };

  return {
    initial,
    get size() {
      return size;
    },
    append(records) {
      if (closed) return Promise.reject(new JournalClosedError());
      if (!records.length) return Promise.resolve();
      const data = records.map((r) => `${JSON.stringify(r)}\n`).join("");
      size += Buffer.byteLength(data, "utf8");
      return new Promise<void>((resolve, reject) => enqueue({ kind: "data", data, resolve, reject }));
    },
    compact(snapshot) {
      if (closed) return Promise.reject(new JournalClosedError());
      return new Promise<void>((resolve, reject) => enqueue({ kind: "compact", snapshot, resolve, reject }));
    },
    async close() {
      if (closed) return;
      closed = true;
      while (running) await running;
      await handle.close();
    },
  };
}
