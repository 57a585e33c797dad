/**
 * One emulator per data directory: a lock file holding the owner's pid. A lock
 * left by a process that no longer exists (a crash) is taken over.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";

export class DataDirLockedError extends Error {
  constructor(dir: string, pid: number) {
    super(`The data directory ${dir} is in use by another emulator (pid ${pid}). Stop it, or pass another --data-dir.`);
  }
}

const held = new Set<string>();

export function acquireLock(lockFile: string, dir: string): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockFile, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      held.add(lockFile);
      return () => {
        held.delete(lockFile);
        rmSync(lockFile, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const pid = Number(readFileSync(lockFile, "utf8").trim());
      if (held.has(lockFile) || (Number.isInteger(pid) && pid > 0 && isAlive(pid))) throw new DataDirLockedError(dir, pid);
      rmSync(lockFile, { force: true }); // stale: its owner is gone
    }
  }
  throw new Error(`Could not lock ${dir}.`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
