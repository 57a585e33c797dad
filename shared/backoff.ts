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
