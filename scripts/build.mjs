// `npm run build` (and `prepare`, so `npm ci` runs it; and the tests' globalSetup):
// compile to dist/ with tsc (incremental), then make the `agent-bridge` binary executable,
// which tsc does not do and `npx agent-bridge` in the project itself needs.
import { spawnSync } from "node:child_process";
import { chmodSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const result = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
if (result.status !== 0) process.exit(result.status ?? 1);
chmodSync(join(root, "dist", "bin", "agent-bridge.js"), 0o755);
