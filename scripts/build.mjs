// `npm run build` (and `prepare`, so `npm ci` runs it; and the tests' globalSetup):
// compile to dist/ with tsc (incremental), then make the `agent-bridge` binary executable,
// which tsc does not do and `npx agent-bridge` in the project itself needs; and copy
// the web console's static files, which tsc does not compile, beside the compiled routes.
//
// `--if-changed` (the tests' globalSetup) skips all of it when nothing it reads changed since
// the last build started: even with nothing to do, tsc takes ~2 s of CPU to load the program.
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
// Stamped with the time the last successful build started, so a file saved during a build counts as changed.
const STAMP = join(root, "dist", ".build-started");
const INPUTS = ["shared", "emulator", "daemon", "bin", "tsconfig.json", "tsconfig.build.json", "package.json", "package-lock.json", "scripts/build.mjs"];

/** Newest mtime of a file or a tree. Directories count too: deleting or renaming a file changes its directory's. */
function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return Number.POSITIVE_INFINITY; // an input that is gone: build, and let tsc say why
  let time = stat.mtimeMs;
  if (stat.isDirectory()) for (const name of readdirSync(path)) time = Math.max(time, newest(join(path, name)));
  return time;
}

const stamp = statSync(STAMP, { throwIfNoEntry: false });
if (process.argv.includes("--if-changed") && stamp && INPUTS.every((input) => newest(join(root, input)) < stamp.mtimeMs)) process.exit(0);

const started = new Date();
rmSync(STAMP, { force: true });
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const result = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
if (result.status !== 0) process.exit(result.status ?? 1);
chmodSync(join(root, "dist", "bin", "agent-bridge.js"), 0o755);
const ui = join("emulator", "console", "ui");
rmSync(join(root, "dist", ui), { recursive: true, force: true });
cpSync(join(root, ui), join(root, "dist", ui), { recursive: true });
writeFileSync(STAMP, "");
utimesSync(STAMP, started, started);
