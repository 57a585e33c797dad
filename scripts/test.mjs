// `npm test`: type check, then the whole vitest suite, then one closing line
// `N passed, N failed` read from vitest's JSON report (CI reads that line).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const extra = process.argv.slice(2);
const run = (cmd, args) => spawnSync(cmd, args, { stdio: "inherit", shell: false }).status ?? 1;

if (!extra.length) {
  console.log("> tsc --noEmit");
  if (run("npx", ["tsc", "--noEmit", "-p", "tsconfig.json"]) !== 0) {
    console.log("0 passed, 1 failed");
    process.exit(1);
  }
}

const dir = mkdtempSync(join(tmpdir(), "agent-bridge-test-"));
const report = join(dir, "report.json");
const status = run("npx", ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...extra]);
let passed = 0;
let failed = 0;
try {
  const json = JSON.parse(readFileSync(report, "utf8"));
  passed = json.numPassedTests;
  failed = json.numFailedTests + (json.numFailedTestSuites ?? 0);
} catch {
  failed = 1;
}
rmSync(dir, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(status === 0 && failed === 0 ? 0 : 1);
