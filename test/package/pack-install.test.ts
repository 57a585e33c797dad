/**
 * The package as another project gets it: `npm pack` of this repository
 * (dist/ built by the global setup; the tarball of scripts/pack-production.mjs,
 * one run shared with image.test.ts: test/helpers/packed.ts), installed into a fresh temporary
 * project beside vitest, jest, typescript and supertest; the examples of
 * docs/testing.md written into it file by file (each code block
 * that starts with `// file: PATH`, and each JSON block opened as
 * ```` ```json file=PATH ````, such as a recording), type-checked with strict `tsc` against
 * the installed package's declarations (`.mjs` files with `checkJs`), and run
 * under vitest, jest and `node:test`.
 *
 * Cost: `npm install` resolves from the local npm cache where it can
 * (`--prefer-offline`: the repository's own `npm ci` filled it); jest is not
 * a dependency here (its lock entries break `npm ci`, npm/cli#4828), so the
 * first run on a machine fetches it from the registry. About 10-40 s; tsc
 * about 5 s; the five runs (two of them replaying a recording) about 10 s.
 * It starts first, beside the short integration files (test/helpers/sequencer.ts).
 *
 * CPU (user+sys, alone, measured step by step): the install ~20 s (467 packages; the package's
 * own dependencies ~9 s, jest ~7 s, vitest, TypeScript and supertest ~5 s), the five runs, tsc and
 * the daemon's refusal ~12 s, `npm pack` ~5 s (now shared, and none at all while the packed
 * files are unchanged). `--ignore-scripts` and `--no-package-lock` measured no cheaper (no
 * install script of note here; the lock is cheap to write), and a lock file kept from an earlier
 * run saves ~3 s of resolving (the rest is unpacking), so the install stays as a user runs it.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packedTarball } from "../helpers/packed.js";

const ROOT = join(import.meta.dirname, "..", "..");
const versionOf = (name: string): string => (JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;

/** The testing guide's example files: code blocks whose first line is `// file: PATH`, and JSON blocks opened with `file=PATH`. */
function guideExamples(): Map<string, string> {
  const guide = readFileSync(join(ROOT, "docs", "testing.md"), "utf8");
  const files = new Map<string, string>();
  for (const match of guide.matchAll(/```(?:ts|js)\n\/\/ file: (\S+)\n([\s\S]*?)```/g)) files.set(match[1]!, match[2]!);
  for (const match of guide.matchAll(/```json file=(\S+)\n([\s\S]*?)```/g)) files.set(match[1]!, match[2]!);
  return files;
}

let project: string;

/** The report's line for the guide's recording: its test makes the first of its two requests. */
const UNUSED_SECOND_REQUEST = /greeting \(\S*greeting\.recording\.json\): request\(s\) #2 of 2 never replayed/;

/** Runs a command in the project; its output is part of the failure message. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; output: string } {
  const result = spawnSync(cmd, args, {
    cwd: project,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", ...env, NODE_OPTIONS: env.NODE_OPTIONS ?? "" },
    timeout: 120_000,
  });
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` };
}

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), "agent-bridge-consumer-"));
  // `npm pack` of this repository (dist/ built by the global setup), the run shared with image.test.ts.
  const tarball = packedTarball();
  const packed = basename(tarball);
  copyFileSync(tarball, join(project, packed));
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: "nodenext",
        moduleResolution: "nodenext",
        target: "es2022",
        noEmit: true,
        allowJs: true,
        checkJs: true,
        skipLibCheck: true,
        types: ["node"],
      },
      include: ["**/*.ts", "**/*.mjs"],
      exclude: ["node_modules"],
    }),
  );
  for (const [path, text] of guideExamples()) {
    mkdirSync(dirname(join(project, path)), { recursive: true });
    writeFileSync(join(project, path), text);
  }
  const install = run("npm", [
    "install",
    "--prefer-offline",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    join(project, packed),
    `vitest@${versionOf("vitest")}`,
    // The major version the guide's jest example is written for (the `expect` types here are its).
    `jest@^${versionOf("expect").split(".")[0]}`,
    `@jest/globals@^${versionOf("expect").split(".")[0]}`,
    `typescript@${versionOf("typescript")}`,
    `supertest@${versionOf("supertest")}`,
    `@types/supertest@${versionOf("@types/supertest")}`,
    `@types/node@${versionOf("@types/node")}`,
  ]);
  if (install.status !== 0) throw new Error(`npm install failed:\n${install.output}`);
}, 240_000);

// The project holds a whole node_modules (vitest, jest, TypeScript): removing it can take longer
// than the default hook timeout on a loaded 2-core machine.
afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
}, 120_000);

describe("the package installed in another project", () => {
  it("has the testing guide's examples to check: vitest, in process, jest, node:test, and a recording replayed under vitest and jest", () => {
    expect([...guideExamples().keys()].sort()).toEqual([
      "jest-replay.config.mjs",
      "jest-replay/greeting.test.mjs",
      "jest-replay/setup.mjs",
      "jest.config.mjs",
      "jest/support-bot.test.mjs",
      "node-test/support-bot.test.mjs",
      "recordings/greeting.recording.json",
      "test/emulator-setup.ts",
      "test/in-process.test.ts",
      "test/support-bot.test.ts",
      "vitest-replay.config.ts",
      "vitest-replay/greeting.test.ts",
      "vitest-replay/setup.ts",
      "vitest.config.ts",
    ]);
  });

  it("ships declarations and no sources or build info", () => {
    const dist = join(project, "node_modules", "agent-bridge", "dist");
    const listed = readdirSync(dist, { recursive: true }).map(String);
    expect(listed).toContain(join("emulator", "index.d.ts"));
    expect(listed).toContain(join("testing", "vitest.d.ts"));
    expect(listed.filter((f) => f.endsWith(".tsbuildinfo") || (f.endsWith(".ts") && !f.endsWith(".d.ts")))).toEqual([]);
  });

  it("brings no platform library, and a daemon channel that needs one says what to install", () => {
    for (const library of ["grammy", "discord.js", "@whiskeysockets/baileys", "@slack/web-api", "@slack/socket-mode", "pg"])
      expect(existsSync(join(project, "node_modules", library)), library).toBe(false);
    writeFileSync(
      join(project, "bridge.json"),
      JSON.stringify({
        service: { baseUrl: "http://127.0.0.1:9", apiKey: "svc_org_test" },
        dataDir: join(project, ".bridge"),
        ops: { port: null },
        routes: [{ instance: "i" }],
        channels: [{ type: "telegram", token: "123456789:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }],
      }),
    );
    const daemon = run(process.execPath, [
      join(project, "node_modules", "agent-bridge", "dist", "bin", "agent-bridge.js"),
      "run",
      "--config",
      "bridge.json",
      "--no-check",
    ]);
    expect(daemon.status).not.toBe(0);
    expect(daemon.output).toContain('The telegram channel needs the grammy package, an optional dependency of agent-bridge: npm install grammy@"^1.46.0"');
  }, 60_000);

  it("type-checks the examples with strict tsc", () => {
    const tsc = run(process.execPath, [join(project, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"]);
    expect(tsc.output.trim(), tsc.output).toBe("");
    expect(tsc.status).toBe(0);
  }, 120_000);

  it("runs them under vitest (one emulator for the run, a sandbox per test)", () => {
    const vitest = run(process.execPath, [join(project, "node_modules", "vitest", "vitest.mjs"), "run"]);
    expect(vitest.status, vitest.output).toBe(0);
    expect(vitest.output).toMatch(/Tests\s+3 passed/);
  }, 120_000);

  it("runs them under jest", () => {
    const jest = run(process.execPath, [join(project, "node_modules", "jest", "bin", "jest.js"), "--config", "jest.config.mjs"], {
      NODE_OPTIONS: "--experimental-vm-modules",
    });
    expect(jest.status, jest.output).toBe(0);
    expect(jest.output).toMatch(/Tests:\s+1 passed/);
  }, 120_000);

  it("replays a recording under vitest with useRecording, and reports the recorded request no test made", () => {
    const vitest = run(process.execPath, [join(project, "node_modules", "vitest", "vitest.mjs"), "run", "--config", "vitest-replay.config.ts"]);
    expect(vitest.status, vitest.output).toBe(0);
    expect(vitest.output).toMatch(/Tests\s+1 passed/);
    expect(vitest.output).toContain("recordings not used by this run:");
    expect(vitest.output).toMatch(UNUSED_SECOND_REQUEST);
  }, 120_000);

  it("replays a recording under jest with useRecording, and reports the recorded request no test made", () => {
    const jest = run(process.execPath, [join(project, "node_modules", "jest", "bin", "jest.js"), "--config", "jest-replay.config.mjs"], {
      NODE_OPTIONS: "--experimental-vm-modules",
    });
    expect(jest.status, jest.output).toBe(0);
    expect(jest.output).toMatch(/Tests:\s+1 passed/);
    expect(jest.output).toContain("recordings not used by this run:");
    expect(jest.output).toMatch(UNUSED_SECOND_REQUEST);
  }, 120_000);

  it("runs them under node:test", () => {
    const node = run(process.execPath, ["--test", "node-test/"]);
    expect(node.status, node.output).toBe(0);
    expect(node.output).toMatch(/# pass 1/);
  }, 120_000);
});
