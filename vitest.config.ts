import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Builds dist/ first: process tests run the compiled `agent-bridge`.
    globalSetup: ["test/helpers/build.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores on CI: a few files at a time keeps port and CPU contention low.
    maxWorkers: 2,
  },
});
