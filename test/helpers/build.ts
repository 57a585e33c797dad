/**
 * vitest globalSetup: `npm run build`'s script (tsc, incremental: well under
 * a second when nothing changed), so tests that run `agent-bridge` as a
 * process run the code as it is now, not a stale build.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");

export default function setup(): void {
  const result = spawnSync(process.execPath, [join(ROOT, "scripts", "build.mjs")], { cwd: ROOT, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`the build failed:\n${result.stdout}${result.stderr}`);
}
