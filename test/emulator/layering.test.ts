/**
 * The emulator's layers: its folders stand in floors (docs/architecture.md,
 * "Emulator layers") and every import goes to the same floor or one below;
 * storage and workspaces never reach up into route modules, and no two
 * emulator modules import each other in a ring (type imports and `import()`
 * included), so each layer can be read, tested and changed without the ones
 * above it.
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { cycles as cyclesOf, importGraph, moduleName, ROOT } from "../helpers/import-graph.js";

const graph = new Map([...importGraph(["emulator"])].map(([from, to]) => [from, to.filter((t) => t.startsWith("emulator/"))]));
const cycles = () => cyclesOf(graph);

/**
 * The floors, lowest first: a module imports only from its own floor or below. Paths are
 * relative to emulator/; a folder ends with "/". Every module must stand on one.
 */
const FLOORS: readonly (readonly string[])[] = [
  ["errors.ts", "faults.ts"],
  // Catalogs: data about channels and skills.
  ["channels/", "skills/"],
  // The state, its records and how they are kept.
  ["store/"],
  ["workspace/"],
  // Rules per resource (channel configs, installed skills, credential hashes), whoever applies them.
  ["rules/"],
  ["gateway/"],
  // Production code that seeds state from a fixture (sandboxes and the command line load them).
  ["seed/"],
  ["sandboxes/"],
  ["http/"],
  ["events/"],
  // Record and replay (the scrubber reads the captured bodies' secret-field rule), then the validating proxy that records.
  ["recording/"],
  ["proxy/"],
  ["views.ts"],
  ["routes/"],
  ["console/"],
  ["billing-page.ts", "env.ts", "index.ts", "cli.ts"],
];

/** `env.ts` is the dependency bag every operation is handed: it names the parts and holds none, so it may be named, as a type only, from any floor. */
const ENV = "emulator/env.ts";

const floorOf = (file: string): number => FLOORS.findIndex((floor) => floor.some((place) => file.slice("emulator/".length).startsWith(place)));

/** Whether `from` names `to` only in `import type` statements. */
function typeOnly(from: string, to: string): boolean {
  const text = readFileSync(join(ROOT, from), "utf8");
  const statements = [...text.matchAll(/^\s*(import|export)(\s+type)?\b[^;]*?from\s*["'](\.{1,2}\/[^"']+)["']/gm)];
  const naming = statements.filter((m) => moduleName(resolve(dirname(join(ROOT, from)), m[3]!.replace(/\.js$/, ".ts"))) === to);
  return naming.length > 0 && naming.every((m) => m[1] === "import" && m[2] !== undefined);
}

describe("the emulator's floors", () => {
  it("places every module on a floor", () => {
    expect([...graph.keys()].filter((file) => floorOf(file) < 0)).toEqual([]);
  });

  it("imports only from the same floor or below (env.ts, as a type, from anywhere)", () => {
    const upward = [...graph].flatMap(([from, tos]) =>
      tos
        .filter((to) => graph.has(to) && floorOf(to) > floorOf(from))
        .filter((to) => !(to === ENV && typeOnly(from, to)))
        .map((to) => `${from} -> ${to}`),
    );
    expect(upward).toEqual([]);
  });

  it("reads type-only imports of env.ts as such, and nothing else as one", () => {
    expect(typeOnly("emulator/routes/skills.ts", ENV)).toBe(true);
    expect(typeOnly("emulator/index.ts", "emulator/store/store.ts")).toBe(false);
  });

  it("keeps seeding state (seed/) apart from the routes, and the store apart from the gateway", () => {
    const crossing = [...graph].flatMap(([from, tos]) =>
      tos
        .filter(
          (to) =>
            (from.startsWith("emulator/seed/") && to.startsWith("emulator/routes/")) ||
            (from.startsWith("emulator/store/") && to.startsWith("emulator/gateway/")) ||
            (from.startsWith("emulator/sandboxes/") && to.startsWith("emulator/http/")),
        )
        .map((to) => `${from} -> ${to}`),
    );
    expect(crossing).toEqual([]);
  });
});

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
