/**
 * jest: a global setup and teardown that start and stop one emulator for the
 * run (its URL reaches every worker as AGENT_BRIDGE_URL), the matchers, and a
 * sandbox per test. Uses the globals jest gives every test file
 * (`beforeEach`, `afterEach`, `expect`), so it works with or without
 * `@jest/globals`, in ESM and CommonJS suites alike.
 *
 * ```js
 * // jest.config.js
 * export default { globalSetup: "agent-bridge/testing/jest-global-setup", globalTeardown: "agent-bridge/testing/jest-global-teardown" };
 * ```
 */
import type {} from "expect";
import { type AgentBridgeMatchers, agentBridgeMatchers } from "./matchers.js";
import type { RemoteSandbox } from "./remote-sandbox.js";
import { type SandboxPerTestOptions, sandboxPerTest, urlFromEnv } from "./sandbox-per-test.js";
import { type RecordingGetter, recordingPerTest } from "./recordings.js";
import { type SharedEmulator, type SharedEmulatorOptions, startSharedEmulator } from "./shared-emulator.js";

declare module "expect" {
  // Merges into jest's `expect` (the `expect` package behind `@jest/globals` and the global).
  interface Matchers<R extends void | Promise<void>, T = unknown> extends AgentBridgeMatchers {}
}

type Hook = (fn: () => Promise<void>) => void;

/** A jest global (`beforeEach`, `expect`, ...), with a sentence when this is not a jest test file. */
function jestGlobal<T>(name: string, check: (value: unknown) => value is T): T {
  const value: unknown = Reflect.get(globalThis, name);
  if (!check(value)) throw new Error(`agent-bridge/testing/jest needs jest's global ${name}: call it from a test file run by jest.`);
  return value;
}
const isShared = (v: unknown): v is SharedEmulator => typeof v === "object" && v !== null && typeof Reflect.get(v, "close") === "function";
const isFunction = (v: unknown): v is Hook => typeof v === "function";
const isExpect = (v: unknown): v is { extend(matchers: object): void } => typeof v === "function" && typeof Reflect.get(v, "extend") === "function";

/** The emulator this process started, for the teardown (jest runs both in its main process). */
const RUNNING = Symbol.for("agent-bridge.testing.jest.emulator");

/** Starts one emulator and sets AGENT_BRIDGE_URL for the workers jest starts after it. */
export async function jestGlobalSetup(options: SharedEmulatorOptions = {}): Promise<void> {
  const emulator = await startSharedEmulator(options);
  Reflect.set(globalThis, RUNNING, emulator);
  process.env.AGENT_BRIDGE_URL = emulator.url;
}

/** Stops the emulator `jestGlobalSetup` started. */
export async function jestGlobalTeardown(): Promise<void> {
  const emulator: unknown = Reflect.get(globalThis, RUNNING);
  if (isShared(emulator)) await emulator.close();
}

/** Adds `toHaveReceived`, `toHaveReceivedTimes` and `toHaveNoUnmatchedRequests` to jest's `expect`. */
export function installMatchers(): void {
  jestGlobal("expect", isExpect).extend(agentBridgeMatchers);
}

/** A sandbox per test named after the recording `name`, replayed from `<name>.recording.json` by an emulator started with `replay`. */
export function useRecording(name: string, options: SandboxPerTestOptions = {}): RecordingGetter {
  const hooks = { beforeEach: jestGlobal("beforeEach", isFunction), afterEach: jestGlobal("afterEach", isFunction) };
  return recordingPerTest(hooks, () => options.url ?? urlFromEnv(), name, options);
}

/** A fresh sandbox before each test of the file, removed after it; call the result inside a test. */
export function useSandbox(options: SandboxPerTestOptions = {}): () => RemoteSandbox {
  const hooks = { beforeEach: jestGlobal("beforeEach", isFunction), afterEach: jestGlobal("afterEach", isFunction) };
  return sandboxPerTest(hooks, () => options.url ?? urlFromEnv(), options);
}
