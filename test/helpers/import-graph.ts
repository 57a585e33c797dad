/**
 * The project's own import graph, read from the sources as text: what the
 * layering and import-cycle tests check. Modules are named by their path from
 * the repository root (`daemon/core/relay.ts`); only relative imports count.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

export const ROOT = join(import.meta.dirname, "..", "..");

/** Every TypeScript source below `dir` (declaration files left out), as absolute paths. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** A module's name: its path from the repository root, with `/`. */
export const moduleName = (path: string): string => relative(ROOT, path).split(sep).join("/");

/** Every relative module a file names: `import`, `import type`, `export … from`, a bare `import "…"` and `import("…")`. */
export function importsOf(path: string): string[] {
  const text = readFileSync(path, "utf8");
  const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s*)["'](\.{1,2}\/[^"']+)["']/gm)].map((m) => m[1] ?? "");
  return specifiers.map((s) => moduleName(resolve(dirname(path), s.replace(/\.js$/, ".ts"))));
}

/** The graph of the modules below `dirs` (repository-relative folders): each module and what it imports. */
export function importGraph(dirs: readonly string[]): Map<string, string[]> {
  const files = dirs.flatMap((d) => sourceFiles(join(ROOT, d)));
  return new Map(files.map((f) => [moduleName(f), importsOf(f)]));
}

/** Strongly connected components of more than one module, or a module importing itself (Tarjan), each sorted. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
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
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!indexOf.has(v)) visit(v);
  return found;
}
