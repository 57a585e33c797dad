import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { backoffDelay, createBackoff } from "../../shared/backoff.js";
import type { Random } from "../../shared/random.js";

/** Jitter fixed at its top: every delay is the full exponential step. */
const top: Random = { bytes: (n) => Buffer.alloc(n), float: () => 1 };

describe("Backoff", () => {
  it("grows with each failure in a row, up to the ceiling, and starts over after a success", () => {
    const backoff = createBackoff({ baseMs: 100, maxMs: 500 }, top);
    expect([backoff.failed(), backoff.failed(), backoff.failed(), backoff.failed()]).toEqual([100, 200, 400, 500]);
    expect(backoff.failures).toBe(4);
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect(backoff.failed()).toBe(100);
  });

  it("gives the delay for a count kept elsewhere without counting", () => {
    const backoff = createBackoff({ baseMs: 100, maxMs: 10_000 }, top);
    expect(backoff.delayFor(3)).toBe(400);
    expect(backoff.failures).toBe(0);
  });

  it("is the only user of the formula: no source outside shared/backoff.ts calls backoffDelay", () => {
    const repo = resolve(import.meta.dirname, "../..");
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
      );
    const found = ["daemon", "emulator", "shared"]
      .flatMap((dir) => sources(join(repo, dir)))
      .filter((file) => relative(repo, file) !== join("shared", "backoff.ts"))
      .filter((file) => /\bbackoffDelay\b/.test(readFileSync(file, "utf8")))
      .map((file) => relative(repo, file));
    expect(found).toEqual([]);
    // The guard looks at real files: the formula's own module is among them.
    expect(backoffDelay(1, { baseMs: 10, maxMs: 10 }, top)).toBe(10);
  });
});
