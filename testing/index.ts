/**
 * `agent-bridge/testing`: what a test suite needs to share one emulator and
 * keep its tests apart. Framework-neutral here; the hooks for each framework
 * are in `agent-bridge/testing/vitest`, `/jest` and `/node` (README, "Use it
 * in your tests").
 */
export {
  agentBridgeMatchers,
  type AgentBridgeMatchers,
  type MatcherResult,
  toHaveNoUnmatchedRequests,
  toHaveReceived,
  toHaveReceivedTimes,
} from "./matchers.js";
export {
  type ClockMove,
  createSandbox,
  type CreateSandboxOptions,
  type ReceivedRequests,
  type RemoteSandbox,
  type RequestFilter,
  type SandboxRequestEntry,
  SandboxRequestError,
  type SandboxView,
  type UnmatchedEntry,
} from "./remote-sandbox.js";
export { type SharedEmulator, type SharedEmulatorOptions, startSharedEmulator } from "./shared-emulator.js";
export { sandboxPerTest, type SandboxPerTestOptions } from "./sandbox-per-test.js";
export { type RecordingGetter, recordingPerTest, recordingUsage, unusedRecordingsReport } from "./recordings.js";
