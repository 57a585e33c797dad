/**
 * Durable-file helpers both halves use: atomic replace (temp + fsync + rename
 * + fsync of the directory), durable appends, and a pid lock file so two
 * processes never share a data directory. Every JSON file either half keeps
 * goes through `writeFileAtomic`: one writer, one set of guarantees.
 */
import { randomBytes } from "node:crypto";
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Flushes a directory entry (a rename or a new file) to disk. */
export async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some filesystems refuse fsync on directories; the rename itself is still atomic.
  }
}

export interface AtomicWriteOptions {
  /**
   * Where the temporary file goes (default: beside `file`). Must be on the
   * same filesystem; use it when the file's folder is listed to clients.
   */
  tempDir?: string;
}

/** Prefix of every temporary file `writeFileAtomic` makes beside `file` (tests exclude them by it). */
export const tempPrefixOf = (file: string): string => `.${basename(file)}.`;

/**
 * Writes a file so a crash leaves either the old content or the new one. The
 * temporary name is unique per call (`.<name>.<pid>.<random>.tmp`), so two
 * writers to one path never share a temporary file; the last rename wins whole.
 */
export async function writeFileAtomic(file: string, data: string | Buffer, mode = 0o600, options: AtomicWriteOptions = {}): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = join(options.tempDir ?? dirname(file), `${tempPrefixOf(file)}${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    const handle = await open(tmp, "w", mode);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (error) {
    await rm(tmp, { force: true }).catch(() => {});
    throw error;
  }
  await syncDirectory(dirname(file));
}

/**
 * Appends to a file and fsyncs it; a new file's directory entry is synced too.
 * A crash can leave a torn last line: readers drop an unterminated tail.
 */
export async function appendFileDurable(file: string, data: string | Buffer, mode = 0o600): Promise<void> {
  const handle = await open(file, "a", mode);
  let created = false;
  try {
    created = (await handle.stat()).size === 0;
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (created) await syncDirectory(dirname(file));
}

/** Writes a new file and makes both it and its directory entry durable. */
export async function writeFileDurable(file: string, data: Buffer | string, mode = 0o600): Promise<void> {
  const handle = await open(file, "w", mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await syncDirectory(dirname(file));
}

export class DataDirLockedError extends Error {
  override readonly name = "DataDirLockedError";
  readonly status = 409;
  constructor(
    readonly dir: string,
    readonly pid: number,
    owner = "daemon",
  ) {
    super(`The data directory ${dir} is in use by another ${owner} (pid ${pid}). Stop it, or use another data directory.`);
  }
}

/** Lock files this process holds: a second daemon in the same process is refused too. */
const held = new Set<string>();

export interface DirLock {
  readonly file: string;
  release(): void;
}

/**
 * Takes `<dir>/<owner>.lock` (holding our pid). A lock whose owner process is
 * gone (a crash, SIGKILL) is taken over; a live owner means refusal.
 */
export function acquireDirLock(dir: string, owner = "daemon"): DirLock {
  const file = join(dir, `${owner}.lock`);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      held.add(file);
      let released = false;
      return {
        file,
        release() {
          if (released) return;
          released = true;
          held.delete(file);
          rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      let pid = Number.NaN;
      try {
        pid = Number(readFileSync(file, "utf8").trim());
      } catch {
        // Vanished between open and read: try again.
        continue;
      }
      if (held.has(file) || (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid))) {
        throw new DataDirLockedError(dir, pid, owner);
      }
      // Stale (its owner is gone), or written by this very pid in an earlier life: take it over.
      rmSync(file, { force: true });
    }
  }
  throw new Error(`Could not lock ${dir}.`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  // A killed process whose parent has not reaped it yet still answers signal 0: a zombie holds nothing.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return true; // no /proc (not Linux): trust the signal
  }
}
