/**
 * Types and small helpers the relay's parts share, and the label values the
 * metrics module uses (one definition, so a new outcome cannot be counted
 * under a name the dashboard does not know).
 */
import { ServiceError } from "../../shared/client/index.js";
import { JournalClosedError } from "../state/journal.js";
import { LeaseLostError } from "../vocabulary/state-errors.js";
import type { TranscriptionOutcome } from "../transcription/transcriber.js";

export const INBOUND_OUTCOMES = ["accepted", "duplicate", "denied", "not_mentioned", "unrouted", "busy", "deferred", "command", "empty"] as const;
export type InboundOutcome = (typeof INBOUND_OUTCOMES)[number];

export const TURN_OUTCOMES = ["answered", "failed", "expired", "route_stopped", "instance_missing", "undeliverable"] as const;
export type TurnOutcome = (typeof TURN_OUTCOMES)[number];

export const RETRY_REASONS = ["network", "server", "not_running", "context_reset", "send"] as const;
export type RetryReason = (typeof RETRY_REASONS)[number];

export type { TranscriptionOutcome } from "../transcription/transcriber.js";

export const SCHEDULE_OUTCOMES = ["fired", "duplicate", "skipped", "busy", "no_route", "silent"] as const;
export type ScheduleOutcome = (typeof SCHEDULE_OUTCOMES)[number];

/** What became of the agent's questions with buttons (core/questions/). */
export const QUESTION_EVENTS = ["asked", "answered", "expired", "closed", "refused_tap", "unknown_tool"] as const;
export type QuestionEvent = (typeof QUESTION_EVENTS)[number];

/** What the relay reports; the daemon maps it onto prom-client. */
export interface RelayMetrics {
  inbound(platform: string, outcome: InboundOutcome): void;
  /** seconds: from acceptance to the last chunk sent. */
  turn(instanceId: string, outcome: TurnOutcome, seconds: number): void;
  retry(instanceId: string, reason: RetryReason): void;
  /** route: the rule index, or "-" when none applies. */
  error(route: string, kind: string): void;
  /** A voice note transcribed, or why not. */
  transcription(platform: string, outcome: TranscriptionOutcome): void;
  /** A schedule's slot: fired, skipped past its grace, or its answer kept silent. */
  scheduled(schedule: string, outcome: ScheduleOutcome): void;
  /** A question asked, answered, expired, closed unanswered, a tap refused, or a call to a tool not offered. */
  question?(event: QuestionEvent): void;
}

export const noMetrics: RelayMetrics = { inbound() {}, turn() {}, retry() {}, error() {}, transcription() {}, scheduled() {} };

export class StoppingError extends Error {
  override readonly name = "StoppingError";
  readonly status = 503;
  constructor() {
    super("The daemon is stopping.");
  }
}

/** True for the errors a stopping daemon ends its work with (not failures to log): the one shutdown check. */
export function isShutdownError(error: unknown): boolean {
  // A lost lease is this node's stop for one account: the new owner carries its turns on.
  return error instanceof StoppingError || error instanceof JournalClosedError || error instanceof LeaseLostError;
}

/** The person stopped their turn (/stop): the abort reason of its call. */
export class TurnStoppedError extends Error {
  override readonly name = "TurnStoppedError";
  constructor() {
    super("The turn was stopped.");
  }
}

/** A newer message interrupted the turn (queue mode `interrupt`): its messages go again, with the newer ones. */
export class TurnInterruptedError extends Error {
  override readonly name = "TurnInterruptedError";
  constructor() {
    super("The turn was interrupted by a newer message.");
  }
}

/** An error for a log line: class, status and message, never a request body or header. */
export function errorSummary(error: unknown): Record<string, unknown> {
  if (error instanceof ServiceError) return { type: error.name, status: error.status, message: error.message, ...(error.code ? { code: error.code } : {}) };
  if (error instanceof Error) {
    const status = "status" in error && typeof error.status === "number" ? { status: error.status } : {};
    return { type: error.name, message: error.message, ...status };
  }
  return { message: String(error) };
}
