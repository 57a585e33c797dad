/**
 * vitest: a global setup that starts one emulator and provides its URL to
 * every worker, matchers on `expect`, and a sandbox per test.
 *
 * ```ts
 * // vitest.config.ts: test: { globalSetup: ["./test/emulator-setup.ts"], setupFiles: ["agent-bridge/testing/vitest/matchers"] }
 * // test/emulator-setup.ts
 * export { vitestGlobalSetup as default } from "agent-bridge/testing/vitest";
 * ```
 */
import { afterEach, beforeEach, expect, inject } from "vitest";
import type { TestProject } from "vitest/node";
import { type AgentBridgeMatchers, agentBridgeMatchers } from "./matchers.js";
import type { RemoteSandbox } from "./remote-sandbox.js";
import { type SandboxPerTestOptions, sandboxPerTest } from "./sandbox-per-test.js";
import { type RecordingGetter, recordingPerTest } from "./recordings.js";
import { type SharedEmulatorOptions, startSharedEmulator } from "./shared-emulator.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The shared emulator's base URL (vitestGlobalSetup). */
    agentBridgeUrl: string;
  }
  // biome-ignore lint/suspicious/noExplicitAny: repeats vitest's own declaration (`Matchers<T = any>`), which merging requires
  interface Matchers<T = any> extends AgentBridgeMatchers {}
}

/** A global setup starting one emulator for the run (default options); use it as the module's default export. */
export async function vitestGlobalSetup(project: TestProject): Promise<() => Promise<void>> {
  return emulatorGlobalSetup()(project);
}

/** A global setup with options: `export default emulatorGlobalSetup({ mode: "process" })`. */
export function emulatorGlobalSetup(options: SharedEmulatorOptions = {}): (project: TestProject) => Promise<() => Promise<void>> {
  return async (project) => {
    const emulator = await startSharedEmulator(options);
    project.provide("agentBridgeUrl", emulator.url);
    return () => emulator.close();
  };
}

/** The shared emulator's URL in a test file. */
export const emulatorUrl = (): string => inject("agentBridgeUrl");

/** Adds `toHaveReceived`, `toHaveReceivedTimes` and `toHaveNoUnmatchedRequests` to `expect`. */
export function installMatchers(): void {
  expect.extend(agentBridgeMatchers);
}

/** A fresh sandbox before each test of the file, removed after it; call the result inside a test. */
export function useSandbox(options: SandboxPerTestOptions = {}): () => RemoteSandbox {
  return sandboxPerTest({ beforeEach, afterEach }, () => options.url ?? emulatorUrl(), options);
}

/**
 * A sandbox per test named after the recording `name`: with the emulator replaying
 * (`emulatorGlobalSetup({ replay })`), the test's requests are answered from `<name>.recording.json`.
 */
export function useRecording(name: string, options: SandboxPerTestOptions = {}): RecordingGetter {
  return recordingPerTest({ beforeEach, afterEach }, () => options.url ?? emulatorUrl(), name, options);
}
