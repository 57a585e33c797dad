/**
 * `node:test`: a sandbox per test and assertions that throw, on the runner
 * Node has built in. Node 20's runner has no global setup: start the
 * emulator once in a script that runs `node --test` with AGENT_BRIDGE_URL
 * set, or per file with `before(startSharedEmulator)` (README, "Use it in
 * your tests").
 */
import { AssertionError } from "node:assert";
import { afterEach, beforeEach } from "node:test";
import { toHaveNoUnmatchedRequests, toHaveReceived, toHaveReceivedTimes } from "./matchers.js";
import type { ReceivedRequests, RemoteSandbox, RequestFilter } from "./remote-sandbox.js";
import { type SandboxPerTestOptions, sandboxPerTest, urlFromEnv } from "./sandbox-per-test.js";
import { type RecordingGetter, recordingPerTest } from "./recordings.js";

/** A fresh sandbox before each test of the file (or suite), removed after it; call the result inside a test. */
export function useSandbox(options: SandboxPerTestOptions = {}): () => RemoteSandbox {
  return sandboxPerTest({ beforeEach, afterEach }, () => options.url ?? urlFromEnv(), options);
}

/** A sandbox per test named after the recording `name`, replayed from `<name>.recording.json` by an emulator started with `replay`. */
export function useRecording(name: string, options: SandboxPerTestOptions = {}): RecordingGetter {
  return recordingPerTest({ beforeEach, afterEach }, () => options.url ?? urlFromEnv(), name, options);
}

/** Throws unless the sandbox received a request matching `filter` (exactly `times` of them, when given). */
export async function assertReceived(sandbox: ReceivedRequests, filter: RequestFilter = {}, times?: number): Promise<void> {
  const result = times === undefined ? await toHaveReceived(sandbox, filter) : await toHaveReceivedTimes(sandbox, filter, times);
  if (!result.pass) throw new AssertionError({ message: result.message() });
}

/** Throws if a request of the sandbox matched nothing. */
export async function assertNoUnmatchedRequests(sandbox: ReceivedRequests): Promise<void> {
  const result = await toHaveNoUnmatchedRequests(sandbox);
  if (!result.pass) throw new AssertionError({ message: result.message() });
}
