/**
 * The daemon's floors: every folder imports only its own folder and the
 * floors below it (type imports and `import()` included), so the shared
 * vocabulary can be read without the adapters, the adapters without the
 * config, the core without the command line. docs/architecture.md ("Daemon
 * layers") says what lives on each floor.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { platforms } from "../../../daemon/adapters/registry.js";
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

/** The folders that know platforms only through the registry: a platform's word in one of their code lines is a platform leaking out of its folder. */
const PLATFORM_FREE = ["core", "state", "config", "vocabulary", "ops"];

const ROOT = join(import.meta.dirname, "../../..");

function typeScriptUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return typeScriptUnder(path);
    return e.name.endsWith(".ts") ? [path] : [];
  });
}

/** Platform types that code uses as ordinary identifiers too. */
const IDENTIFIER_TYPES: ReadonlySet<string> = new Set(["signal", "line"]);

/** `path:line: text` for each code line naming a platform; comments may name one as an example. */
function platformNames(path: string, text: string, types: readonly string[]): string[] {
  // A type that is also an everyday identifier (`signal`, every AbortSignal's; `line`, a line of text) counts only when quoted.
  const words = types.map((t) => (IDENTIFIER_TYPES.has(t) ? `["'\`]${t}["'\`]` : `\\b${t}\\b`));
  const word = new RegExp(`(${words.join("|")})`, "i");
  return text.split("\n").flatMap((line, i) => {
    if (/^\s*(\/\/|\/?\*)/.test(line)) return [];
    const code = line.replace(/\s\/\/ .*$/, "");
    return word.test(code) ? [`${path}:${i + 1}: ${line.trim()}`] : [];
  });
}

describe("platforms stay in their folders", () => {
  const types = platforms.map((p) => p.type);

  it(`no code line in daemon/{${PLATFORM_FREE.join(",")}} names a registered platform`, () => {
    const files = PLATFORM_FREE.flatMap((folder) => typeScriptUnder(`daemon/${folder}`));
    expect(files).toContain("daemon/core/relay.ts");
    const named = files.flatMap((path) => platformNames(path, readFileSync(join(ROOT, path), "utf8"), types));
    expect(named).toEqual([]);
  });

  it("sees a platform named in code, and lets a comment name one", () => {
    const text = ["/** As Telegram does it. */", "const x = 1; // telegram too", 'if (msg.platform === "telegram") skip();', "const isTerminally = 1;"].join(
      "\n",
    );
    expect(platformNames("f.ts", text, ["telegram", "terminal"])).toEqual(['f.ts:3: if (msg.platform === "telegram") skip();']);
    // A type that is an ordinary word counts only when quoted.
    expect(platformNames("f.ts", ["for (const line of lines) x(line);", 'if (p === "line") y();'].join("\n"), ["line"])).toEqual([
      'f.ts:2: if (p === "line") y();',
    ]);
  });
});
