// `npm test`: the type check and the linter run in parallel with the vitest suite (they are
// CPU-bound for a few seconds while vitest mostly waits on sockets and child processes), then
// one closing line `N passed, N failed` (CI reads that line), counted from vitest's JSON report.
//
// `npm test -- ARGS` passes ARGS to vitest (a file or a folder, `-t name`) and skips the
// type check and the linter.
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync } from "node:fs";
import { join, relative } from "node:path";

// The format check runs with the linter (`biome check`): a file Biome would lay out differently
// fails `npm test`; `npm run format` fixes it.
const CHECK_FORMAT = true;

const ROOT = join(import.meta.dirname, "..");
const BIN = join(ROOT, "node_modules", ".bin");
const extra = process.argv.slice(2);
// Kept at a stable, git-ignored path so the line below can point at it after the run (a run
// started by a test names another folder, so it cannot touch the outer run's files).
const RESULTS = process.env.AGENT_BRIDGE_TEST_RESULTS ?? join(ROOT, ".test-results");
const REPORT = join(RESULTS, "report.json");
// Where test/helpers/system-programs.ts records each file that skips for want of a program.
const SKIPS = join(RESULTS, "skips.jsonl");
// Under CI every test must run: a skip fails the run (.ci/run installs every program first).
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
// The install commands, as this user would type them (apt-get needs root).
const AS_ROOT = process.getuid?.() === 0 ? "" : "sudo ";

/** Runs a command; its output is either shown as it comes or kept to be shown once it ends. */
function run(cmd, args, { buffered, env = process.env, onSpawn = () => {} }) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: ROOT, env, stdio: buffered ? ["ignore", "pipe", "pipe"] : "inherit" });
    onSpawn(child);
    let output = "";
    if (buffered) {
      child.stdout.on("data", (d) => (output += d));
      child.stderr.on("data", (d) => (output += d));
    }
    child.on("error", (err) => resolve({ status: 1, output: `${output}${err.message}\n` }));
    child.on("close", (code, signal) => resolve({ status: code ?? (signal ? 1 : 0), output }));
  });
}

const checks = [];
if (!extra.length) {
  // Incremental: a full check is ~17 s of CPU on two cores, competing with the suite; with the
  // build info kept (in node_modules/.cache, never committed) an unchanged tree checks in ~2 s.
  // tsc still reports every error of files it does not re-check (they are kept in the build info).
  const typecheck = [
    "--noEmit",
    "--incremental",
    "--tsBuildInfoFile",
    join(ROOT, "node_modules", ".cache", "agent-bridge", "typecheck.tsbuildinfo"),
    "-p",
    "tsconfig.json",
  ];
  checks.push({ name: "type check (tsc --noEmit)", done: run(join(BIN, "tsc"), typecheck, { buffered: true }) });
  // `biome check` = lint + format check (assists such as import sorting stay off).
  const biome = CHECK_FORMAT ? ["check", "--assist-enabled=false"] : ["lint"];
  checks.push({ name: `biome ${biome[0]}`, done: run(join(BIN, "biome"), [...biome, "--reporter=summary", "--colors=off", "."], { buffered: true }) });
}

rmSync(REPORT, { force: true });
rmSync(SKIPS, { force: true });
mkdirSync(RESULTS, { recursive: true });
const scratch = scratchOnTmpfs();
// Ctrl-C reaches vitest too (the terminal signals the whole group); a SIGTERM sent to this
// process alone is passed on. Either way this process waits for vitest, cleans up and reports.
let runner;
process.on("SIGINT", () => {});
process.on("SIGTERM", () => runner?.kill("SIGTERM"));
const vitest = await run(join(BIN, "vitest"), ["run", "--reporter=default", "--reporter=json", `--outputFile.json=${REPORT}`, ...extra], {
  buffered: false,
  env: { ...process.env, ...(scratch ? { TMPDIR: scratch } : {}), AGENT_BRIDGE_TEST_SKIPS: SKIPS },
  onSpawn: (child) => (runner = child),
});
if (scratch) {
  try {
    // A server a test started may still be writing as it stops (a PostgreSQL cluster after Ctrl-C).
    rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  } catch (error) {
    console.log(`(could not remove the tests' temporary folder ${scratch}: ${error.message})`);
  }
}

let passed = 0;
let failed = 0;
let skipped = [];
const notes = [];
for (const check of checks) {
  const { status, output } = await check.done;
  if (status === 0) {
    console.log(`✓ ${check.name}`);
  } else {
    console.log(`\n✗ ${check.name} failed:\n${output.trimEnd()}\n`);
    failed += 1;
    notes.push(`${check.name} failed`);
  }
}

try {
  const json = JSON.parse(readFileSync(REPORT, "utf8"));
  // Count tests, not suites: a failing test also marks its describe block and its file as failed.
  passed = json.numPassedTests;
  failed += json.numFailedTests;
  // A file that fails to load (syntax error, throwing import, failing beforeAll) has no test
  // results of its own: one failure each, named.
  for (const file of json.testResults ?? []) {
    const failedTests = (file.assertionResults ?? []).filter((t) => t.status === "failed").length;
    if (file.status === "failed" && failedTests === 0) {
      failed += 1;
      notes.push(`${relative(ROOT, file.name)} failed to load or set up`);
    }
  }
  skipped = skippedTests(json);
  if (IN_CI && skipped.length > 0) {
    failed += skipped.length;
    notes.push(`${skipped.length} test(s) skipped under CI=true: every test must run in CI (see the list above)`);
  }
  if (vitest.status !== 0 && failed === 0) {
    // e.g. an unhandled error after the tests passed: vitest fails the run, so must we.
    failed += 1;
    notes.push(`vitest exited with status ${vitest.status} (see the errors above)`);
  }
} catch {
  failed += 1;
  notes.push("vitest wrote no report");
}

printSkipped(skipped);
for (const note of notes) console.log(`✗ ${note}`);
if (readable(REPORT)) console.log(`vitest's JSON report: ${relative(ROOT, REPORT)}`);
console.log(`${passed} passed, ${failed} failed${skipped.length > 0 && !IN_CI ? `, ${skipped.length} skipped` : ""}`);
process.exit(vitest.status === 0 && failed === 0 ? 0 : 1);

/** Every test the report marks skipped or todo, with its file and full name. */
function skippedTests(json) {
  const out = [];
  for (const file of json.testResults ?? []) {
    for (const test of file.assertionResults ?? []) {
      if (test.status === "skipped" || test.status === "pending" || test.status === "todo") {
        out.push({ file: relative(ROOT, file.name), name: test.fullName ?? test.title });
      }
    }
  }
  return out;
}

/**
 * Names each skipped test, grouped by what its file lacks (as test/helpers/system-programs.ts
 * recorded it), with the command that installs that; a test skipped for another reason is named
 * as such.
 */
function printSkipped(tests) {
  if (tests.length === 0) return;
  const needsOf = new Map();
  const needs = new Map();
  for (const line of readable(SKIPS) ? readFileSync(SKIPS, "utf8").split("\n") : []) {
    if (!line.trim()) continue;
    const record = JSON.parse(line);
    needs.set(record.need, record);
    needsOf.set(record.file, [...new Set([...(needsOf.get(record.file) ?? []), record.need])]);
  }
  const groups = new Map();
  for (const test of tests) {
    const key = (needsOf.get(test.file) ?? []).join(" + ") || "";
    groups.set(key, [...(groups.get(key) ?? []), test]);
  }
  console.log(`\n${tests.length} test(s) skipped${IN_CI ? " (under CI=true a skip fails the run)" : ""}:`);
  for (const [key, group] of groups) {
    if (key) {
      const names = key.split(" + ");
      console.log(
        `- for want of ${names.map((n) => needs.get(n).what).join(" and ")}; install: ${AS_ROOT}bash scripts/install-system-programs.sh ${names.join(" ")}`,
      );
    } else {
      console.log("- skipped by the test itself (skipIf/skip in the file), not for a missing program:");
    }
    for (const test of group) console.log(`    ${test.file} > ${test.name}`);
  }
  if (needs.size > 0) console.log(`Everything the suite uses, at once: ${AS_ROOT}bash scripts/install-system-programs.sh (as .ci/run does)\n`);
}

/**
 * The tests' temporary files on a RAM file system (Linux's /dev/shm), in one folder per run,
 * removed with whatever the tests leave in it. They write many small files (each instance's
 * workspace, every emulator and daemon store write synced to disk, npm installs, PostgreSQL
 * clusters): on the 2-core machine's disk the integration files took 67 s, on tmpfs 53 s (the
 * kernel's share halved). No test relies on the disk itself: the kill tests kill processes, not
 * the machine. Only a /dev/shm with room (a run leaves up to about 700 MB there at once; a
 * container's is 64 MB unless given more) that may run programs (the package tests install
 * and run some). A TMPDIR set by the caller is kept; otherwise the system's temporary folder.
 */
function scratchOnTmpfs() {
  if (process.env.TMPDIR) return undefined;
  let mounts = "";
  try {
    mounts = readFileSync("/proc/mounts", "utf8");
  } catch {
    return undefined;
  }
  const shm = /^\S+ \/dev\/shm tmpfs (\S+) /m.exec(mounts);
  if (!shm || shm[1].split(",").includes("noexec")) return undefined;
  try {
    const { bavail, bsize } = statfsSync("/dev/shm");
    if (bavail * bsize < 2 * 1024 ** 3) return undefined;
    const dir = mkdtempSync("/dev/shm/agent-bridge-test-");
    // As root, tests run programs as other users (PostgreSQL, the image's user): like /tmp.
    if (process.getuid?.() === 0) chmodSync(dir, 0o1777);
    return dir;
  } catch {
    return undefined;
  }
}

function readable(path) {
  try {
    readFileSync(path);
    return true;
  } catch {
    return false;
  }
}
