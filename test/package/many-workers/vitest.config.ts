/**
 * Eight vitest workers sharing one `agent-bridge emulator` process through
 * sandboxes (test/package/many-workers.test.ts runs this config as a child
 * process; the main suite does not collect these files).
 */
import { join } from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ["worker-*.test.ts"],
    globalSetup: [join(import.meta.dirname, "emulator-setup.ts")],
    setupFiles: [join(import.meta.dirname, "matchers-setup.ts")],
    pool: "forks",
    maxWorkers: 8,
    fileParallelism: true,
    testTimeout: 30_000,
    // The package by its name (`agent-bridge/testing/vitest`, compiled in dist/), loaded by Node as
    // an installed dependency is, not run through vite's transforms: ~11% less CPU.
    server: { deps: { external: [/\/dist\//] } },
  },
});
