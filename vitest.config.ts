import { defineConfig } from "vitest/config";
import { ProjectOrderSequencer } from "./test/helpers/sequencer.js";

// Three projects (`npm test -- --project unit`; a folder, e.g. `npm test -- test/browser`):
// - unit: pure logic of the daemon's core (test/daemon/unit), no servers, no build;
// - integration: everything else, over real HTTP against the emulator and the platform fakes,
//   the compiled `agent-bridge` as a process (globalSetup builds dist/ first), the web console
//   in a real browser (test/browser), the npm package installed into a fresh project and as the
//   image installs it (test/package);
// - cluster: several daemons on a real PostgreSQL server (test/daemon/postgres), last, three files at a time.
// The browser and package files were projects of their own, each file in a fresh worker: every
// change of project at the head of the queue ends the workers that finish then (vitest reuses a
// worker only for a file of the same project), and each new worker imports the code again;
// in one project the suite used 30 s less CPU (265 s to 233 s, 151 s to 135 s of wall time).
const BUILD = ["test/helpers/build.ts"];
const CLUSTER = [
  "test/daemon/postgres/failover-kill.test.ts",
  "test/daemon/postgres/failover.test.ts",
  "test/daemon/postgres/faults.test.ts",
  "test/daemon/postgres/faults-restarts.test.ts",
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
          // test/package/many-workers/ is a config of its own, run as a child process by many-workers.test.ts.
          exclude: ["test/daemon/unit/**", "test/package/*/**", ...CLUSTER],
          globalSetup: BUILD,
        },
      },
      // Several daemon processes on a PostgreSQL server each (test/daemon/postgres): after
      // everything else, so their lease timings (1.5-3 s leases, renewed every third) never
      // compete with other files' CPU. Tried beside the other files (also with the other files'
      // workers at a lower priority): leases were lost mid-test (an account changing hands where
      // a test expects it to stay, a command run again), and the suite was slower (more workers,
      // more module loading). Three at a time once the rest is done use 65-90% of two cores:
      // the eight files (the longest two split in two each) in 27-32 s, against 44 s two at a time
      // (four at a time: 31 s, each file slower).
      { extends: true, test: { name: "cluster", include: CLUSTER, globalSetup: BUILD, maxWorkers: 3, sequence: { groupOrder: 1 } } },
    ],
  },
});
