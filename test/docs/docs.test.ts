/**
 * The documentation stays true to the repository: every relative link in
 * README.md and docs/*.md reaches a file (and a heading, when it names one),
 * every route of the route table is documented, and every emulator flag.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { routes, type RouteSpec } from "../../shared/api.js";
import { pages } from "../../shared/pages.js";
import { createProgram } from "../../bin/program.js";

const root = resolve(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const docs = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** Markdown without fenced code blocks and inline code, where a `[x](y)` is not a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "``");

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of markdown.replace(/^```[\s\S]*?^```/gm, "").split("\n")) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

function links(file: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  prose(read(file))
    .split("\n")
    .forEach((text, i) => {
      for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push({ target: m[1]!, line: i + 1 });
    });
  return out;
}

describe("links in README.md and docs/", () => {
  it("finds the documents and their links", () => {
    expect(docs).toEqual(expect.arrayContaining(["README.md", "docs/api-contract.md", "docs/emulator.md"]));
    expect(links("README.md").length).toBeGreaterThan(5);
  });

  it.each(docs)("every relative link in %s reaches a file, and the heading it names", (file) => {
    const broken: string[] = [];
    for (const { target, line } of links(file)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined];
      const path = pathPart ? resolve(dirname(join(root, file)), decodeURIComponent(pathPart)) : join(root, file);
      if (!path.startsWith(root) || !existsSync(path)) {
        broken.push(`${file}:${line} ${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && statSync(path).isFile() && path.endsWith(".md") && !anchors(readFileSync(path, "utf8")).has(anchor)) {
        broken.push(`${file}:${line} ${target}: no heading #${anchor} in ${relative(root, path)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("refers to no specification outside the repository", () => {
    for (const file of docs) {
      const text = read(file);
      expect(text, file).not.toMatch(/service-api\.md|(?<![-\w])contract\.md|contract section \d/);
    }
  });
});

describe("what the docs cover", () => {
  const contract = read("docs/api-contract.md");
  const emulator = read("docs/emulator.md");
  const readme = read("README.md");

  it.each(Object.entries(routes) as [string, RouteSpec][])("%s is documented", (_id, spec) => {
    if (spec.access.kind === "admin") {
      expect(emulator).toContain(spec.path);
      // The README's control-plane table names it too (instance and organization ids shortened to {id}).
      expect(readme).toContain(spec.path.replace(/\{(instance|organization)_id\}/, "{id}"));
    } else {
      // Instance routes may be written relative to the instance: `.../files`.
      const short = spec.path.replace("/v1/instances/{instance_id}", "...");
      expect(contract.includes(spec.path) || contract.includes(short), `${spec.method} ${spec.path}`).toBe(true);
    }
  });

  it.each(Object.entries(pages))("the control-plane page %s is documented", (_id, page) => {
    expect(emulator).toContain(page.path);
    expect(readme).toContain(page.path);
  });

  it("documents every emulator flag in docs/emulator.md and the README", () => {
    // The flags as the command parser itself knows them (bin/program.ts), so a new one cannot hide.
    const command = createProgram(() => {}).commands.find((c) => c.name() === "emulator")!;
    const flags = new Set(command.options.map((o) => o.long!).filter((f) => f !== "--version" && f !== "--help"));
    expect(flags).toContain("--upload-limit-mb");
    for (const flag of flags) {
      expect(emulator, flag).toContain(`\`${flag}`);
      expect(readme, flag).toContain(`\`${flag}`);
    }
  });
});
