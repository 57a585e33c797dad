/**
 * One conformance run, in steps: run the checks, then (always, also after a
 * failure or an interruption) undo what they made, then report. Callable in
 * process; the command (command.ts) adds signals and files.
 */
import { type Clock, systemClock } from "../shared/clock.js";
import { cryptoRandom, hex, type Random } from "../shared/random.js";
import type { Check, RunInfo } from "./check.js";
import { CHECKS } from "./checks/index.js";
import { CleanupLedger, type CleanupOutcome } from "./cleanup.js";
import { createHttp } from "./exchange.js";
import { type CheckResult, runChecks } from "./runner.js";
import { createCleanup } from "./sweeps.js";
import { contractValidation, type ValidateExchange } from "./validator.js";

export interface ConformanceOptions {
  baseUrl: string;
  key: string;
  /** The model named in message calls (default: one per provider). */
  model?: string;
  allowSignup?: boolean;
  /** Longest one request may take, ms. */
  requestTimeoutMs?: number;
  /** Longest wait for the instance to be `running`, ms. */
  provisionTimeoutMs?: number;
  /** How long the cleanup keeps retrying, ms. */
  cleanupTimeoutMs?: number;
  /** Check ids or areas (`messaging`) not to run; what needs them is skipped too. */
  skip?: readonly string[];
  /** Aborting it stops the checks; the cleanup still runs. */
  signal?: AbortSignal;
  /** Aborting it abandons the cleanup too (a second Ctrl-C). */
  cleanupSignal?: AbortSignal;
  onResult?: (result: CheckResult) => void;
  /** Told once the checks are over and the cleanup starts. */
  onCleanup?: () => void;
}

export interface ConformanceDeps {
  clock?: Clock;
  random?: Random;
  validate?: ValidateExchange;
  checks?: readonly Check[];
}

export interface ConformanceRun {
  runId: string;
  results: CheckResult[];
  cleanup: CleanupOutcome[];
  interrupted: boolean;
  /** Every check passed or was skipped, and the cleanup left nothing behind. */
  ok: boolean;
}

export async function runConformance(options: ConformanceOptions, deps: ConformanceDeps = {}): Promise<ConformanceRun> {
  const clock = deps.clock ?? systemClock;
  const random = deps.random ?? cryptoRandom;
  const runId = hex(random, 4);
  const run: RunInfo = {
    runId,
    prefix: `${RUN_PREFIX}${runId}`,
    ...(options.model !== undefined ? { model: options.model } : {}),
    allowSignup: options.allowSignup === true,
    provisionTimeoutMs: options.provisionTimeoutMs ?? 300_000,
  };
  const http = createHttp({ baseUrl: options.baseUrl, key: options.key, timeoutMs: options.requestTimeoutMs ?? 120_000 });
  const ledger = new CleanupLedger();
  const signal = options.signal ?? new AbortController().signal;

  const results = await runChecks(deps.checks ?? CHECKS, {
    http,
    validate: deps.validate ?? contractValidation(),
    cleanup: createCleanup(http, ledger, run.prefix),
    run,
    clock,
    signal,
    ...(options.onResult ? { onResult: options.onResult } : {}),
    ...(options.skip ? { skip: options.skip } : {}),
  });

  options.onCleanup?.();
  const cleanup = await ledger.run({ clock, random }, options.cleanupTimeoutMs ?? 60_000, options.cleanupSignal ?? new AbortController().signal);
  const ok = !signal.aborted && results.every((r) => r.outcome !== "fail") && cleanup.every((c) => c.ok);
  return { runId, results, cleanup, interrupted: signal.aborted, ok };
}

/** Every run's names start with this; `sweepLeftovers` removes what carries it. */
export const RUN_PREFIX = "conformance-";

/**
 * What earlier runs left when they could not clean up (a SIGKILL, a machine
 * that died): instances and active scoped keys named `conformance-*`, of any
 * run. Nothing else is touched; no check runs.
 */
export async function sweepLeftovers(
  options: Pick<ConformanceOptions, "baseUrl" | "key" | "requestTimeoutMs" | "cleanupTimeoutMs" | "cleanupSignal">,
  deps: Pick<ConformanceDeps, "clock" | "random"> = {},
): Promise<CleanupOutcome[]> {
  const http = createHttp({ baseUrl: options.baseUrl, key: options.key, timeoutMs: options.requestTimeoutMs ?? 120_000 });
  const ledger = new CleanupLedger();
  const cleanup = createCleanup(http, ledger, RUN_PREFIX);
  cleanup.instances();
  cleanup.keys();
  return ledger.run(
    { clock: deps.clock ?? systemClock, random: deps.random ?? cryptoRandom },
    options.cleanupTimeoutMs ?? 60_000,
    options.cleanupSignal ?? new AbortController().signal,
  );
}

/** Of `names` (for `skip`), those that are neither a check's id nor an area of checks. */
export const unknownCheckNames = (names: readonly string[], checks: readonly Check[] = CHECKS): string[] =>
  names.filter((name) => !checks.some((c) => c.id === name || c.id.startsWith(`${name}.`)));
