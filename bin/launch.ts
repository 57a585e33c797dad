/**
 * The `agent-bridge` command as installed (dist/bin/agent-bridge.js): runs the bundle beside it
 * (agent-bridge.cjs) with V8's code cache. Compiling the bundle was about a third of each start's
 * CPU (an emulator's start and stop: 0.41 s without the cache, about 0.23 s with it), and Node 20 keeps
 * no compile cache of its own (`module.enableCompileCache` came in Node 22). The first run of a
 * subcommand after a build writes the cache as it exits, unless it only printed help or a usage
 * error; later ones load it. V8
 * checks that a cache matches its own version and flags and the source's length, and ignores one
 * that does not (then it is written again); the file's name carries the bundle's hash, so another
 * build never meets this one's cache.
 *
 * Where: `AGENT_BRIDGE_COMPILE_CACHE` names a folder, or `off` turns it off; by default
 * `agent-bridge-compile-cache-<uid>` in the system's temporary folder. It holds compiled code only,
 * nothing of a config or a conversation; but code it is, so a cache file is only loaded when the
 * file actually opened is a regular file of this user's that no one else may write, in a folder
 * of this user's that no one else may write (a shared /tmp must not let another user plant one).
 * A folder that fails this, or cannot be written, only costs the speed-up. The 16 newest files
 * are kept. With `--enable-source-maps` the bundle is loaded by `require` instead, so stack traces
 * are mapped to the sources.
 */
import { closeSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

/** The bundle's content hash, set by scripts/build.mjs. */
declare const AGENT_BRIDGE_BUNDLE_HASH: string;

const bundle = join(dirname(fileURLToPath(import.meta.url)), "agent-bridge.cjs");
/** The subcommands with a cache of their own (what one compiles, another mostly does not use). */
const SUBCOMMANDS = new Set(["start", "run", "check", "reload", "emulator", "proxy", "recordings", "conformance", "pairing", "config"]);
const KEPT = 16;
const HELP = new Set(["--help", "-h", "--version", "-V"]);
const uid = process.geteuid?.();

interface CacheFile {
  folder: string;
  path: string;
}

function cacheFile(): CacheFile | undefined {
  const setting = process.env.AGENT_BRIDGE_COMPILE_CACHE;
  if (setting === "off" || uid === undefined) return undefined; // Windows: no owner to check
  const folder = setting || join(tmpdir(), `agent-bridge-compile-cache-${uid}`);
  const command = SUBCOMMANDS.has(process.argv[2] ?? "") ? process.argv[2] : "other";
  return { folder, path: join(folder, `${AGENT_BRIDGE_BUNDLE_HASH}-${process.versions.v8}-${process.arch}-${command}.bin`) };
}

/** This user's, and writable by no one else. */
const ours = (stat: { uid: number; mode: number }) => stat.uid === uid && (stat.mode & 0o022) === 0;

/** A real folder (not a link) of ours. */
function trustedFolder(folder: string): boolean {
  try {
    const stat = lstatSync(folder);
    return stat.isDirectory() && ours(stat);
  } catch {
    return false;
  }
}

/** Checks what was opened, not the path: a folder swapped after the check cannot plant a file. */
function readCache(file: CacheFile): Buffer | undefined {
  if (!trustedFolder(file.folder)) return undefined;
  let fd: number | undefined;
  try {
    fd = openSync(file.path, "r");
    const stat = fstatSync(fd);
    return stat.isFile() && ours(stat) ? readFileSync(fd) : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Written whole under a new name (never through a file already there), then renamed: a reader never sees half. */
function writeCache(file: CacheFile, script: Script): void {
  const temporary = `${file.path}.${process.pid}.tmp`;
  try {
    mkdirSync(file.folder, { recursive: true, mode: 0o700 });
    if (!trustedFolder(file.folder)) return;
    writeFileSync(temporary, script.createCachedData(), { mode: 0o600, flag: "wx" });
    renameSync(temporary, file.path);
    const byAge = readdirSync(file.folder)
      .filter((name) => name.endsWith(".bin"))
      .map((name) => ({ name, at: statSync(join(file.folder, name)).mtimeMs }))
      .sort((a, b) => b.at - a.at);
    for (const old of byAge.slice(KEPT)) rmSync(join(file.folder, old.name), { force: true });
  } catch {
    // A read-only or full folder: the next start compiles again.
    rmSync(temporary, { force: true });
  }
}

/** Compiles (or loads) the bundle; its source and cache are not kept beyond this. */
function compile(file: CacheFile | undefined): Script {
  const cachedData = file ? readCache(file) : undefined;
  // The bundle as CommonJS wrapped the way Node wraps a module (its first line is the shebang).
  // ASCII only (scripts/build.mjs makes it so): latin1 reads it as a one-byte string, 10x faster than utf8.
  const source = readFileSync(bundle, "latin1").replace(/^#!.*/, "");
  const script = new Script(Module.wrap(source), { filename: bundle, ...(cachedData ? { cachedData } : {}) });
  if (file && (!cachedData || script.cachedDataRejected)) {
    // At exit the cache also holds the functions this run compiled. A usage error (exit code 2)
    // or a subcommand's help compiled little of it, and does not write; a run that did its work
    // (0) or failed at it (1, such as a check that found a problem) does.
    const helpOnly = process.argv.slice(3).some((arg) => HELP.has(arg));
    process.once("exit", (code) => {
      if ((code === 0 || code === 1) && !helpOnly) writeCache(file, script);
    });
  }
  return script;
}

if (process.sourceMapsEnabled) {
  createRequire(import.meta.url)(bundle);
} else {
  const run = compile(cacheFile()).runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;
  const module = { exports: {}, filename: bundle, id: bundle, loaded: false };
  run.call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle));
}
