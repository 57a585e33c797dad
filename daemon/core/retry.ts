/**
 * The daemon's one module for waiting and trying again: backoff with jitter,
 * an abortable sleep on the injected clock, a retry loop that honours a
 * server's "retry after" and never retries a permanent refusal, and per-key
 * serial execution (one chat's messages in order, chats side by side).
 * The relay and every adapter use these; none keeps its own.
 */
import type { Clock } from "../../shared/clock.js";
import type { Random } from "../../shared/random.js";

/** Backoff settings. */
export interface BackoffPolicy {
  /** First delay, ms. */
  baseMs: number;
  /** Ceiling of any one delay, ms. */
  maxMs: number;
}

/**
 * Exponential backoff with equal jitter: half fixed, half random, capped.
 * `attempt` counts from 1 (the delay after the first failure).
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: Random): number {
  const full = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(full / 2 + (random.float() * full) / 2);
}

/** Thrown by `sleep` and `retry` when their signal aborts (the reason, when it is an Error, is thrown instead). */
export class AbortedError extends Error {
  override readonly name = "AbortedError";
  constructor() {
    super("aborted");
  }
}

const abortReason = (signal: AbortSignal): unknown => (signal.reason instanceof Error ? signal.reason : new AbortedError());

/** Waits `ms` on `clock`; rejects at once when `signal` aborts (before or during). */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const onAbort = () => {
      timer.cancel();
      reject(abortReason(signal!));
    };
    const timer = clock.setTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Like `sleep`, but resolves (never rejects) when aborted: for loops that check their own state after a pause. */
export function pause(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return sleep(clock, ms, signal).catch(() => undefined);
}

/** How a failure should be treated. */
export type RetryVerdict =
  /** Never again (a permanent refusal): the error is thrown at once. */
  | { retry: false }
  /** Worth another try; `afterMs` (a server's retry-after) is waited at least. */
  | { retry: true; afterMs?: number };

export interface RetryOptions {
  clock: Clock;
  random: Random;
  /** Tries in all, the first included (at least 1). */
  maxAttempts: number;
  backoff: BackoffPolicy;
  /** Decides per failure; default: retry everything. */
  classify?(error: unknown): RetryVerdict;
  /** Called before each wait (for logs and metrics). */
  onRetry?(error: unknown, attempt: number, delayMs: number): void;
  /** Aborts waiting (the current try is the caller's to abort). */
  signal?: AbortSignal;
}

/**
 * Runs `op` until it succeeds, a failure is classified permanent, or
 * `maxAttempts` tries have failed; then throws the last error. The wait
 * before try n+1 is the larger of the backoff and the server's retry-after.
 */
export async function retry<T>(op: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    if (options.signal?.aborted) throw abortReason(options.signal);
    try {
      return await op(attempt);
    } catch (error) {
      const verdict = options.classify?.(error) ?? { retry: true };
      if (!verdict.retry || attempt >= options.maxAttempts) throw error;
      const delay = Math.max(backoffDelay(attempt, options.backoff, options.random), verdict.afterMs ?? 0);
      options.onRetry?.(error, attempt, delay);
      await sleep(options.clock, delay, options.signal);
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
