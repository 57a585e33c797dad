/**
 * No import cycle among the project's own modules, type imports and `import()` included: a cycle
 * makes the load order matter, and a type-only one still ties two modules' designs together
 * (the adapters' platform.ts <-> index.ts, the emulator's store <-> routes, both undone in #16).
 */
import { join } from "node:path";
import { expect, it } from "vitest";
import { cycles, importGraph, importsOf, ROOT } from "../../helpers/import-graph.js";

it("has no import cycle among the project's modules, type imports included", () => {
  expect(cycles(importGraph(["bin", "daemon", "emulator", "shared"]))).toEqual([]);
});

it("sees a cycle when there is one (the scan reads type imports and import())", () => {
  const graph = new Map([
    ["a", ["b"]],
    ["b", ["a"]],
    ["c", ["a"]],
  ]);
  expect(cycles(graph)).toEqual([["a", "b"]]);
  expect(importsOf(join(ROOT, "daemon", "adapters", "registry.ts")).length).toBeGreaterThan(0);
});
