/**
 * One emulator for a whole test run, started by a global setup and shared by
 * every worker through sandboxes: in this process (fast; the workers reach it
 * over HTTP) or as the `agent-bridge emulator` command (a process of its own,
 * as a suite in another language would run it).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ModelScriptInput } from "../emulator/gateway/script/schema.js";
import type { ReplayOptions } from "../emulator/recording/replay.js";
import { recordingUsage, unusedRecordingsReport } from "./recordings.js";

export interface SharedEmulatorOptions {
  /** `"in-process"`: `createEmulator()` here; `"process"`: the `agent-bridge emulator` command as a child process. Default: in-process. */
  mode?: "in-process" | "process";
  /** How long a new instance stays `provisioning`, ms (a sandbox's clock can move past it). Default: 0, instances are running at once. */
  provisionMs?: number;
  /** Seeds ids and keys so a run repeats. Default: random. */
  seed?: string;
  /** With mode "process": the `agent-bridge` command's script to run. Default: the one of this package. */
  bin?: string;
  /** A model script for every instance (a file name or the script). Default: none. */
  modelScript?: string | ModelScriptInput;
  /**
   * Answer from recordings (docs/testing.md, "Record, replay and drift"); `useRecording(name)` picks
   * one per test. At close, recordings no test used are reported on stderr. Default: none.
   */
  replay?: ReplayOptions;
}

export interface SharedEmulator {
  /** Its base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  close(): Promise<void>;
}

/** Starts one memory-only emulator on a free loopback port. */
export async function startSharedEmulator(options: SharedEmulatorOptions = {}): Promise<SharedEmulator> {
  return options.mode === "process" ? startProcess(options) : startInProcess(options);
}

async function startInProcess(options: SharedEmulatorOptions): Promise<SharedEmulator> {
  const { createEmulator } = await import("../emulator/index.js");
  const emulator = await createEmulator({
    provisionMs: options.provisionMs ?? 0,
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.modelScript !== undefined ? { modelScript: options.modelScript } : {}),
    ...(options.replay !== undefined ? { replay: options.replay } : {}),
  });
  const url = await emulator.listen(0, "127.0.0.1");
  return {
    url,
    async close() {
      await reportUnused(url, options);
      await emulator.close();
    },
  };
}

/** The packaged command, beside this module once built (dist/testing -> dist/bin). */
const BIN = fileURLToPath(new URL("../bin/agent-bridge.js", import.meta.url));

async function startProcess(options: SharedEmulatorOptions): Promise<SharedEmulator> {
  if (typeof options.modelScript === "object") throw new TypeError('mode "process" takes a model script as a file name');
  const args = [options.bin ?? BIN, "emulator", "--port", "0", "--in-memory", "--provision-ms", String(options.provisionMs ?? 0)];
  if (options.seed !== undefined) args.push("--seed", options.seed);
  if (options.modelScript !== undefined) args.push("--model-script", options.modelScript);
  if (options.replay) {
    args.push("--replay", options.replay.dir);
    if (options.replay.mode) args.push("--replay-mode", options.replay.mode);
    if (options.replay.upstream) args.push("--upstream", options.replay.upstream);
    if (options.replay.pace === false) args.push("--no-replay-pace");
  }
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /emulator listening on (http:\/\/\S+)/.exec(output);
      if (found?.[1]) resolve(found[1]);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("exit", (code) => reject(new Error(`agent-bridge emulator exited (${code}) before listening:\n${output.slice(-2000)}`)));
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    url,
    async close() {
      if (child.exitCode === null) await reportUnused(url, options);
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/** The report of unused recordings, on stderr, when the emulator replayed and something went unused. */
async function reportUnused(url: string, options: SharedEmulatorOptions): Promise<void> {
  if (!options.replay) return;
  const report = unusedRecordingsReport(await recordingUsage(url).catch(() => []));
  if (report) process.stderr.write(report);
}
