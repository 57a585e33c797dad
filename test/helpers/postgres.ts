/**
 * A throwaway PostgreSQL server for tests: a copy of a cluster `initdb` made once per
 * test process, in a temporary directory, `pg_ctl start` on a free loopback port, a fresh database per caller, and
 * `pg_ctl stop -m immediate` plus deletion at the end. No mock of the database:
 * the backend's tests run against the real server from Debian's `postgresql-15`
 * (`.ci/run` installs it when `initdb` is missing).
 *
 * As root, the server runs as the `postgres` user (PostgreSQL refuses to run as
 * root), so the directory is handed to that user first.
 */
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { chown, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { makeOwnedTempDir } from "../../shared/temp-dirs.js";
import { postgresBin } from "./system-programs.js";

const run = promisify(execFile);

/** PostgreSQL's server programs, found as `lacks("postgres")` finds them (test/helpers/system-programs.ts). */
export function findPostgresBin(): string {
  const bin = postgresBin();
  if (bin === undefined)
    throw new Error("PostgreSQL is not installed (no initdb on PATH, nor in /usr/lib/postgresql/*/bin): bash scripts/install-system-programs.sh postgres");
  return bin;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface TestPostgres {
  readonly port: number;
  /** A connection string for `database` (default `postgres`). */
  url(database?: string): string;
  /** Creates an empty database with a unique name and returns its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /** Kills the server the hard way (`-m immediate`: no checkpoint, like a crash). */
  kill(): Promise<void>;
  /** Starts it again on the same port and data directory (crash recovery replays the WAL). */
  start(): Promise<void>;
  /** Stops the server and deletes its directory. */
  close(): Promise<void>;
}

const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL program: `runuser -u postgres --` when root (initdb and postgres refuse to run as root). */
function exec(cmd: string, args: string[]) {
  const bin = findPostgresBin();
  return asRoot ? run("runuser", ["-u", "postgres", "--", join(bin, cmd), ...args]) : run(join(bin, cmd), args);
}

/** A temporary directory the server's user owns. */
async function serverDir(prefix: string): Promise<string> {
  const dir = await makeOwnedTempDir(prefix);
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  return dir;
}

/**
 * One `initdb` per test process (about a second of a cluster test's start); each server
 * starts from a copy of it, so every server is still a fresh cluster of its own.
 */
let template: Promise<string> | undefined;
function templateCluster(): Promise<string> {
  template ??= (async () => {
    const dir = await serverDir("agent-bridge-pg-template-");
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    const data = join(dir, "data");
    await exec("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"]);
    return data;
  })();
  return template;
}

/** Starts a throwaway cluster (about half a second, after the first `initdb` of the process). Close it in `afterAll`. */
export async function startTestPostgres(): Promise<TestPostgres> {
  const dir = await serverDir("agent-bridge-pg-");
  const data = join(dir, "data");
  // As the server's user, so the copy keeps its owner and modes (PostgreSQL insists on 0700).
  const copy = (from: string, to: string) => (asRoot ? run("runuser", ["-u", "postgres", "--", "cp", "-a", from, to]) : run("cp", ["-a", from, to]));
  await copy(await templateCluster(), data);
  const port = await freePort();
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c shared_buffers=16MB",
    "-c max_connections=60",
    "-c fsync=on",
    "-c recovery_init_sync_method=syncfs",
  ].join(" ");
  const start = () => exec("pg_ctl", ["-D", data, "-w", "-t", "30", "-l", join(dir, "log"), "-o", options, "start"]).then(() => undefined);
  const stop = () => exec("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).then(() => undefined);
  await start();
  let running = true;
  let databases = 0;
  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    port,
    url,
    async createDatabase(prefix = "t") {
      const name = `${prefix.replace(/[^a-z0-9_]/g, "_")}_${process.pid}_${++databases}`;
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    async kill() {
      if (!running) return;
      await stop();
      running = false;
    },
    async start() {
      if (running) return;
      await start();
      running = true;
    },
    async close() {
      if (running) await stop().catch(() => undefined);
      running = false;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
