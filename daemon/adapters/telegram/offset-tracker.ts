/**
 * Long polling's bookkeeping, pure (no I/O, no timers): which update id the
 * next `getUpdates` confirms, which updates of a batch still have to be
 * handed to the core, and when the confirmed offset moves.
 *
 * Telegram forgets every update below the `offset` a poll asks for, so the
 * offset may only move over updates the core accepted. Within a batch the
 * chats are handed over side by side, so they complete out of order, and a
 * chat's refusal holds its later updates back: the offset moves over the
 * longest handled prefix of the batch; updates beyond it that were handled
 * are remembered, so when they come again they are not handed over twice.
 */

/**
 * Telegram holds an update 24 hours, and after a week without updates picks
 * the next id at random (possibly below a saved offset, which would then skip
 * it). An offset older than a day guards nothing still held: it is dropped.
 */
export const OFFSET_TTL_MS = 24 * 60 * 60 * 1000;

/** The offset as persisted: the last update id the core accepted, and when it was saved. */
export interface SavedOffset {
  updateId: number;
  /** Epoch ms; absent in state written before it was recorded (then the offset never expires). */
  savedAt?: number | undefined;
}

export interface OffsetTrackerOptions {
  /** What the last run persisted, if anything. */
  saved?: SavedOffset | undefined;
  /** Epoch ms now, to judge the saved offset's age. */
  now: number;
  /** A saved offset older than this is dropped. Default `OFFSET_TTL_MS` (a day). */
  ttlMs?: number;
}

/** How the saved offset was taken up at start. */
export type OffsetOrigin = "none" | "resumed" | "expired";

/** What `settle` decided for one batch. */
export interface Settled {
  /** The new offset, when it moved (persist it before the next poll confirms it to Telegram). */
  moved: number | undefined;
  /** Every update of the batch is handled: poll again at once (else pause, then ask for the rest again). */
  complete: boolean;
}

export interface OffsetTracker {
  /** How the saved offset was taken up (for the log). */
  readonly origin: OffsetOrigin;
  /** The last update id the core accepted, over which the offset has moved; undefined before any. */
  readonly offset: number | undefined;
  /** `getUpdates`'s `offset` parameter: the first id not yet confirmed. */
  nextPollOffset(): number | undefined;
  /** The ids of `batch` that still need handing over (not handled already in an earlier poll). */
  pending(batch: readonly number[]): number[];
  /** Records that the core accepted (or deliberately dropped) update `id`. */
  handled(id: number): void;
  /** Moves the offset over the longest handled prefix of `batch` (its ids in Telegram's order). */
  settle(batch: readonly number[]): Settled;
}

/** A tracker that starts from `saved` (unless older than `ttlMs`). */
export function createOffsetTracker(options: OffsetTrackerOptions): OffsetTracker {
  return new UpdateOffsets(options);
}

/** The `OffsetTracker`: the confirmed offset and the updates handled beyond it. */
export class UpdateOffsets implements OffsetTracker {
  readonly origin: OffsetOrigin;
  /** Only ever moves up, and only over ids in `#handedOver`. */
  #offset: number | undefined;
  /** Ids above `#offset` the core already took (a chat before them was refused): not handed over twice. */
  readonly #handedOver = new Set<number>();

  constructor(options: OffsetTrackerOptions) {
    const ttlMs = options.ttlMs ?? OFFSET_TTL_MS;
    const saved = options.saved;
    const expired = saved?.savedAt !== undefined && options.now - saved.savedAt > ttlMs;
    this.origin = saved === undefined ? "none" : expired ? "expired" : "resumed";
    this.#offset = this.origin === "resumed" ? saved?.updateId : undefined;
  }

  get offset(): number | undefined {
    return this.#offset;
  }

  nextPollOffset(): number | undefined {
    return this.#offset === undefined ? undefined : this.#offset + 1;
  }

  pending(batch: readonly number[]): number[] {
    return batch.filter((id) => !this.#handedOver.has(id));
  }

  handled(id: number): void {
    this.#handedOver.add(id);
  }

  settle(batch: readonly number[]): Settled {
    let next = this.#offset;
    for (const id of batch) {
      if (!this.#handedOver.has(id)) break;
      next = id;
      this.#handedOver.delete(id);
    }
    const moved = next !== undefined && next !== this.#offset ? next : undefined;
    if (moved !== undefined) this.#offset = moved;
    return { moved, complete: batch.length === 0 || next === batch[batch.length - 1] };
  }
}
