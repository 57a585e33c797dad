/**
 * The `agent-bridge` command as installed (dist/bin/agent-bridge.js): runs the bundle beside it
 * (agent-bridge.cjs) with V8's code cache. Compiling the bundle was about a third of each start's
 * CPU (an emulator's start and stop: 0.42 s without the cache, 0.28 s with it), and Node 20 keeps
 * no compile cache of its own (`module.enableCompileCache` came in Node 22). The first start of a
 * build writes the cache as it exits; later ones load it. V8 checks that a cache matches the
 * source and its own version and flags, and ignores one that does not (then it is written again).
 *
 * Where: `AGENT_BRIDGE_COMPILE_CACHE` names a folder, or `off` turns it off; by default
 * `agent-bridge-compile-cache-<uid>` in the system's temporary folder. It holds compiled code only,
 * nothing of a config or a conversation; but code it is, so it is only read from a folder this
 * user owns that no one else may write to (a shared /tmp must not let another user plant it),
 * created 0700. A folder that fails this, or cannot be written, only costs the speed-up. Writing
 * a new build's cache removes the older builds' files.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

const bundle = join(dirname(fileURLToPath(import.meta.url)), "agent-bridge.cjs");

interface CacheFile {
  folder: string;
  /** The same for every subcommand of one build of the bundle. */
  build: string;
  path: string;
}

/** The cache file for this build of the bundle, this subcommand and this Node, or undefined when turned off. */
function cacheFile(): CacheFile | undefined {
  const setting = process.env.AGENT_BRIDGE_COMPILE_CACHE;
  if (setting === "off") return undefined;
  const folder = setting || join(tmpdir(), `agent-bridge-compile-cache-${process.getuid?.() ?? "user"}`);
  const { size, mtimeMs } = statSync(bundle);
  const build = `${size}-${Math.trunc(mtimeMs)}-`;
  // One per subcommand: a cache holds the functions its first run compiled (a daemon's and an
  // emulator's are mostly different), and a cache that loads is never written again.
  const command = /^[a-z][a-z-]{0,30}$/.exec(process.argv[2] ?? "")?.[0] ?? "other";
  return { folder, build, path: join(folder, `${build}${process.versions.v8}-${process.arch}-${command}.bin`) };
}

/** Ours alone: a real folder (not a link), owned by this user, writable by no one else. */
function trusted(folder: string): boolean {
  try {
    const stat = lstatSync(folder);
    const uid = process.getuid?.();
    return stat.isDirectory() && (uid === undefined || stat.uid === uid) && (stat.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

function readCache(file: CacheFile | undefined): Buffer | undefined {
  if (!file || !trusted(file.folder)) return undefined;
  try {
    return readFileSync(file.path);
  } catch {
    return undefined;
  }
}

/** Written whole under another name, then renamed: processes starting at once never read half a file. */
function writeCache(file: CacheFile, data: Buffer): void {
  try {
    mkdirSync(file.folder, { recursive: true, mode: 0o700 });
    if (!trusted(file.folder)) return;
    for (const name of readdirSync(file.folder)) if (name.endsWith(".bin") && !name.startsWith(file.build)) rmSync(join(file.folder, name), { force: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, data, { mode: 0o600 });
    renameSync(temporary, file.path);
  } catch {
    // A read-only or full folder: the next start compiles again.
  }
}

const file = cacheFile();
const cachedData = readCache(file);
// The bundle as CommonJS wrapped the way Node wraps a module (its first line is the shebang).
const source = readFileSync(bundle, "utf8").replace(/^#!.*/, "");
const script = new Script(Module.wrap(source), {
  filename: bundle,
  ...(cachedData ? { cachedData } : {}),
});
if (file && (!cachedData || script.cachedDataRejected)) {
  // At exit the cache also holds the functions this run compiled, not only the top level.
  process.once("exit", () => writeCache(file, script.createCachedData()));
}
const run = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;
const module = { exports: {}, filename: bundle, id: bundle, loaded: false };
run.call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle));
