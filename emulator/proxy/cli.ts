/**
 * `agent-bridge proxy --upstream URL [options]`: the validating proxy as a
 * process. Prints `proxy listening on URL` when ready; on SIGINT/SIGTERM it
 * finishes the answers in flight, writes recordings and reports, prints the
 * summary and exits 0, or 1 with `--fail-on-drift` when anything drifted.
 * Arguments are parsed by bin/program.ts.
 */
import { RecordingError } from "../recording/read.js";
import { createValidatingProxy, summaryOf, type ValidatingProxy } from "./server.js";

export interface ProxyCommandOptions {
  upstream: string;
  port: number;
  host: string;
  record?: string;
  /** Values to scrub, as given. */
  secret?: string[];
  /** Names of environment variables whose values are scrubbed. */
  secretEnv?: string[];
  report?: string;
  junit?: string;
  failOnDrift?: boolean;
  timeoutMs: number;
}

export async function runProxyCommand(opts: ProxyCommandOptions): Promise<number> {
  const fromEnv = (opts.secretEnv ?? []).map((name) => process.env[name]).filter((v): v is string => typeof v === "string" && v !== "");
  let proxy: ValidatingProxy;
  let url: string;
  try {
    proxy = createValidatingProxy({
      upstream: opts.upstream,
      secrets: [...(opts.secret ?? []), ...fromEnv],
      upstreamTimeoutMs: opts.timeoutMs,
      ...(opts.record !== undefined ? { recordDir: opts.record } : {}),
      ...(opts.report !== undefined ? { reportJson: opts.report } : {}),
      ...(opts.junit !== undefined ? { reportJunit: opts.junit } : {}),
    });
    url = await proxy.listen(opts.port, opts.host);
  } catch (error) {
    if (error instanceof RecordingError) process.stderr.write(`proxy: a recording in ${opts.record} cannot be read:\n${error.message}\n`);
    else process.stderr.write(`proxy: cannot listen on ${opts.host}:${opts.port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
    return 1;
  }
  process.stdout.write(
    [
      `proxy to ${new URL(opts.upstream).origin}${opts.record ? `, recording into ${opts.record}` : ""}`,
      `  report   ${url}/_proxy/report${opts.report ? `, and ${opts.report} at exit` : ""}`,
      `proxy listening on ${url}`,
      "",
    ].join("\n"),
  );
  const running = proxy;
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      process.stdout.write(`proxy: ${signal}, finishing\n`);
      running.close().then(
        (report) => {
          process.stdout.write(summaryOf(report));
          resolve(opts.failOnDrift && report.drift_count > 0 ? 1 : 0);
        },
        (error: unknown) => {
          process.stderr.write(`proxy: shutdown failed: ${(error as Error).message}\n`);
          resolve(1);
        },
      );
    };
    process.on("SIGINT", () => stop("SIGINT"));
    process.on("SIGTERM", () => stop("SIGTERM"));
  });
}
