/**
 * The documentation stays true to the repository: every relative link in
 * README.md and docs/*.md reaches a file (and a heading, when it names one),
 * every route of the route table is documented, and every emulator flag. The
 * README stays a short entrance that points to one document per reader.
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

/** One document per reader; the README points to each. */
const readers = ["docs/emulator.md", "docs/testing.md", "docs/bridge.md", "docs/cluster.md", "docs/platforms.md", "docs/architecture.md"];

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
    expect(docs).toEqual(expect.arrayContaining(["README.md", "docs/api-contract.md", ...readers]));
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

describe("the README: an entrance, one document per reader", () => {
  it("is at most 250 lines", () => {
    expect(read("README.md").split("\n").length).toBeLessThanOrEqual(250);
  });

  it("links to every reader's document and the API contract", () => {
    const targets = new Set(links("README.md").map((l) => l.target.split("#")[0]));
    for (const doc of [...readers, "docs/api-contract.md"]) expect(targets, doc).toContain(doc);
  });

  it("keeps `npm test` as the test command, the one CI runs", () => {
    expect(read("README.md")).toContain("npm test");
    expect(read(".ci/run")).toMatch(/^npm test$/m);
  });
});

describe("nothing told twice", () => {
  /** Prose sentences of some length, as they read (code blocks and table rows left out). */
  function sentences(file: string): string[] {
    const text = read(file)
      .replace(/^```[\s\S]*?^```/gm, "")
      .split("\n")
      .filter((line) => !line.startsWith("|"))
      .join(" ")
      .replace(/\s+/g, " ");
    return text
      .split(/(?<=[.!?:;])\s+/)
      .map((s) => s.trim())
      .filter((s) => s.length >= 60);
  }

  it("no sentence of the docs appears twice, in one document or two", () => {
    const where = new Map<string, string[]>();
    for (const file of docs) for (const s of sentences(file)) where.set(s, [...(where.get(s) ?? []), file]);
    expect([...where].filter(([, files]) => files.length > 1).map(([s, files]) => `${files.join(", ")}: ${s}`)).toEqual([]);
  });

  it("no code block appears twice", () => {
    const where = new Map<string, string[]>();
    for (const file of docs) for (const m of read(file).matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)) where.set(m[1]!, [...(where.get(m[1]!) ?? []), file]);
    expect([...where].filter(([, files]) => files.length > 1).map(([block, files]) => `${files.join(", ")}: ${block.slice(0, 80)}`)).toEqual([]);
  });
});

describe("what the docs cover", () => {
  const contract = read("docs/api-contract.md");
  const emulator = read("docs/emulator.md");

  it.each(Object.entries(routes) as [string, RouteSpec][])("%s is documented", (_id, spec) => {
    if (spec.access.kind === "admin") {
      expect(emulator).toContain(spec.path);
    } else {
      // Instance routes may be written relative to the instance: `.../files`.
      const short = spec.path.replace("/v1/instances/{instance_id}", "...");
      expect(contract.includes(spec.path) || contract.includes(short), `${spec.method} ${spec.path}`).toBe(true);
    }
  });

  it.each(Object.entries(pages))("the control-plane page %s is documented", (_id, page) => {
    expect(emulator).toContain(page.path);
  });

  it("documents every emulator flag in docs/emulator.md", () => {
    // The flags as the command parser itself knows them (bin/program.ts), so a new one cannot hide.
    const command = createProgram(() => {}).commands.find((c) => c.name() === "emulator")!;
    const flags = new Set(command.options.map((o) => o.long!).filter((f) => f !== "--version" && f !== "--help"));
    expect(flags).toContain("--upload-limit-mb");
    for (const flag of flags) {
      expect(emulator, flag).toContain(`\`${flag}`);
    }
  });
});
