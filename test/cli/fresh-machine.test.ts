/**
 * `npm test` on a machine with only Node.js: the README's test command runs (as a child, on a few
 * files) with every system program hidden from `PATH` (and PostgreSQL's Debian folder out of reach
 * through `POSTGRES_BIN`). It must exit 0, name each skipped test with what it lacks and the one
 * command that installs it; under `CI=true` the same skips fail the run.
 *
 * The child runs use one vitest worker (`--maxWorkers=1`): what is checked is the run's exit code
 * and its report, which do not depend on how many workers ran the files; each worker more
 * imported the code again (18 s of CPU for this file with four workers, 14-15 s with one).
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { tempDir } from "../helpers/emulator.js";

const ROOT = join(import.meta.dirname, "..", "..");
// One file for each need: Chromium and PostgreSQL together, PostgreSQL, speech; and one that runs.
const FILES = [
  "test/browser/cluster-console.test.ts",
  "test/daemon/postgres/shared-sessions.test.ts",
  "test/daemon/voice-notes-local.test.ts",
  "test/daemon/unit/keys.test.ts",
];

interface Run {
  code: number | null;
  out: string;
}

/** `node scripts/test.mjs --maxWorkers=1 FILES` (default: the four above) with a PATH that holds `node` alone. */
function runOnBareMachine(ci: boolean, files: readonly string[] = FILES): Promise<Run> {
  const { path: home, remove } = tempDir("agent-bridge-fresh-");
  onTestFinished(remove);
  const bin = join(home, "bin");
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, "node"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: bin,
    POSTGRES_BIN: join(home, "no-postgres"),
    AGENT_BRIDGE_TEST_RESULTS: join(home, "results"),
  };
  delete env.CHROMIUM_PATH;
  delete env.CI;
  if (ci) env.CI = "true";
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, "scripts", "test.mjs"), "--maxWorkers=1", ...files], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

describe("npm test on a machine with only Node.js", () => {
  it("exits 0, naming each skipped test, what it lacks and the command that installs it", { timeout: 120_000 }, async () => {
    const { code, out } = await runOnBareMachine(false);
    expect(code, out).toBe(0);
    const tail = out.slice(out.lastIndexOf("test(s) skipped"));
    expect(tail).toMatch(
      /for want of Chromium \(the web consoles' browser tests\) and a PostgreSQL server .*; install: (sudo )?bash scripts\/install-system-programs\.sh chromium postgres\n\s+test\/browser\/cluster-console\.test\.ts > shows the nodes/,
    );
    expect(tail).toMatch(
      /for want of a PostgreSQL server[^\n]*install: (sudo )?bash scripts\/install-system-programs\.sh postgres\n(\s+test\/daemon\/postgres\/shared-sessions\.test\.ts > [^\n]+\n){2}/,
    );
    expect(tail).toMatch(
      /for want of espeak-ng, sox and pocketsphinx[^\n]*install: (sudo )?bash scripts\/install-system-programs\.sh speech\n\s+test\/daemon\/voice-notes-local\.test\.ts > hears a spoken voice note/,
    );
    // The closing line counts what ran and what was skipped; the unit file's tests passed.
    expect(out.trimEnd().split("\n").at(-1)).toMatch(/^[1-9]\d* passed, 0 failed, 4 skipped$/);
  });

  it("npm ci has no install script left undecided: each is allowed or denied in package.json, with its reason", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      allowScripts: Record<string, boolean>;
      "//allowScripts": Record<string, string>;
    };
    expect(Object.keys(manifest["//allowScripts"]).filter((k) => k !== "why")).toEqual(Object.keys(manifest.allowScripts));
    // npm's own review of node_modules as `npm ci` left it (the warning `npm ci` prints is this list).
    const npm = join(process.execPath, "..", "npm");
    const review = spawnSync(existsSync(npm) ? npm : "npm", ["install-scripts", "ls"], { cwd: ROOT, encoding: "utf8" });
    if (review.status !== 0 && /Unknown command/i.test(`${review.stdout}${review.stderr}`)) {
      // An npm from before allowScripts (npm 10, which Node 20 and 22 bring): it runs every
      // install script, as npm always did, and has no such warning to print.
      expect(execFileSync(existsSync(npm) ? npm : "npm", ["--version"], { encoding: "utf8" })).toMatch(/^(\d|10)\./);
      return;
    }
    expect(review.stdout).toContain("No packages with unreviewed install scripts.");
  });

  it("under CI=true a skip fails the run", { timeout: 120_000 }, async () => {
    // One file is enough to show it (each child run starts a vitest of its own).
    const { code, out } = await runOnBareMachine(true, ["test/daemon/voice-notes-local.test.ts", "test/daemon/unit/keys.test.ts"]);
    expect(code, out).toBe(1);
    expect(out).toContain("1 test(s) skipped under CI=true");
    expect(out.trimEnd().split("\n").at(-1)).toMatch(/^[1-9]\d* passed, 1 failed$/);
  });
});
