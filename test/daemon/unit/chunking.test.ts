import { describe, expect, it } from "vitest";
import { splitReply } from "../../../daemon/core/chunking.js";
import { seededRandom, type Random } from "../../../shared/random.js";

const FENCE_LINE = /^[ \t]*(`{3,}|~{3,})(.*)$/;

/** Independent fence walk: the info string of the open block at each line, and whether all close. */
function fenceWalk(chunk: string): { balanced: boolean; emptyBlocks: number; infoOfLine: (string | undefined)[] } {
  let open: { marker: string; info: string; lines: number } | undefined;
  let emptyBlocks = 0;
  const infoOfLine: (string | undefined)[] = [];
  for (const line of chunk.split("\n")) {
    const m = FENCE_LINE.exec(line);
    if (!open && m && m[1]) {
      open = { marker: m[1], info: (m[2] ?? "").trim(), lines: 0 };
      infoOfLine.push(undefined);
    } else if (open && m?.[1] && m[1][0] === open.marker[0] && m[1].length >= open.marker.length && !m[2]?.trim()) {
      if (open.lines === 0) emptyBlocks++;
      open = undefined;
      infoOfLine.push(undefined);
    } else {
      if (open) open.lines++;
      infoOfLine.push(open?.info);
    }
  }
  return { balanced: open === undefined, emptyBlocks, infoOfLine };
}

const content = (s: string) =>
  s
    .split(/\r?\n/)
    .filter((l) => !FENCE_LINE.test(l))
    .join("")
    .replace(/\s+/g, "");

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random.float() * items.length)]!;
}

const word = (random: Random, i: number) => `w${i}${"abcdefghijklmnop".slice(0, 1 + Math.floor(random.float() * 10))}`;

/**
 * Paragraphs, bullet lists and code blocks; every code line names its block
 * (`bK`) and each block has its own info string (`langK`), so a test can see
 * that a reopened block carries the right one.
 */
function generate(random: Random, length: number, codeShare = 0.4): string {
  const parts: string[] = [];
  let size = 0;
  let block = 0;
  let n = 0;
  while (size < length) {
    const r = random.float();
    let part: string;
    if (r < codeShare) {
      const lines: string[] = [];
      const count = 3 + Math.floor(random.float() * 60);
      for (let i = 0; i < count; i++) {
        const indent = "  ".repeat(Math.floor(random.float() * 4));
        lines.push(`${indent}b${block} const v${i} = ${pick(random, ["f(x)", "[1, 2, 3]", "'s t r'", "a + b"])};`);
      }
      const fence = random.float() < 0.2 ? "~~~" : "```";
      part = `${fence}lang${block}\n${lines.join("\n")}\n${fence}`;
      block++;
    } else if (r < codeShare + 0.2) {
      const count = 2 + Math.floor(random.float() * 12);
      part = Array.from({ length: count }, () => `- ${Array.from({ length: 3 + Math.floor(random.float() * 12) }, () => word(random, n++)).join(" ")}`).join(
        "\n",
      );
    } else {
      part = Array.from({ length: 5 + Math.floor(random.float() * 120) }, () => word(random, n++)).join(" ");
    }
    parts.push(part);
    size += part.length + 2;
  }
  return parts.join("\n\n");
}

/** Every property the platforms and readers rely on. */
function checkChunks(text: string, chunks: string[], limit: number) {
  expect(chunks.length).toBeGreaterThan(0);
  for (const chunk of chunks) {
    expect(chunk.length).toBeLessThanOrEqual(limit);
    expect(chunk.trim()).not.toBe("");
    expect(chunk).not.toContain("\r");
    const { balanced, emptyBlocks, infoOfLine } = fenceWalk(chunk);
    expect(balanced, `unbalanced fences in chunk:\n${chunk}`).toBe(true);
    // No test text has an empty block: one here would be a split right after an opener.
    expect(emptyBlocks, `empty block in chunk:\n${chunk}`).toBe(0);
    // Code from block K sits inside a block opened as langK, reopened or not.
    chunk.split("\n").forEach((line, i) => {
      const tag = /^\s*b(\d+) const/.exec(line);
      if (tag) expect(infoOfLine[i]).toBe(`lang${tag[1]}`);
    });
  }
  expect(chunks.map(content).join("")).toBe(content(text));
}

describe("splitReply", () => {
  it("returns short text as one chunk, and exactly-at-limit text unsplit", () => {
    expect(splitReply("hello world", 4096)).toEqual(["hello world"]);
    const exact = `${"x".repeat(100)} ${"y".repeat(99)}`;
    expect(exact.length).toBe(200);
    expect(splitReply(exact, 200)).toEqual([exact]);
    expect(splitReply(exact, 199)).toEqual(["x".repeat(100), "y".repeat(99)]);
  });

  it("returns no chunks for empty or whitespace-only text", () => {
    expect(splitReply("", 10)).toEqual([]);
    expect(splitReply(" \n\n \r\n\t", 10)).toEqual([]);
  });

  it("rejects a limit that is not a positive integer", () => {
    expect(() => splitReply("a", 0)).toThrow(RangeError);
    expect(() => splitReply("a", 2.5)).toThrow(RangeError);
  });

  it("prefers a paragraph break in the second half of the window over a later line break", () => {
    const first = "a".repeat(60);
    const text = `${first}\n\n${"b".repeat(20)}\n${"c".repeat(30)}`;
    expect(splitReply(text, 100)).toEqual([first, `${"b".repeat(20)}\n${"c".repeat(30)}`]);
  });

  it("takes a late line break over an early paragraph break", () => {
    const text = `intro\n\n${"b".repeat(80)}\n${"c".repeat(40)}`;
    expect(splitReply(text, 100)).toEqual([`intro\n\n${"b".repeat(80)}`, "c".repeat(40)]);
  });

  it("splits at word boundaries when a paragraph has no line breaks", () => {
    const words = Array.from({ length: 300 }, (_, i) => `word${i}`);
    const chunks = splitReply(words.join(" "), 50);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(50);
      expect(c).toBe(c.trim());
    }
    expect(chunks.join(" ").split(" ")).toEqual(words);
  });

  it("hard-cuts only a word longer than the limit", () => {
    const long = "L".repeat(250);
    const chunks = splitReply(`short words here ${long} tail`, 100);
    expect(chunks).toEqual(["short words here", "L".repeat(100), "L".repeat(100), `${"L".repeat(50)} tail`]);
  });

  it("never splits a surrogate pair", () => {
    const text = "😀".repeat(30);
    const chunks = splitReply(text, 7);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(7);
      expect(c).not.toMatch(/[\ud800-\udbff]$/);
      expect(c).not.toMatch(/^[\udc00-\udfff]/);
    }
    expect(chunks.join("")).toBe(text);
  });

  it("normalises CRLF and keeps content", () => {
    const text = generate(seededRandom("crlf"), 9000).replace(/\n/g, "\r\n");
    const chunks = splitReply(text, 2000);
    expect(chunks.length).toBeGreaterThan(4);
    checkChunks(text, chunks, 2000);
  });

  it("closes a code block at a split and reopens it with the same info string", () => {
    const code = Array.from({ length: 40 }, (_, i) => `  line ${i} of code;`).join("\n");
    const text = `Here:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nDone.`;
    const chunks = splitReply(text, 300);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks[0]).toMatch(/^Here:\n\n```ts\n {2}line 0 of code;/);
    for (const c of chunks.slice(0, -1)) expect(c.endsWith("\n```")).toBe(true);
    for (const c of chunks.slice(1)) expect(c.startsWith("```ts\n")).toBe(true);
    // Indentation of the first line after a split survives.
    for (const c of chunks.slice(1)) expect(c.split("\n")[1]).toMatch(/^ {2}line/);
    expect(chunks.at(-1)).toMatch(/\n```\n\nDone\.$/);
    checkChunks(text, chunks, 300);
  });

  it("counts the markers against the limit exactly", () => {
    const lines = Array.from({ length: 30 }, (_, i) => `x${String(i).padStart(2, "0")}`);
    const text = `\`\`\`py\n${lines.join("\n")}\n\`\`\``;
    // 40 - "```py\n" (6) - "\n```" (4) leaves 30: seven 3-character lines (27 with newlines).
    const chunks = splitReply(text, 40);
    expect(chunks).toEqual([
      `\`\`\`py\n${lines.slice(0, 7).join("\n")}\n\`\`\``,
      `\`\`\`py\n${lines.slice(7, 14).join("\n")}\n\`\`\``,
      `\`\`\`py\n${lines.slice(14, 21).join("\n")}\n\`\`\``,
      `\`\`\`py\n${lines.slice(21, 28).join("\n")}\n\`\`\``,
      `\`\`\`py\n${lines.slice(28).join("\n")}\n\`\`\``,
    ]);
  });

  it.each([
    ["the same closing marker", "```"],
    ["a longer, indented closing marker", "   ``````"],
  ])("does not start a chunk with a block's closing line nor end one on a bare opener (%s)", (_, closer) => {
    const text = `${"p ".repeat(40).trim()}\n\`\`\`js\n${"a".repeat(20)}\n${closer}\nafter`;
    for (let limit = 20; limit <= text.length; limit++) {
      const chunks = splitReply(text, limit);
      checkChunks(text, chunks, limit);
      for (const c of chunks) {
        expect(c.trimEnd().endsWith("```js")).toBe(false);
        expect(c.trimStart()).not.toMatch(/^`+\n/);
      }
    }
  });

  it("handles code lines longer than the limit inside a block", () => {
    const text = `\`\`\`\n${"z".repeat(500)} ${"q".repeat(30)}\n\`\`\``;
    const chunks = splitReply(text, 120);
    checkChunks(text, chunks, 120);
    expect(chunks.length).toBeGreaterThan(4);
  });

  it("leaves a block the reply never closed open only in its last chunk", () => {
    const text = `intro\n\`\`\`sh\n${Array.from({ length: 50 }, (_, i) => `echo ${i}`).join("\n")}`;
    const chunks = splitReply(text, 100);
    for (const c of chunks.slice(0, -1)) expect(fenceWalk(c).balanced).toBe(true);
    expect(chunks.at(-1)).toMatch(/^```sh\n/);
    expect(fenceWalk(chunks.at(-1)!).balanced).toBe(false);
    expect(chunks.map(content).join("")).toBe(content(text));
  });

  it("treats a block as plain text when its markers cannot fit a tiny limit", () => {
    const text = "```\nabc def ghi\n```";
    const chunks = splitReply(text, 6);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(6);
    expect(chunks.join("").replace(/\s/g, "")).toBe(text.replace(/\s/g, ""));
  });

  it.each([
    [4096, "a"],
    [4096, "b"],
    [2000, "c"],
    [2000, "d"],
    [2000, "e"],
    [1000, "f"],
  ])("splits 9,000-character mixed replies with code at %i (seed %s)", (limit, seed) => {
    const text = generate(seededRandom(seed), 9000);
    expect(text.length).toBeGreaterThanOrEqual(9000);
    const chunks = splitReply(text, limit);
    expect(chunks.length).toBeGreaterThanOrEqual(Math.ceil(text.length / limit));
    checkChunks(text, chunks, limit);
  });

  it("survives many small fences and code-heavy replies at many limits", () => {
    const random = seededRandom("many");
    for (let round = 0; round < 40; round++) {
      const text = generate(random, 3000, 0.8);
      const limit = 60 + Math.floor(random.float() * 1500);
      checkChunks(text, splitReply(text, limit), limit);
    }
  });

  it("adds no markers for a block whose opening line is longer than the limit", () => {
    const text = `\`\`\`${"i".repeat(300)}\nabc\n\`\`\``;
    const chunks = splitReply(text, 100);
    expect(chunks.join("")).toBe(text);
  });

  it("keeps a fence whose info string is too long to repeat balanced", () => {
    const text = `\`\`\`${"x".repeat(80)}\n${Array.from({ length: 30 }, (_, i) => `row ${i}`).join("\n")}\n\`\`\``;
    const chunks = splitReply(text, 100);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(100);
      expect(fenceWalk(c).balanced).toBe(true);
    }
    expect(chunks[1]).toMatch(/^```\n/);
  });
});
