/**
 * The suite's one cleanup idiom for a resource a test (or its `beforeEach`)
 * makes: closed when that test finishes, last made first closed. A resource
 * for a whole file is made in `beforeAll`, which returns its close.
 */
import { onTestFinished } from "vitest";

export function forThisTest<T extends { close(): unknown }>(resource: T): T {
  onTestFinished(async () => {
    await resource.close();
  });
  return resource;
}
