/**
 * The system programs some tests need beyond Node.js, found the way the tests run them, and the
 * one place that decides to skip a test when the machine lacks one.
 *
 * A fresh machine with only Node.js runs `npm ci && npm test` to exit 0: the tests that need a
 * missing program are skipped, and `scripts/test.mjs` names each of them at the end of the run
 * with the command that installs what it needs (it reads what this module records). Under
 * `CI=true` a skip fails the run, so `.ci/run`, which installs everything first, proves every test.
 * The packages of each need: scripts/install-system-programs.sh (the names here are its arguments).
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, readdirSync, statSync } from "node:fs";
import { delimiter, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(import.meta.dirname, "..", "..");

/** Where `scripts/test.mjs` collects skips (one JSON line each); unset when vitest runs alone. */
export const SKIP_LOG_ENV = "AGENT_BRIDGE_TEST_SKIPS";

/** An executable named `name` in a folder of `PATH`, or undefined. */
export function onPath(name: string, path = process.env.PATH ?? ""): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, name);
    try {
      if (statSync(file).isFile()) return file;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

/** The newest `<root>/<major>/bin` holding `initdb` (Debian's layout), or undefined. */
function debianPostgresBin(root = "/usr/lib/postgresql"): string | undefined {
  if (!existsSync(root)) return undefined;
  const major = readdirSync(root)
    .filter((d) => existsSync(join(root, d, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a))[0];
  return major === undefined ? undefined : join(root, major, "bin");
}

/**
 * The folder of PostgreSQL's server programs (`initdb`, `pg_ctl`): `POSTGRES_BIN` when set (only
 * there), else the one holding `initdb` on `PATH`, else Debian's `/usr/lib/postgresql/<newest>/bin`
 * (Debian keeps the server programs off `PATH`).
 */
export function postgresBin(): string | undefined {
  const forced = process.env.POSTGRES_BIN;
  if (forced !== undefined) return existsSync(join(forced, "initdb")) ? forced : undefined;
  const initdb = onPath("initdb");
  return initdb ? join(initdb, "..") : debianPostgresBin();
}

/** Chromium for the browser tests: `CHROMIUM_PATH` when set, else `chromium` on `PATH`. */
export function chromiumPath(): string | undefined {
  const forced = process.env.CHROMIUM_PATH;
  if (forced !== undefined) return existsSync(forced) ? forced : undefined;
  return onPath("chromium");
}

function pythonHasPytest(): boolean {
  const python = onPath("python3");
  if (!python) return false;
  try {
    execFileSync(python, ["-m", "pytest", "--version"], { stdio: "ignore", timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

interface Need {
  /** What the tests use it for, as the end of the run says it. */
  readonly what: string;
  /** Present on this machine, looked up as the tests look it up. */
  readonly present: () => boolean;
}

export const NEEDS = {
  chromium: {
    what: "Chromium (the web consoles' browser tests)",
    present: () => chromiumPath() !== undefined,
  },
  postgres: {
    what: "a PostgreSQL server (the cluster's state backend)",
    present: () => postgresBin() !== undefined,
  },
  speech: {
    what: "espeak-ng, sox and pocketsphinx with its en-us model (local speech recognition)",
    present: () => ["espeak-ng", "sox", "pocketsphinx_continuous"].every((p) => onPath(p) !== undefined) && existsSync("/usr/share/pocketsphinx/model/en-us"),
  },
  pytest: {
    what: "Python 3 with pytest (the Python test helpers)",
    present: pythonHasPytest,
  },
  go: {
    what: "the Go toolchain (the Go test helpers)",
    present: () => onPath("go") !== undefined,
  },
} as const satisfies Record<string, Need>;

export type NeedName = keyof typeof NEEDS;

const known = new Map<NeedName, boolean>();

/**
 * True when this machine lacks `need`: pass it to `describe.skipIf` / `it.skipIf`. The skip is
 * recorded for the end of the run, under the calling file (`import.meta.url`).
 *
 * @example describe.skipIf(lacks("postgres", import.meta.url))("leases", () => { ... })
 */
export function lacks(need: NeedName, file: string): boolean {
  let present = known.get(need);
  if (present === undefined) {
    present = NEEDS[need].present();
    known.set(need, present);
  }
  if (present) return false;
  const log = process.env[SKIP_LOG_ENV];
  if (log) {
    const path = relative(ROOT, file.startsWith("file:") ? fileURLToPath(file) : file);
    appendFileSync(log, `${JSON.stringify({ file: path, need, what: NEEDS[need].what })}\n`);
  }
  return true;
}
