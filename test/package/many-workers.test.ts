/**
 * Eight vitest workers, fifty tests each, share one `agent-bridge emulator`
 * process through sandboxes (test/package/many-workers/): every test
 * creates instances through a fault, moves its own clock, and asserts its
 * own journal exactly, so anything crossing between tests fails a count.
 * Run here as a child vitest with its own config (8 forks), importing the
 * package by its name, as another project does.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

it("400 tests in 8 workers on one emulator process never see each other", () => {
  const run = spawnSync(
    process.execPath,
    [join(ROOT, "node_modules", "vitest", "vitest.mjs"), "run", "--config", join(import.meta.dirname, "many-workers", "vitest.config.ts")],
    {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
      timeout: 170_000,
    },
  );
  const output = `${run.stdout}\n${run.stderr}`;
  expect(run.status, output.slice(-4000)).toBe(0);
  expect(output).toMatch(/Test Files\s+8 passed \(8\)/);
  expect(output).toMatch(/Tests\s+400 passed \(400\)/);
}, 180_000);
