/**
 * What the kit must undo, and undoing it. A check registers a step before it
 * makes the thing the step removes, and each step sweeps by what it knows
 * before the answer (a name carrying the run's id, the organization's first
 * state), not by an id from the answer: a create whose answer was lost, or a
 * run stopped by a signal mid-request, still gets removed. Steps run newest
 * first, each retried with backoff until it succeeds or the deadline passes,
 * so a server that fails for a while still ends up clean.
 */
import { backoffDelay } from "../shared/backoff.js";
import { type Clock, sleepOn } from "../shared/clock.js";
import type { Random } from "../shared/random.js";

export interface CleanupStep {
  /** What it removes, for the report: `instances named conformance-1a2b3c4d-*`. */
  what: string;
  /** Throws when it could not finish; safe to run again (and when nothing is left to do). */
  undo(signal: AbortSignal): Promise<void>;
}

export interface CleanupOutcome {
  what: string;
  ok: boolean;
  attempts: number;
  /** The last failure, when it never succeeded. */
  error?: string;
}

export interface CleanupDeps {
  clock: Clock;
  random: Random;
}

const RETRY = { baseMs: 200, maxMs: 3_000 };

export class CleanupLedger {
  /** Steps in the order they were registered; each `what` at most once. */
  #steps: CleanupStep[] = [];

  /** Registers a step unless one with the same `what` already is (checks share sweeps). */
  add(step: CleanupStep): void {
    if (!this.#steps.some((s) => s.what === step.what)) this.#steps.push(step);
  }

  get size(): number {
    return this.#steps.length;
  }

  /** Runs every step, newest first, until each succeeds or `deadlineMs` (from now) passes; `signal` abandons it. */
  async run(deps: CleanupDeps, deadlineMs: number, signal: AbortSignal): Promise<CleanupOutcome[]> {
    const deadline = deps.clock.now() + deadlineMs;
    const outcomes: CleanupOutcome[] = [];
    for (const step of [...this.#steps].reverse()) outcomes.push(await this.#runStep(step, deps, deadline, signal));
    return outcomes;
  }

  async #runStep(step: CleanupStep, deps: CleanupDeps, deadline: number, signal: AbortSignal): Promise<CleanupOutcome> {
    let attempts = 0;
    let error = "";
    while (!signal.aborted) {
      attempts++;
      try {
        // Each attempt may take what is left of the deadline, at least 2 s: a step that hangs cannot stall the rest.
        await step.undo(AbortSignal.any([signal, AbortSignal.timeout(Math.max(2_000, deadline - deps.clock.now()))]));
        return { what: step.what, ok: true, attempts };
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      }
      const wait = backoffDelay(attempts, RETRY, deps.random);
      if (deps.clock.now() + wait > deadline) break;
      try {
        await sleepOn(deps.clock, wait, signal);
      } catch {
        break;
      }
    }
    return { what: step.what, ok: false, attempts, error: error || "abandoned" };
  }
}
