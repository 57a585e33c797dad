/**
 * Exponential backoff with jitter: the one formula both halves use (the
 * daemon's retries and reconnects, the emulator's own waits). Pure: the
 * randomness comes in as a dependency, so tests fix it.
 */
import type { Random } from "./random.js";

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

/**
 * A run of failures and the wait each one earns: the count lives here, not in
 * its users (the daemon's one reconnect loop and one retry loop, the
 * emulator's store). `failed()` counts a failure and returns the delay
 * before the next try; `reset()` after a success starts the next run from the
 * base delay. `delayFor(n)` is for a loop whose count is kept elsewhere (a
 * failure log, a retry's attempt number).
 */
export interface Backoff {
  /** Failures since the last `reset()`. */
  readonly failures: number;
  /** Counts one more failure; the delay (ms) to wait before trying again. */
  failed(): number;
  /** A success: the next failure waits the base delay again. */
  reset(): void;
  /** The delay after the `attempt`-th failure in a row (from 1), without counting. */
  delayFor(attempt: number): number;
}

export function createBackoff(policy: BackoffPolicy, random: Random): Backoff {
  let failures = 0;
  return {
    get failures() {
      return failures;
    },
    failed: () => backoffDelay(++failures, policy, random),
    reset() {
      failures = 0;
    },
    delayFor: (attempt) => backoffDelay(attempt, policy, random),
  };
}
