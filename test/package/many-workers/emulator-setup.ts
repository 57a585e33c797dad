import { join } from "node:path";
import { emulatorGlobalSetup } from "agent-bridge/testing/vitest";

// One emulator process for all eight workers; instances provision in one minute of each sandbox's own time.
export default emulatorGlobalSetup({ mode: "process", provisionMs: 60_000, bin: join(import.meta.dirname, "../../../dist/bin/agent-bridge.js") });
