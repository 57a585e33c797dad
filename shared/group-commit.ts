/**
 * Group commit: while one batch is being written, the items that arrive
 * gather, and go together as the next batch. One write (an fsync, a database
 * statement) then carries what many callers asked for, and a caller alone is
 * written at once. The daemon's journal file, its PostgreSQL write batch and
 * the emulator's store all write this way; this class is the one copy.
 *
 * The contract:
 * - `submit(item)` resolves once the batch that carried the item is
 *   committed (with the item's own result), and rejects with the error when
 *   that batch failed. Every item of a batch shares its fate.
 * - At most one batch is being committed at a time; batches go in
 *   submission order, and an item submitted while a batch is being committed
 *   is never in that batch: it goes in a later one.
 * - A batch is taken from the front of the waiting items when the previous
 *   one settles (`take` says how many; default all of them). The first batch
 *   after an idle spell starts when `gather` says (`"now"`: inside `submit`;
 *   `"microtask"`: once the submitting code's synchronous run is over, so its
 *   submissions go together; or a function that calls `start` later).
 * - An item whose `signal` aborts while it waits leaves the queue and
 *   rejects with the signal's reason; once in a batch, it can no longer be
 *   taken back, and the abort is ignored.
 * - `close()` refuses new items (`GroupCommitClosedError`) and resolves once
 *   every item already submitted is settled.
 *
 * Lifecycle, observable as p-queue's is: `size` (waiting), `pending` (in the
 * batch being committed), `batches` (started so far) and `onIdle()`.
 */

export class GroupCommitClosedError extends Error {
  override readonly name = "GroupCommitClosedError";
  constructor() {
    super("No more writes: the group commit is closed.");
  }
}

export interface GroupCommitOptions<T, R> {
  /**
   * Writes one batch (never empty). Resolves with one result per item, in
   * order, or with nothing (every item then gets `undefined`); a rejection
   * rejects every item of the batch.
   */
  commit(batch: readonly T[]): Promise<readonly R[] | undefined | void>;
  /** How many of the waiting items, from the front, go in the next batch (clamped to 1..all). Default: all. */
  take?(waiting: readonly T[]): number;
  /** When the first batch after an idle spell starts (see the contract). Default `"microtask"`. */
  gather?: "now" | "microtask" | ((start: () => void) => void);
}

interface Waiting<T, R> {
  item: T;
  resolve(result: R | undefined): void;
  reject(error: unknown): void;
  /** Removes the abort listener (the item left the queue). */
  detach(): void;
}

export class GroupCommit<T, R = void> {
  readonly #commit: GroupCommitOptions<T, R>["commit"];
  readonly #take: GroupCommitOptions<T, R>["take"];
  readonly #gather: NonNullable<GroupCommitOptions<T, R>["gather"]>;
  /** Items submitted and not yet in a batch, in submission order. */
  #waiting: Waiting<T, R>[] = [];
  /** Items of the batch being committed; empty while no batch is. */
  #inFlight = 0;
  /** True from the moment a drain is scheduled or running until the queue is empty and no batch runs. */
  #active = false;
  /** Once set, `submit` refuses; never unset. */
  #closed = false;
  /** Batches started so far. */
  #batches = 0;
  /** Resolvers of `onIdle()` callers, settled when `#active` turns false. */
  #idleWaiters: (() => void)[] = [];

  constructor(options: GroupCommitOptions<T, R>) {
    this.#commit = options.commit;
    this.#take = options.take;
    this.#gather = options.gather ?? "microtask";
  }

  /** Items waiting for a batch. */
  get size(): number {
    return this.#waiting.length;
  }

  /** Items in the batch being committed (0 when none is). */
  get pending(): number {
    return this.#inFlight;
  }

  /** Batches started so far. */
  get batches(): number {
    return this.#batches;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Resolves with the item's result (undefined when `commit` gave none) once its batch is committed. */
  submit(item: T, options: { signal?: AbortSignal } = {}): Promise<R | undefined> {
    if (this.#closed) return Promise.reject(new GroupCommitClosedError());
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<R | undefined>((resolve, reject) => {
      const entry: Waiting<T, R> = { item, resolve, reject, detach: () => {} };
      if (signal) {
        const onAbort = () => {
          const at = this.#waiting.indexOf(entry);
          if (at < 0) return; // already in a batch: it cannot be taken back
          this.#waiting.splice(at, 1);
          reject(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        entry.detach = () => signal.removeEventListener("abort", onAbort);
      }
      this.#waiting.push(entry);
      if (!this.#active) {
        this.#active = true;
        this.#schedule();
      }
    });
  }

  /** Resolves once nothing waits and no batch is being committed. */
  onIdle(): Promise<void> {
    if (!this.#active) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Refuses new items; resolves once everything submitted before has settled. */
  close(): Promise<void> {
    this.#closed = true;
    return this.onIdle();
  }

  #schedule(): void {
    const start = () => void this.#drain();
    if (this.#gather === "now") start();
    else if (this.#gather === "microtask") queueMicrotask(start);
    else this.#gather(start);
  }

  async #drain(): Promise<void> {
    while (this.#waiting.length) {
      const batch = this.#next();
      this.#inFlight = batch.length;
      this.#batches++;
      try {
        const results = await this.#commit(batch.map((w) => w.item));
        for (const [i, w] of batch.entries()) w.resolve(results ? results[i] : undefined);
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
      this.#inFlight = 0;
    }
    this.#active = false;
    const idle = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of idle) resolve();
  }

  /** The next batch, out of the waiting queue. */
  #next(): Waiting<T, R>[] {
    const wanted = this.#take ? this.#take(this.#waiting.map((w) => w.item)) : this.#waiting.length;
    const count = Math.min(this.#waiting.length, Math.max(1, Math.floor(wanted)));
    const batch = this.#waiting.splice(0, count);
    for (const w of batch) w.detach();
    return batch;
  }
}
