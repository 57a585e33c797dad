/**
 * `agent-bridge` as a child process, compiled (dist/, built by the vitest
 * globalSetup), for tests of what only a process shows: persistence across
 * a kill, the data-directory lock, signals, flags. `runCli` runs the
 * emulator subcommand; `runAgentBridge` any.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");

export interface CliRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited: Promise<number | string>;
}

export const BIN = join(ROOT, "dist", "bin", "agent-bridge.js");

/** `agent-bridge emulator ARGS`. */
export function runCli(args: string[]): CliRun {
  return runAgentBridge(["emulator", ...args]);
}

/** `agent-bridge ARGS`: one node process (no npm or shell between), so a SIGKILL reaches it. */
export function runAgentBridge(args: string[], options: { stdin?: "ignore" | "pipe"; env?: NodeJS.ProcessEnv } = {}): CliRun {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: [options.stdin ?? "ignore", "pipe", "pipe"], env: options.env ?? process.env });
  let out = "";
  let err = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  const exited = new Promise<number | string>((resolve) => {
    child.on("exit", (code, signal) => resolve(code ?? signal ?? -1));
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Starts the CLI and resolves its base URL from the `emulator listening on` line. */
export async function startCli(args: string[], timeoutMs = 20_000): Promise<CliRun & { url: string }> {
  const run = runCli(args);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no 'emulator listening on' line within ${timeoutMs} ms\n${run.stdout()}\n${run.stderr()}`)), timeoutMs);
    const check = () => {
      const match = /emulator listening on (http:\/\/\S+)/.exec(run.stdout());
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    run.child.stdout!.on("data", check);
    void run.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`emulator exited (${code}) before listening\n${run.stdout()}\n${run.stderr()}`));
    });
  });
  return { ...run, url };
}

/** Kills the process if it still runs and waits until it is gone. */
export async function stopCli(run: CliRun, signal: NodeJS.Signals = "SIGKILL"): Promise<number | string> {
  if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill(signal);
  return run.exited;
}
