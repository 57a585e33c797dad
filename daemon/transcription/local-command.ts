/**
 * A local transcription program (whisper.cpp's `whisper-cli`, a script
 * around pocketsphinx, ...): run without a shell, given the audio as a file
 * in a private temporary folder, and its stdout is the transcript. A non-zero
 * exit, a signal or a timeout gives no text; the folder is removed either way.
 */
import { spawn } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeOwnedTempDir } from "../../shared/temp-dirs.js";
import type { EngineResult, TranscriptionEngine } from "./engine.js";

/** The most stdout kept (a transcript is cut far below this by `maxChars`): a runaway program cannot fill memory. */
const MAX_OUTPUT = 1024 * 1024;

/** The argv with "{file}" replaced by `path`, or `path` added last when no argument names it. */
export function commandLine(command: readonly string[], path: string): string[] {
  const named = command.some((arg) => arg.includes("{file}"));
  const args = command.map((arg) => arg.replaceAll("{file}", path));
  return named ? args : [...args, path];
}

export function createLocalCommand(options: { command: readonly string[] }): TranscriptionEngine {
  return {
    async transcribe(audio, signal): Promise<EngineResult> {
      const dir = await makeOwnedTempDir("agent-bridge-voice-");
      try {
        const path = join(dir, audio.fileName);
        await writeFile(path, audio.data, { mode: 0o600 });
        return await run(commandLine(options.command, path), signal);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

function run(argv: string[], signal: AbortSignal): Promise<EngineResult> {
  const [program, ...args] = argv as [string, ...string[]];
  return new Promise<EngineResult>((resolve) => {
    if (signal.aborted) return resolve({ ok: false, reason: "timeout", detail: "stopped before it ran" });
    const child = spawn(program, args, { stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let size = 0;
    child.stdout.on("data", (chunk: Buffer) => {
      if (size < MAX_OUTPUT) out.push(chunk.subarray(0, MAX_OUTPUT - size));
      size += chunk.length;
    });
    // Read and dropped: a recogniser may print what it heard there, and nothing it heard is logged.
    child.stderr.resume();
    // The process group is not ours to kill: the child alone is ended (SIGKILL: a stuck recogniser ignores less).
    const onAbort = () => child.kill("SIGKILL");
    signal.addEventListener("abort", onAbort, { once: true });
    child.on("error", (error) => {
      signal.removeEventListener("abort", onAbort);
      resolve({ ok: false, reason: "failed", detail: `${program} could not be run (${error.message})` });
    });
    child.on("close", (code, killedBy) => {
      signal.removeEventListener("abort", onAbort);
      if (signal.aborted) return resolve({ ok: false, reason: "timeout", detail: `${program} did not finish in time` });
      if (code !== 0) {
        const why = killedBy ? `was ended by ${killedBy}` : `exited with ${code}`;
        return resolve({ ok: false, reason: "failed", detail: `${program} ${why}` });
      }
      resolve({ ok: true, text: Buffer.concat(out).toString("utf8") });
    });
  });
}
