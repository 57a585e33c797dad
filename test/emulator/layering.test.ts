/**
 * The emulator's layers: storage and workspaces never reach up into route
 * modules, and no two emulator modules import each other in a ring (type
 * imports and `import()` included), so each layer can be read, tested and
 * changed without the ones above it.
 */
import { describe, expect, it } from "vitest";
import { cycles as cyclesOf, importGraph } from "../helpers/import-graph.js";

const graph = new Map([...importGraph(["emulator"])].map(([from, to]) => [from, to.filter((t) => t.startsWith("emulator/"))]));
const cycles = () => cyclesOf(graph);

describe("the emulator's layers", () => {
  it("reads the import graph it checks (the store's schema imports the channel catalog)", () => {
    expect(graph.get("emulator/store/schema.ts")).toContain("emulator/channels/catalog.ts");
    expect(graph.get("emulator/index.ts")).toContain("emulator/store/store.ts");
  });

  it("store and workspace modules never import a route module", () => {
    const upward = [...graph]
      .filter(([from]) => from.startsWith("emulator/store/") || from.startsWith("emulator/workspace/"))
      .flatMap(([from, to]) => to.filter((t) => t.startsWith("emulator/routes/")).map((t) => `${from} -> ${t}`));
    expect(upward).toEqual([]);
  });

  it("has no import cycle among its modules, type imports included", () => {
    expect(cycles()).toEqual([]);
  });
});
