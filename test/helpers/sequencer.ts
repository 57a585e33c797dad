/**
 * Vitest's order (longest files first, by the last run's durations; by size on a first run)
 * with the groups placed: unit, then the package files, then the rest of the integration
 * project, the browser files a third of the way into it, then the cluster project (a group of
 * its own: vitest starts it once all the others are done).
 * - unit first: its files are quick and run while the type check and the linter still use
 *   the other core.
 * - then the package files (npm install, a child vitest with 8 workers; 10-60 s each) take a
 *   worker each from the start, while the other worker goes through the short integration
 *   files. Ordered by size alone (a clean CI clone has no durations: these files are short),
 *   they came last and ran one at a time, the rest of the machine idle: about a minute.
 * - the browser files (15 s, 4 s, 2 s) not beside them: with all six long files first, they
 *   took all four workers, and no other file started for the first 50 s of the suite.
 */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

export class ProjectOrderSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const of = (name: string) => sorted.filter((spec) => spec.project.name === name);
    const under = (folder: string) => (spec: TestSpecification) => relative(spec.project.config.root, spec.moduleId).startsWith(`test/${folder}/`);
    const integration = of("integration");
    const packages = integration.filter(under("package"));
    const browsers = integration.filter(under("browser"));
    const rest = integration.filter((spec) => !packages.includes(spec) && !browsers.includes(spec));
    const third = Math.ceil(rest.length / 3);
    const placed = [...of("unit"), ...packages, ...rest.slice(0, third), ...browsers, ...rest.slice(third), ...of("cluster")];
    // A project added later and not placed here still runs, last.
    return [...placed, ...sorted.filter((spec) => !placed.includes(spec))];
  }
}
