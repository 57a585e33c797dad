/**
 * `agent-bridge conformance --base-url URL --key KEY`: the contract's checks
 * against any `/v1` server, a line per check as it ends, a table, a JUnit
 * file. SIGINT/SIGTERM stop the checks and still clean up; a second one
 * abandons the cleanup and says what may be left. Arguments are parsed by
 * bin/program.ts.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { formatJunit } from "./report/junit.js";
import { formatTable, progressLine } from "./report/table.js";
import { RUN_PREFIX, runConformance, sweepLeftovers, unknownCheckNames } from "./run.js";

export interface ConformanceCommandOptions {
  baseUrl: string;
  key: string;
  junit: string;
  model?: string;
  allowSignup?: boolean;
  timeoutMs: number;
  provisionTimeoutMs: number;
  cleanupTimeoutMs: number;
  /** Only remove what earlier runs left; run no check. */
  sweep?: boolean;
  /** Check ids or areas not to run. */
  skip?: string[];
}

/** Resolves with the exit code: 0 every check passed and nothing was left, 1 otherwise, 2 a name in --skip that is no check. */
export async function runConformanceCommand(opts: ConformanceCommandOptions): Promise<number> {
  const unknown = unknownCheckNames(opts.skip ?? []);
  if (unknown.length) {
    process.stderr.write(`conformance: --skip names no such check or area: ${unknown.join(", ")} (the checks are listed in docs/testing.md)\n`);
    return 2;
  }
  const out = (text: string) => process.stdout.write(text);
  const stop = new AbortController();
  const abandon = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (!stop.signal.aborted) {
      out(`conformance: ${signal}, stopping the checks and cleaning up (again to abandon the cleanup)\n`);
      stop.abort(new Error(signal));
    } else abandon.abort(new Error(signal));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    if (opts.sweep) return await sweep(opts, abandon.signal, out);
    out(`conformance: checking ${opts.baseUrl}\n`);
    const run = await runConformance({
      baseUrl: opts.baseUrl,
      key: opts.key,
      ...(opts.model !== undefined ? { model: opts.model } : {}),
      allowSignup: opts.allowSignup === true,
      ...(opts.skip ? { skip: opts.skip } : {}),
      requestTimeoutMs: opts.timeoutMs,
      provisionTimeoutMs: opts.provisionTimeoutMs,
      cleanupTimeoutMs: opts.cleanupTimeoutMs,
      signal: stop.signal,
      cleanupSignal: abandon.signal,
      onResult: (result) => out(`${progressLine(result)}\n`),
      onCleanup: () => out("conformance: cleaning up\n"),
    });
    out(`\n${formatTable(run.results, run.cleanup)}`);
    const left = run.cleanup.filter((c) => !c.ok);
    if (left.length) {
      out(`conformance: LEFT BEHIND (remove by hand; names start with conformance-${run.runId}): ${left.map((c) => c.what).join("; ")}\n`);
    }
    if (run.interrupted) out("conformance: interrupted\n");
    try {
      await mkdir(dirname(opts.junit), { recursive: true });
      await writeFile(opts.junit, formatJunit(run.results, run.cleanup, { baseUrl: opts.baseUrl, timestamp: new Date().toISOString() }));
      out(`conformance: JUnit report in ${opts.junit}\n`);
    } catch (error) {
      process.stderr.write(`conformance: cannot write ${opts.junit}: ${(error as Error).message}\n`);
      return 1;
    }
    return run.ok ? 0 : 1;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

async function sweep(opts: ConformanceCommandOptions, signal: AbortSignal, out: (text: string) => void): Promise<number> {
  out(`conformance: removing what earlier runs left on ${opts.baseUrl} (names starting ${RUN_PREFIX})\n`);
  const outcomes = await sweepLeftovers({
    baseUrl: opts.baseUrl,
    key: opts.key,
    requestTimeoutMs: opts.timeoutMs,
    cleanupTimeoutMs: opts.cleanupTimeoutMs,
    cleanupSignal: signal,
  });
  out(formatTable([], outcomes));
  return outcomes.every((o) => o.ok) ? 0 : 1;
}
