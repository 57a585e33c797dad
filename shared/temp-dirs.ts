/**
 * Temporary folders owned by this process. A process killed with kill -9 cannot remove its
 * own (an in-memory emulator's workspaces, a voice note being transcribed, a test's PostgreSQL
 * template): each name carries its owner's pid, and making a new one first removes those of
 * the same kind whose owner is gone, so they do not pile up in the temporary folder.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Whether a process with this pid exists (one of another user counts: it is not ours to judge). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Removes `<prefix><pid>-*` folders in `root` whose process is gone. Errors are ignored: a sweep is best effort. */
export function sweepOrphans(prefix: string, root = tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1]);
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || alive(pid)) continue;
    try {
      rmSync(join(root, name), { recursive: true, force: true });
      removed.push(name);
    } catch {
      // Someone else's, or being removed already.
    }
  }
  return removed;
}

/** `mkdtemp` of `<tmp>/<prefix><pid>-XXXXXX`, after sweeping the orphans of that prefix. */
export function makeOwnedTempDirSync(prefix: string, root = tmpdir()): string {
  sweepOrphans(prefix, root);
  return mkdtempSync(join(root, `${prefix}${process.pid}-`));
}

/** As {@link makeOwnedTempDirSync}, without blocking on the folder's creation. */
export async function makeOwnedTempDir(prefix: string, root = tmpdir()): Promise<string> {
  sweepOrphans(prefix, root);
  return mkdtemp(join(root, `${prefix}${process.pid}-`));
}
