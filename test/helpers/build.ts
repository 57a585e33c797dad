/**
 * vitest globalSetup: `npm run build`'s script with `--if-changed` (nothing
 * to do when no source, config or lock file changed since the last build
 * started; otherwise an incremental tsc), so tests that run `agent-bridge`
 * as a process run the code as it is now, not a stale build.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");

export default function setup(): void {
  const result = spawnSync(process.execPath, [join(ROOT, "scripts", "build.mjs"), "--if-changed"], { cwd: ROOT, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`the build failed:\n${result.stdout}${result.stderr}`);
}
