// `npm run build` (and `prepare`, so `npm ci` runs it; and the tests' globalSetup):
// compile to dist/ with tsc (incremental), then make the `agent-bridge` binary executable,
// which tsc does not do and `npx agent-bridge` in the project itself needs; and copy
// the web console's static files, which tsc does not compile, beside the compiled routes.
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, rmSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const result = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
if (result.status !== 0) process.exit(result.status ?? 1);
chmodSync(join(root, "dist", "bin", "agent-bridge.js"), 0o755);
const ui = join("emulator", "console", "ui");
rmSync(join(root, "dist", ui), { recursive: true, force: true });
cpSync(join(root, ui), join(root, "dist", ui), { recursive: true });
