/**
 * Reconnect delays: the daemon's one backoff (`core/retry.ts`: exponential
 * with equal jitter, half fixed, half random), so many daemons cut off
 * together do not all knock again at the same instant.
 */
import type { Random } from "../../../shared/random.js";
import { backoffDelay, type BackoffPolicy } from "../../core/retry.js";

export type { BackoffPolicy } from "../../core/retry.js";

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

/** The ceiling for attempt `n` (0-based); the delay lies in [ceiling / 2, ceiling]. */
export function backoffCeiling(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(attempt, 30));
}

/** `attempt` 0-based, as the adapter counts reconnects. */
export function reconnectDelay(attempt: number, random: Random, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  return backoffDelay(Math.min(attempt, 30) + 1, policy, random);
}
