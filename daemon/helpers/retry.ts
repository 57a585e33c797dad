/**
 * The daemon's one module for trying again: a retry loop that honours a
 * server's "retry after", never retries a permanent refusal, and can wait for
 * something to come up without using up a try; and per-key serial execution
 * (one chat's messages in order, chats side by side). The relay, the service
 * call and every adapter use these; none keeps its own loop. The delay
 * formula is `shared/backoff.ts` and the one abortable sleep is
 * `Clock.sleep` (`shared/clock.ts`), both shared with the emulator.
 */
import { abortReason, type Clock } from "../../shared/clock.js";
import { createBackoff, type BackoffPolicy } from "../../shared/backoff.js";
import type { Random } from "../../shared/random.js";

/** `clock.sleep`: waits `ms`, rejects at once when `signal` aborts (before or during). */
export const sleep = (clock: Clock, ms: number, signal?: AbortSignal): Promise<void> => clock.sleep(ms, signal);

/** `clock.sleep` that resolves (never rejects) when aborted: for loops that check their own state after a pause. */
export const pause = (clock: Clock, ms: number, signal?: AbortSignal): Promise<void> => clock.sleep(ms, signal).catch(() => undefined);

/** How a failure should be treated. */
export type RetryVerdict =
  /** Never again (a permanent refusal): the error is thrown at once. */
  | { retry: false }
  /** Worth another try; `afterMs` (a server's retry-after) is waited at least. */
  | { retry: true; afterMs?: number }
  /**
   * Try again once `wait()` resolves, and do not count this failure as a try:
   * for a wait bounded by time rather than tries (an instance that is still
   * starting). `wait` throws to give up; `retry` then throws that.
   */
  | { retry: true; wait: () => Promise<void>; counts: false };

export interface RetryOptions {
  clock: Clock;
  random: Random;
  /** Tries in all, the first included (at least 1). Tries answered by a `counts: false` verdict are not counted. */
  maxAttempts: number;
  backoff: BackoffPolicy;
  /** Decides per failure; default: retry everything. */
  classify?(error: unknown): RetryVerdict;
  /** Called before each backoff wait (for logs and metrics); not before a `counts: false` wait. */
  onRetry?(error: unknown, attempt: number, delayMs: number): void;
  /** Aborts waiting, with the signal's reason (the current try is the caller's to abort). Default: none. */
  signal?: AbortSignal;
}

/**
 * Runs `op` until it succeeds, a failure is classified permanent, or
 * `maxAttempts` counted tries have failed; then throws the last error. The
 * wait before try n+1 is the larger of the backoff and the server's
 * retry-after, or the verdict's own `wait()`.
 */
export async function retry<T>(op: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const backoff = createBackoff(options.backoff, options.random);
  let attempt = 1;
  for (;;) {
    if (options.signal?.aborted) throw abortReason(options.signal);
    try {
      return await op(attempt);
    } catch (error) {
      const verdict = options.classify?.(error) ?? { retry: true };
      if (!verdict.retry) throw error;
      if ("wait" in verdict) {
        await verdict.wait();
        continue;
      }
      if (attempt >= options.maxAttempts) throw error;
      const delay = Math.max(backoff.delayFor(attempt), verdict.afterMs ?? 0);
      options.onRetry?.(error, attempt, delay);
      await options.clock.sleep(delay, options.signal);
      attempt++;
    }
  }
}

/**
 * Per-key serial execution: tasks with the same key run one after another in
 * the order given, different keys run side by side. A failed task does not
 * stop the ones queued behind it (its own promise rejects). Keys are forgotten
 * once idle, so the map stays as small as the work in flight.
 */
export interface SerialQueue<K> {
  run<T>(key: K, task: () => Promise<T>): Promise<T>;
  /** Keys with work queued or running. */
  readonly size: number;
  /** Resolves once nothing is queued or running (tasks added meanwhile included). */
  idle(): Promise<void>;
}

export function createSerialQueue<K>(): SerialQueue<K> {
  const tails = new Map<K, Promise<void>>();
  return {
    run<T>(key: K, task: () => Promise<T>): Promise<T> {
      const before = tails.get(key) ?? Promise.resolve();
      const result = before.then(task);
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    get size() {
      return tails.size;
    },
    async idle() {
      while (tails.size) await Promise.allSettled([...tails.values()]);
    },
  };
}
