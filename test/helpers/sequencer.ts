/**
 * Vitest's order (longest files first, by the last run's durations; by size on a first run)
 * with groups placed: the unit files, the package files, the first third of the rest, the
 * browser files, the cluster files, then the rest of the rest (its shortest files).
 * - unit first: its files are quick and run while the type check and the linter still use
 *   the other core.
 * - then the package files (npm install, a child vitest with 8 workers; 10-40 s each) take a
 *   worker each from the start, while the other workers go through the short files. Ordered
 *   by size alone (a clean CI clone has no durations: these files are short), they came last
 *   and ran one at a time, the rest of the machine idle: about a minute.
 * - the browser files (15 s, 4 s, 2 s) not beside them: with all six long files first, they
 *   took all four workers, and no other file started for the first 50 s of the suite.
 * - the cluster files (several daemons on PostgreSQL with 1.5-4 s leases renewed every third,
 *   and tests that wait on them) once the package files are done: beside the package files'
 *   installs a daemon was starved long enough to lose a lease. They were last, and the
 *   suite's end was theirs alone: in a full run (2026-11-28, vitest 334 s) the last file of
 *   the rest ended at 259 s, then slack-cluster (76 s, mostly waits on leases and daemons)
 *   ran on with at most one other file for the last 50 s. Started before the rest's short
 *   files, their waits are filled by those files instead of left idle.
 */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** The files that run several daemons with short leases on one PostgreSQL server: after the package files. */
const CLUSTER = new Set([
  "test/daemon/postgres/failover-kill.test.ts",
  "test/daemon/postgres/failover.test.ts",
  "test/daemon/postgres/faults.test.ts",
  "test/daemon/postgres/faults-restarts.test.ts",
  "test/daemon/postgres/whatsapp-cluster.test.ts",
  "test/daemon/postgres/slack-cluster.test.ts",
  "test/daemon/postgres/googlechat-cluster.test.ts",
  "test/daemon/postgres/schedules-cluster.test.ts",
  "test/daemon/postgres/identity-links-cluster.test.ts",
]);

export class SuiteOrderSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const path = (spec: TestSpecification) => relative(spec.project.config.root, spec.moduleId);
    const under = (folder: string) => sorted.filter((spec) => path(spec).startsWith(`test/${folder}/`));
    const units = under("daemon/unit");
    const packages = under("package");
    const browsers = under("browser");
    const cluster = sorted.filter((spec) => CLUSTER.has(path(spec)));
    const placedApart = new Set([...units, ...packages, ...browsers, ...cluster]);
    const rest = sorted.filter((spec) => !placedApart.has(spec));
    const third = Math.ceil(rest.length / 3);
    return [...units, ...packages, ...rest.slice(0, third), ...browsers, ...cluster, ...rest.slice(third)];
  }
}
