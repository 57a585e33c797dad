/**
 * Reconnect delays: exponential with "equal jitter" (half fixed, half random),
 * so many daemons cut off together do not all knock again at the same instant.
 */
import type { Random } from "../../../shared/random.js";

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

/** The ceiling for attempt `n` (0-based); the delay lies in [ceiling / 2, ceiling). */
export function backoffCeiling(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(attempt, 30));
}

export function reconnectDelay(attempt: number, random: Random, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const ceiling = backoffCeiling(attempt, policy);
  return Math.floor(ceiling / 2 + (random.float() * ceiling) / 2);
}
