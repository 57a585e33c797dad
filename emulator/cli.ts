/**
 * `agent-bridge emulator [options]` (`npm run emulator -- ...`): the emulator
 * as a process. Prints `emulator listening on http://HOST:PORT` when ready;
 * on SIGINT/SIGTERM it flushes the store and resolves with 0. Arguments are
 * parsed by bin/program.ts.
 */
import { withoutUndefined } from "../shared/util/without-undefined.js";
import { createEmulator } from "./index.js";
import type { ReplayMode } from "./recording/replay.js";

export interface EmulatorCommandOptions {
  port: number;
  host: string;
  dataDir: string;
  inMemory?: boolean;
  provisionMs: number;
  seed?: string;
  adminToken?: string;
  gatewayUrl?: string;
  flushMs: number;
  uploadLimitMb: number;
  /** A model script file, in force globally from the start. */
  modelScript?: string;
  /** A fixture file loaded into an empty state at start (docs/emulator.md, "Fixtures"). */
  fixtures?: string;
  /** Answer `/v1` from the recordings in this directory. */
  replay?: string;
  replayMode?: ReplayMode;
  /** The real service, for `record-if-missing` and `passthrough`. */
  upstream?: string;
  /** False: send a replayed stream's events at once (`--no-replay-pace`). */
  replayPace?: boolean;
}

/** Runs until SIGINT/SIGTERM; resolves with the exit code. */
export async function runEmulatorCommand(opts: EmulatorCommandOptions): Promise<number> {
  const inMemory = opts.inMemory === true;
  const dataDir = inMemory ? undefined : opts.dataDir;
  let emulator: Awaited<ReturnType<typeof createEmulator>>;
  try {
    emulator = await createEmulator({
      inMemory,
      provisionMs: opts.provisionMs,
      flushMs: opts.flushMs,
      uploadLimitBytes: opts.uploadLimitMb * 1024 * 1024,
      ...withoutUndefined({
        dataDir,
        seed: opts.seed,
        adminToken: opts.adminToken,
        gatewayUrl: opts.gatewayUrl,
        modelScript: opts.modelScript,
        fixtures: opts.fixtures,
      }),
      ...(opts.replay !== undefined
        ? { replay: { dir: opts.replay, pace: opts.replayPace !== false, ...withoutUndefined({ mode: opts.replayMode, upstream: opts.upstream }) } }
        : {}),
    });
  } catch (error) {
    // A locked (DataDirLockedError) or unreadable data directory, a refused model script or fixture: say why, not a stack trace.
    process.stderr.write(`emulator: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  let url: string;
  try {
    url = await emulator.listen(opts.port, opts.host);
  } catch (error) {
    process.stderr.write(`emulator: cannot listen on ${opts.host}:${opts.port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
    await emulator.close();
    return 1;
  }
  const loopback = /^(127\.|localhost$|::1$)/.test(opts.host);
  process.stdout.write(
    [
      `emulator ${emulator.env.settings.version}: ${dataDir ? `state in ${emulator.store.dataDir}` : "in memory"}`,
      `  gateway  ${emulator.gateway.url}`,
      `  openapi  ${url}/v1/openapi.json`,
      `  control  ${url}/_emulator (${opts.adminToken ? "admin token required" : loopback ? "loopback only" : "off: no --admin-token"})`,
      `  console  ${consoleUrl(url)}${opts.adminToken ? " (open once with ?token=<admin token>)" : ""}`,
      ...(emulator.replay ? [`  replay   ${opts.replay} (${emulator.replay.mode}${opts.upstream ? `, upstream ${new URL(opts.upstream).origin}` : ""})`] : []),
      `emulator listening on ${url}`,
      "",
    ].join("\n"),
  );

  const running = emulator;
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      process.stdout.write(`emulator: ${signal}, flushing and stopping\n`);
      running.close().then(
        () => resolve(0),
        (error: unknown) => {
          process.stderr.write(`emulator: shutdown failed: ${(error as Error).message}\n`);
          resolve(1);
        },
      );
    };
    process.on("SIGINT", () => stop("SIGINT"));
    process.on("SIGTERM", () => stop("SIGTERM"));
  });
}

/**
 * The console's URL for a browser on this machine. A wildcard listen address
 * (0.0.0.0, ::) is no host name: the control plane refuses it in `Host`
 * (DNS-rebinding rule), so the loopback address stands in for it.
 */
export function consoleUrl(url: string): string {
  const u = new URL(url);
  if (u.hostname === "0.0.0.0") u.hostname = "127.0.0.1";
  else if (u.hostname === "[::]") u.hostname = "[::1]";
  return `${u.origin}/_emulator/ui/`;
}
