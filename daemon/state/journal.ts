/**
 * An append-only JSON-lines file with group commit: every `append` resolves
 * only after its lines are on disk (written O_DSYNC, or written and fdatasync'ed), and appends that arrive
 * while a sync is under way share the next one (50 people typing at once cost
 * a handful of fsyncs, not 50). A torn last line left by a crash is cut off at
 * open, so later appends never glue onto it.
 */
import { constants as fsConstants } from "node:fs";
import { open, readFile, type FileHandle } from "node:fs/promises";
import { GroupCommit } from "../../shared/group-commit.js";

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

/** What the journal writes, in order: lines, or a compaction (always a batch of its own). */
type Op = { kind: "data"; data: string } | { kind: "compact"; snapshot: () => Promise<void> };

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
  return new Journal(initial, goodBytes, handle);
}

/** A compaction alone; else the appends up to the next compaction. */
function runOf(waiting: readonly Op[]): number {
  if (waiting[0]!.kind === "compact") return 1;
  const next = waiting.findIndex((op) => op.kind === "compact");
  return next < 0 ? waiting.length : next;
}

class Journal implements JournalFile {
  readonly initial: readonly unknown[];
  readonly #handle: FileHandle;
  /** Bytes in the file plus bytes of appends not yet written. */
  #size: number;
  /** Bytes of appends not yet written: what the file holds once a compaction has emptied it. */
  #queuedBytes = 0;
  #closed = false;
  /**
   * One write at a time; appends that arrive meanwhile share the next. The first
   * starts at once ("now"), as a lone append should; a compaction goes alone.
   */
  readonly #writes = new GroupCommit<Op>({
    gather: "now",
    take: runOf,
    commit: (batch) => this.#write(batch),
  });

  constructor(initial: readonly unknown[], size: number, handle: FileHandle) {
    this.initial = initial;
    this.#size = size;
    this.#handle = handle;
  }

  get size(): number {
    return this.#size;
  }

  async append(records: readonly unknown[]): Promise<void> {
    if (this.#closed) throw new JournalClosedError();
    if (!records.length) return;
    const data = records.map((r) => `${JSON.stringify(r)}\n`).join("");
    const bytes = Buffer.byteLength(data, "utf8");
    this.#size += bytes;
    this.#queuedBytes += bytes;
    await this.#writes.submit({ kind: "data", data });
  }

  async compact(snapshot: () => Promise<void>): Promise<void> {
    if (this.#closed) throw new JournalClosedError();
    await this.#writes.submit({ kind: "compact", snapshot });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#writes.close();
    await this.#handle.close();
  }

  async #write(batch: readonly Op[]): Promise<void> {
    const head = batch[0]!;
    if (head.kind === "compact") {
      // Everything queued before is on disk; nothing queued after is written
      // until the file is empty again, so the snapshot covers exactly what goes.
      await head.snapshot();
      await this.#handle.truncate(0);
      await this.#handle.datasync();
      this.#size = this.#queuedBytes;
      return;
    }
    const data = batch.map((op) => (op.kind === "data" ? op.data : "")).join("");
    this.#queuedBytes -= Buffer.byteLength(data, "utf8");
    // "a" mode: the kernel appends at the end whatever the position.
    await this.#handle.write(data);
    if (DSYNC_APPEND === undefined) await this.#handle.datasync();
  }
}
