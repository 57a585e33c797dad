/**
 * One run of the Dockerfile's build-stage script (`node scripts/pack-production.mjs OUT`: `npm pack`
 * of this repository and a package.json naming the tarball and the platform libraries) for the
 * package files that need the packed package: image.test.ts copies OUT into its /app, as the
 * Dockerfile's `COPY --from=build /out/ ./` does; pack-install.test.ts installs its tarball.
 *
 * `npm pack` is ~5 s of CPU (a 4 MB tarball of ~1,500 files), and both files ran one each. The
 * output is kept under node_modules/.cache, named by what the script reads (every file the
 * tarball takes, by path, size and mtime; package.json, the lock file and the script itself), so a
 * changed input makes a new one and an unchanged tree packs nothing. `flock` makes the two files,
 * which start at once on two workers, pack it once: the second waits for the first's lock and
 * finds the output (without `flock`, each packs its own, as before).
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { onPath } from "./system-programs.js";

const ROOT = join(import.meta.dirname, "..", "..");
const CACHE = join(ROOT, "node_modules", ".cache", "agent-bridge", "packed");
/** What `npm pack` takes (package.json's `files`, and what npm always adds) and what the script reads. */
const INPUTS = [
  "dist",
  "docs",
  "config.example.json",
  "config.schema.json",
  "package.json",
  "package-lock.json",
  "README.md",
  "LICENSE",
  "scripts/pack-production.mjs",
];

/** Path, size and mtime of every file under `path` (the tree's state, cheaply). */
function stateOf(path: string, into: string[]): void {
  const stat = statSync(join(ROOT, path), { throwIfNoEntry: false });
  if (!stat) return void into.push(`${path} absent`);
  if (!stat.isDirectory()) return void into.push(`${path} ${stat.size} ${stat.mtimeMs}`);
  for (const name of readdirSync(join(ROOT, path)).sort()) stateOf(join(path, name), into);
}

/** The folder holding the script's output for the tree as it is now: the tarball and the production package.json. */
export function packedProduction(): string {
  const state: string[] = [process.version];
  for (const input of INPUTS) stateOf(input, state);
  const key = createHash("sha256").update(state.join("\n")).digest("hex").slice(0, 16);
  const out = join(CACHE, key);
  if (existsSync(join(out, "package.json"))) return out;
  mkdirSync(CACHE, { recursive: true });
  // Under the lock: pack unless another process just did; into a side folder renamed when complete.
  const script = `test -f "$1/package.json" && exit 0; rm -rf "$1.partial" && "$2" "$3" "$1.partial" >/dev/null && mv "$1.partial" "$1"`;
  const args = ["-c", script, "pack", out, process.execPath, join(ROOT, "scripts", "pack-production.mjs")];
  const flock = onPath("flock");
  const result = flock
    ? spawnSync(flock, [join(CACHE, ".lock"), "sh", ...args], { cwd: ROOT, encoding: "utf8" })
    : spawnSync("sh", args, { cwd: ROOT, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`scripts/pack-production.mjs failed:\n${result.stdout}${result.stderr}`);
  // Outputs of earlier trees (a few MB each) are not read again.
  for (const name of readdirSync(CACHE))
    if (name !== key && name !== ".lock" && !name.endsWith(".partial")) rmSync(join(CACHE, name), { recursive: true, force: true });
  return out;
}

/** The tarball in that folder. */
export function packedTarball(): string {
  const out = packedProduction();
  const tarball = readdirSync(out).find((name) => name.endsWith(".tgz"));
  if (!tarball) throw new Error(`no tarball in ${out}`);
  return join(out, tarball);
}
