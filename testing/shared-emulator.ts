/**
 * One emulator for a whole test run, started by a global setup and shared by
 * every worker through sandboxes: in this process (fast; the workers reach it
 * over HTTP) or as the `agent-bridge emulator` command (a process of its own,
 * as a suite in another language would run it).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ModelScriptInput } from "../emulator/gateway/script/schema.js";

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
  });
  const url = await emulator.listen(0, "127.0.0.1");
  return { url, close: () => emulator.close() };
}

/** The packaged command, beside this module once built (dist/testing -> dist/bin). */
const BIN = fileURLToPath(new URL("../bin/agent-bridge.js", import.meta.url));

async function startProcess(options: SharedEmulatorOptions): Promise<SharedEmulator> {
  if (typeof options.modelScript === "object") throw new TypeError('mode "process" takes a model script as a file name');
  const args = [options.bin ?? BIN, "emulator", "--port", "0", "--in-memory", "--provision-ms", String(options.provisionMs ?? 0)];
  if (options.seed !== undefined) args.push("--seed", options.seed);
  if (options.modelScript !== undefined) args.push("--model-script", options.modelScript);
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
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
