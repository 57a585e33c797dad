/**
 * No import cycle among the project's own modules, type imports and `import()` included: a cycle
 * makes the load order matter, and a type-only one still ties two modules' designs together
 * (the adapters' platform.ts <-> index.ts, the emulator's store <-> routes, both undone in #16).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..", "..");
const FOLDERS = ["bin", "daemon", "emulator", "shared"];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Every relative specifier a file names: `import`, `import type`, `export … from`, `import()`. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gms),
    ...text.matchAll(/^\s*import\s*["']([^"']+)["']/gm),
    ...text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g),
  ].map((m) => m[1] ?? "");
  return specifiers.filter((s) => s.startsWith(".")).map((s) => resolve(dirname(file), s.replace(/\.js$/, ".ts")));
}

/** Strongly connected components of more than one module, or a module importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const onStack = new Set<string>();
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string) => {
    indexOf.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
      }
    }
    if (low.get(v) === indexOf.get(v)) {
      const component: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component);
    }
  };
  for (const v of graph.keys()) if (!indexOf.has(v)) visit(v);
  return found;
}

it("has no import cycle among the project's modules, type imports included", () => {
  const files = FOLDERS.flatMap((f) => sourceFiles(join(ROOT, f)));
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  const named = cycles(graph).map((c) => c.map((f) => relative(ROOT, f)).sort());
  expect(named).toEqual([]);
});

it("sees a cycle when there is one (the scan reads type imports and import())", () => {
  const graph = new Map([
    ["a", ["b"]],
    ["b", ["a"]],
    ["c", ["a"]],
  ]);
  expect(cycles(graph).map((c) => c.sort())).toEqual([["a", "b"]]);
  expect(importsOf(join(ROOT, "daemon", "adapters", "registry.ts")).length).toBeGreaterThan(0);
});
