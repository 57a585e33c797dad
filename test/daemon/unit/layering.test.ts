/**
 * The daemon's floors: every folder imports only its own folder and the
 * floors below it (type imports and `import()` included), so the shared
 * vocabulary can be read without the adapters, the adapters without the
 * config, the core without the command line. docs/architecture.md ("Daemon
 * layers") says what lives on each floor.
 */
import { describe, expect, it } from "vitest";
import { importGraph } from "../../helpers/import-graph.js";

/** Bottom first. Folders on one floor do not import each other. `.` is the files at daemon/'s top. */
const FLOORS: readonly (readonly string[])[] = [
  ["vocabulary"],
  ["helpers"],
  ["state", "adapters", "transcription"],
  ["config"],
  ["core", "check"],
  ["ops"],
  ["."],
];

/** The daemon folder a module lives in (`.` for daemon/'s own files), or undefined outside daemon/. */
function folderOf(module: string): string | undefined {
  const parts = module.split("/");
  if (parts[0] !== "daemon") return undefined;
  return parts.length === 2 ? "." : parts[1];
}

const floorOf = (folder: string) => FLOORS.findIndex((f) => f.includes(folder));

/** `from -> to` for every import that does not go to its own folder or a lower floor. */
function upward(graph: ReadonlyMap<string, readonly string[]>): string[] {
  return [...graph].flatMap(([from, tos]) => {
    const own = folderOf(from)!;
    return tos
      .filter((to) => {
        const folder = folderOf(to);
        return folder !== undefined && folder !== own && floorOf(folder) >= floorOf(own);
      })
      .map((to) => `${from} -> ${to}`);
  });
}

const graph = importGraph(["daemon"]);

describe("the daemon's floors", () => {
  it("places every daemon folder on a floor", () => {
    const folders = new Set([...graph.keys()].map((m) => folderOf(m)!));
    expect([...folders].filter((f) => floorOf(f) < 0)).toEqual([]);
    expect(FLOORS.flat().filter((f) => !folders.has(f))).toEqual([]);
  });

  it("reads the import graph it checks (the core's relay imports the store's vocabulary)", () => {
    expect(graph.get("daemon/core/relay.ts")).toContain("daemon/vocabulary/store.ts");
    expect(graph.get("daemon/adapters/registry.ts")).toContain("daemon/adapters/telegram/platform.ts");
  });

  it("imports only downward: no folder reaches its own floor or one above", () => {
    expect(upward(graph)).toEqual([]);
  });

  it("sees an upward import when there is one", () => {
    const bad = new Map([
      ["daemon/vocabulary/records.ts", ["daemon/core/keys.ts"]],
      ["daemon/adapters/telegram/index.ts", ["daemon/state/store.ts", "daemon/vocabulary/adapter.ts"]],
      ["daemon/core/relay.ts", ["daemon/check/index.ts", "daemon/core/turn.ts"]],
    ]);
    expect(upward(bad)).toEqual([
      "daemon/vocabulary/records.ts -> daemon/core/keys.ts",
      "daemon/adapters/telegram/index.ts -> daemon/state/store.ts",
      "daemon/core/relay.ts -> daemon/check/index.ts",
    ]);
  });

  it("never imports the emulator or the command line (what runs both lives in bin/)", () => {
    const outside = [...graph].flatMap(([from, tos]) => tos.filter((to) => /^(emulator|bin)\//.test(to)).map((to) => `${from} -> ${to}`));
    expect(outside).toEqual([]);
  });

  it("stands on shared/, which imports no daemon module", () => {
    const shared = [...importGraph(["shared"])].flatMap(([from, tos]) => tos.filter((to) => to.startsWith("daemon/")).map((to) => `${from} -> ${to}`));
    expect(shared).toEqual([]);
  });
});
