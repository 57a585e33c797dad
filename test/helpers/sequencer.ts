/**
 * Vitest's order (longest files first, by the last run's durations; by size on a first run)
 * with the projects in this order: unit, package, browser, then the rest (integration; the
 * cluster project is a group of its own, run after all of these).
 * - unit first: its files are quick and run while the type check and the linter still use
 *   the other core.
 * - then the long files: the package files (npm install, a child vitest with 8 workers; 20-40 s
 *   each) and the browser file take a worker each from the start, while the other workers go
 *   through the ~100 short integration files. Ordered by size alone (a clean CI clone has no
 *   durations: these files are short), they came last and ran one at a time, the rest of the
 *   machine idle: about a minute of the suite.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node";

const PROJECT_ORDER = ["unit", "package", "browser"];

export class ProjectOrderSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const i = PROJECT_ORDER.indexOf(spec.project.name);
      return i === -1 ? PROJECT_ORDER.length : i;
    };
    // Array.prototype.sort is stable: within a project, vitest's own order stays.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
