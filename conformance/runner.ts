/**
 * Runs the checks in order: each gets the facts earlier ones left, its
 * exchanges are judged by the validator, and it ends passed, failed (its own
 * finding, a drift, or a broken connection, each said as such) or skipped (a
 * fact it needs is missing, or the run was interrupted).
 */
import type { OperationId } from "../shared/api.js";
import { type Clock, sleepOn } from "../shared/clock.js";
import { type Check, type CheckContext, CheckFailure, type Cleanup, type Facts, type RunInfo } from "./check.js";
import type { CallOptions, Exchange, Http } from "./exchange.js";
import { type Drift, describeDrift, type ValidateExchange } from "./validator.js";

export type Outcome = "pass" | "fail" | "skip";

/** A drift, with the status of the answer it was found in. */
export interface RouteDrift extends Drift {
  status: number;
}

export interface CheckResult {
  id: string;
  title: string;
  outcome: Outcome;
  /** Why it failed or was skipped. */
  message?: string;
  /** The routes it called (`METHOD /path/{param}`), in order, each once. */
  routes: string[];
  drift: RouteDrift[];
  ms: number;
}

export interface RunnerDeps {
  http: Http;
  validate: ValidateExchange;
  cleanup: Cleanup;
  run: RunInfo;
  clock: Clock;
  /** Aborted by SIGINT/SIGTERM: the check in flight stops, the rest are skipped. */
  signal: AbortSignal;
  /** Called as each check ends (progress lines). */
  onResult?: (result: CheckResult) => void;
  /** Check ids or areas (`messaging`) not to run (`--skip`). */
  skip?: readonly string[];
}

/** Keeps secrets out of anything the kit prints or writes: raw keys of the service. */
export const redactSecrets = (text: string): string => text.replace(/svc_(?:org|sk)_[0-9a-f]{8,}/g, "<redacted>");

/** A check's finding, a request that got no answer, or (anything else) a fault of the kit itself, each said as such. */
const describeError = (error: unknown): string => {
  if (error instanceof CheckFailure) return error.message;
  if (error instanceof Error && error.name === "TimeoutError") return `no answer in time (${error.message})`;
  // fetch rejects with a TypeError whose cause is the socket's error; a body cut mid-stream rejects the read likewise.
  if (error instanceof TypeError && (error.message === "fetch failed" || error.message === "terminated")) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `the request failed (${error.message}${cause}): the server closed the connection or cannot be reached`;
  }
  return `the kit itself failed (please report it): ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
};

export async function runChecks(checks: readonly Check[], deps: RunnerDeps): Promise<CheckResult[]> {
  const facts: Facts = {};
  const results: CheckResult[] = [];
  /** The gate check that failed, once one has: every later check is skipped. */
  let closedBy: string | undefined;
  for (const check of checks) {
    const { result, threw } =
      closedBy === undefined
        ? await runOne(check, facts, deps)
        : {
            result: { id: check.id, title: check.title, outcome: "skip" as const, message: `not run: ${closedBy} failed`, routes: [], drift: [], ms: 0 },
            threw: false,
          };
    // A drift alone does not close the gate: the rest still says what else differs.
    if (check.gate && threw) closedBy = check.id;
    results.push(result);
    deps.onResult?.(result);
  }
  return results;
}

/** Runs one check; `threw`: it failed on its own (a finding, a lost connection), not only by drift. */
async function runOne(check: Check, facts: Facts, deps: RunnerDeps): Promise<{ result: CheckResult; threw: boolean }> {
  const seen: Seen = { id: check.id, title: check.title, routes: [], drift: [] };
  const skipped = skipReason(check, facts, deps);
  if (skipped !== undefined) return { result: { ...seen, outcome: "skip", message: skipped, ms: 0 }, threw: false };
  const started = deps.clock.now();
  const own = await exercise(check, contextFor(seen, facts, deps), deps.signal);
  return { result: withDrift(seen, own, deps.clock.now() - started), threw: own.outcome === "fail" };
}

/** What a check saw while it ran: the routes it called and the drift in their answers. */
interface Seen {
  id: string;
  title: string;
  routes: string[];
  drift: RouteDrift[];
}

function skipReason(check: Check, facts: Facts, deps: RunnerDeps): string | undefined {
  if (deps.signal.aborted) return "interrupted";
  if (deps.skip?.some((name) => check.id === name || check.id.startsWith(`${name}.`))) return "skipped with --skip";
  const missing = check.needs?.filter((fact) => facts[fact] === undefined) ?? [];
  return missing.length ? `needs ${missing.join(", ")} (an earlier check did not provide it)` : undefined;
}

/** The check's view of the run: every call it makes is recorded in `seen` and judged by the validator. */
function contextFor(seen: Seen, facts: Facts, deps: RunnerDeps): CheckContext {
  const call = async (operation: OperationId, options: CallOptions = {}): Promise<Exchange> => {
    const exchange = await deps.http.call(operation, options, deps.signal);
    const route = `${exchange.method} ${exchange.route}`;
    if (!seen.routes.includes(route)) seen.routes.push(route);
    for (const drift of deps.validate(exchange)) seen.drift.push({ ...drift, status: exchange.status });
    return exchange;
  };
  return { call, facts, cleanup: deps.cleanup, run: deps.run, signal: deps.signal, sleep: (ms: number) => sleepOn(deps.clock, ms, deps.signal) };
}

/** The check's own verdict: passed, skipped (it said why) or failed (why, in words). */
async function exercise(check: Check, ctx: CheckContext, signal: AbortSignal): Promise<{ outcome: Outcome; message?: string }> {
  try {
    const returned = await check.run(ctx);
    return returned ? { outcome: "skip", message: returned.skipped } : { outcome: "pass" };
  } catch (error) {
    return { outcome: "fail", message: signal.aborted ? "interrupted" : describeError(error) };
  }
}

/** Any drift fails the check, appended to its own message; secrets are cut from the message. */
function withDrift(seen: Seen, own: { outcome: Outcome; message?: string }, ms: number): CheckResult {
  let { outcome, message } = own;
  if (seen.drift.length) {
    const drifted = `the answer drifted from the contract: ${seen.drift.map((d) => `${d.route} ${d.status} ${describeDrift(d)}`).join("; ")}`;
    message = outcome === "fail" ? `${message}; ${drifted}` : drifted;
    outcome = "fail";
  }
  return { ...seen, outcome, ...(message !== undefined ? { message: redactSecrets(message) } : {}), ms };
}
