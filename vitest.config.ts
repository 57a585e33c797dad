import { defineConfig } from "vitest/config";
import { ProjectOrderSequencer } from "./test/helpers/sequencer.js";

// Five projects (`npm test -- --project unit`):
// - unit: pure logic of the daemon's core (test/daemon/unit), no servers, no build;
// - integration: everything else, over real HTTP against the emulator and the platform fakes,
//   and the compiled `agent-bridge` as a process (globalSetup builds dist/ first);
// - browser: the web console in a real browser (test/browser);
// - package: the npm package installed into a fresh project and used as the README shows (test/package);
// - cluster: several daemons on a real PostgreSQL server (test/daemon/postgres), last and two files at a time.
const BUILD = ["test/helpers/build.ts"];
const CLUSTER = [
  "test/daemon/postgres/failover.test.ts",
  "test/daemon/postgres/faults.test.ts",
  "test/daemon/postgres/whatsapp-cluster.test.ts",
  "test/daemon/postgres/slack-cluster.test.ts",
  "test/daemon/postgres/schedules-cluster.test.ts",
  "test/daemon/postgres/identity-links-cluster.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Four files at a time on two cores: many files spend much of their time waiting on child
    // processes, sockets and timers, and more files fill those waits (measured on the 2-core
    // machine when the suite was the integration files alone: 2 workers ~50 s, 3 ~42 s, 4 no
    // faster than 3). Since then the package files (20-35 s each, npm installs and child
    // processes) take a worker each for the first half minute (the sequencer starts them first):
    // with three workers the ~100 integration files had none left until the first ended.
    maxWorkers: 4,
    // Each worker process (the default `forks` pool) runs its files one after another without
    // re-importing every module per file: importing express, zod schemas, discord.js and Baileys
    // again for each of ~50 files was half the suite's CPU time. Safe here because nothing is
    // mocked (no vi.mock, no fake timers, no stubbed globals), the product keeps no module-level
    // state (its metrics use their own registries, clocks and stores are injected), and every
    // file starts and closes its own servers on port 0 and its own temporary directories.
    isolate: false,
    sequence: { sequencer: ProjectOrderSequencer },
    projects: [
      { extends: true, test: { name: "unit", include: ["test/daemon/unit/**/*.test.ts"] } },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          exclude: ["test/daemon/unit/**", "test/browser/**", "test/package/**", ...CLUSTER],
          globalSetup: BUILD,
        },
      },
      // Several daemon processes on a PostgreSQL server each (test/daemon/postgres): after
      // everything else, so their lease timings (1.5-3 s leases, renewed every third) never
      // compete with other files' CPU. Tried beside the other files, and two cluster files at a
      // time, on a machine at load 18-28: leases were lost mid-test (an account changing hands
      // where a test expects it to stay). Two at a time once the rest is done use about a third
      // of two cores (their time is lease waits), and passed repeatedly with a CPU hog beside
      // them: 35-41 s for the six files, against 69 s one at a time.
      { extends: true, test: { name: "cluster", include: CLUSTER, globalSetup: BUILD, maxWorkers: 2, sequence: { groupOrder: 1 } } },
      // A real browser: its file gets a fresh worker of its own, so nothing another file left
      // running (servers, timers) competes with the page's live updates.
      { extends: true, test: { name: "browser", include: ["test/browser/**/*.test.ts"], isolate: true } },
      // The package installed into another project (npm pack, npm install, tsc, three runners):
      // child processes all along, in a worker of its own.
      { extends: true, test: { name: "package", include: ["test/package/*.test.ts"], isolate: true, globalSetup: BUILD } },
    ],
  },
});
