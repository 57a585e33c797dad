import { defineConfig } from "vitest/config";
import { SuiteOrderSequencer } from "./test/helpers/sequencer.js";

// One project, every file over real HTTP against the emulator and the platform fakes, the compiled
// `agent-bridge` as a process (globalSetup builds dist/ first), the web console in a real browser
// (test/browser), the npm package installed into a fresh project and as the image installs it
// (test/package), several daemons on a real PostgreSQL server (test/daemon/postgres), and the
// pure logic of the daemon's core (test/daemon/unit, no servers). A part alone: a folder or a
// file, e.g. `npm test -- test/daemon/unit`. The order is test/helpers/sequencer.ts's.
//
// One project because vitest reuses a worker only for files of the same project: each project
// started workers of its own, each importing the code again, and the cluster group began only
// once every other file had ended, on fresh workers. Merging the browser and package projects
// into the integration one saved 30 s of CPU; merging unit and cluster too (three projects to
// one) 40 s more (245 s to 205 s), and the suite took 118-120 s instead of 131-143 s.
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    include: ["test/**/*.test.ts"],
    // test/package/many-workers/ is a config of its own, run as a child process by many-workers.test.ts.
    exclude: ["test/package/*/**"],
    globalSetup: ["test/helpers/build.ts"],
    // Four files at a time on two cores: many files spend much of their time waiting on child
    // processes, sockets and timers, and more files fill those waits (measured on the 2-core
    // machine when the suite was the integration files alone: 2 workers ~50 s, 3 ~42 s, 4 no
    // faster than 3). The package files (10-40 s each, npm installs and child processes) take a
    // worker each for the first half minute (the sequencer starts them early): with three
    // workers the ~100 integration files had none left until the first ended.
    maxWorkers: 4,
    // Each worker process (the default `forks` pool) runs its files one after another without
    // re-importing every module per file: importing express, zod schemas, discord.js and Baileys
    // again for each of ~50 files was half the suite's CPU time. Safe here because nothing is
    // mocked (no vi.mock, no fake timers, no stubbed globals), the product keeps no module-level
    // state (its metrics use their own registries, clocks and stores are injected), and every
    // file starts and closes its own servers on port 0 and its own temporary directories.
    isolate: false,
    sequence: { sequencer: SuiteOrderSequencer },
  },
});
