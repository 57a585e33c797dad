/**
 * The daemon as its own process (the compiled `agent-bridge run --config ...`) with
 * the terminal chat on its stdin/stdout, for tests that kill it with SIGKILL.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN } from "../helpers/cli.js";
import { waitUntil } from "../helpers/wait.js";

export const repoRoot = join(import.meta.dirname, "..", "..");

export interface DaemonChild {
  proc: ChildProcessWithoutNullStreams;
  out(): string;
  err(): string;
  exited: Promise<number | null>;
  /** Called on every stdout chunk (after it is appended to `out()`). */
  onOutput(listener: (stdout: string) => void): () => void;
  waitFor(pred: (stdout: string) => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** SIGKILL to the daemon's process. */
  kill(): void;
}

export function startDaemonProcess(configFile: string): DaemonChild {
  // One node process running the compiled command: a SIGKILL reaches the daemon itself.
  const proc = spawn(process.execPath, [BIN, "run", "--config", configFile], { cwd: repoRoot, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const listeners = new Set<(stdout: string) => void>();
  proc.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    for (const l of [...listeners]) l(stdout);
  });
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  proc.stdin.on("error", () => {}); // writing to a killed child
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  const child: DaemonChild = {
    proc,
    out: () => stdout,
    err: () => stderr,
    exited,
    onOutput(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    waitFor(pred, what, timeoutMs = 30_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pred(stdout)) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${what}\nstdout: ${stdout}\nstderr: ${stderr}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    kill() {
      if (proc.exitCode === null && proc.signalCode === null) {
        try {
          proc.kill("SIGKILL");
        } catch {
          // already gone
        }
      }
    },
  };
  return child;
}

/** Journal records of accepted messages so far (the daemon's own file; read-only here). */
export function acceptedCount(dataDir: string): number {
  const file = join(dataDir, "journal.jsonl");
  if (!existsSync(file)) return 0;
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.startsWith('{"t":"msg"')).length;
}

/** Re-checks `pred` (a file the child writes, say) until true: another process's files have no event to wait on. */
export async function until(pred: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  await waitUntil(pred, what, timeoutMs, 20);
}

export const occurrences = (text: string, line: string) => text.split("\n").filter((l) => l === line).length;

/**
 * Writes the config a child daemon runs with, in `dir`: fast retries, no debounce, no ops
 * server, one route to `instance`, the key read from `BRIDGE_TEST_KEY` (set to `apiKey`) so it
 * never sits in the file. `service` and `channels` are the test's own.
 */
export function writeDaemonConfig(
  dir: string,
  options: { service: Record<string, unknown>; apiKey: string; instance: string; channels: unknown[]; extra?: Record<string, unknown> },
): { configFile: string; dataDir: string } {
  const dataDir = join(dir, "data");
  const configFile = join(dir, "daemon.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      service: { ...options.service, apiKey: "${BRIDGE_TEST_KEY}" },
      dataDir,
      logLevel: process.env.BRIDGE_TEST_LOG ?? "warn",
      ops: { port: null },
      queue: { debounceMs: 0 },
      retry: { baseDelayMs: 10, maxDelayMs: 100 },
      routes: [{ match: {}, instance: options.instance }],
      channels: options.channels,
      ...options.extra,
    }),
  );
  process.env.BRIDGE_TEST_KEY = options.apiKey;
  return { configFile, dataDir };
}
