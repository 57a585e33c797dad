/**
 * At most three cluster files at once (test/helpers/sequencer.ts runs them last, beside the
 * suite's last files). Each runs two or three daemons with 1.5-4 s leases on a PostgreSQL server
 * of its own: four at once on two cores starved a daemon long enough to lose its lease mid-test
 * (a command ran again on the next owner). The slots are symbolic links in the temporary folder
 * (one per run under `npm test`) named `agent-bridge-cluster-slot-N`, pointing at the holder's
 * pid: creating one is atomic, and a slot whose holder is gone (a worker killed) is taken back.
 */
import { readlinkSync, rmSync, symlinkSync, watch } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { CLUSTER } from "./sequencer.js";

const SLOTS = 3;
const ROOT = join(import.meta.dirname, "..", "..");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** One attempt over every slot: the path of the slot taken, or undefined when all are held. */
function tryTake(dir: string): string | undefined {
  for (let n = 0; n < SLOTS; n++) {
    const slot = join(dir, `agent-bridge-cluster-slot-${n}`);
    try {
      symlinkSync(String(process.pid), slot);
      return slot;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    let holder: number;
    try {
      holder = Number(readlinkSync(slot));
    } catch {
      continue; // released in between: the next attempt may get it
    }
    if (!alive(holder)) rmSync(slot, { force: true });
  }
  return undefined;
}

/** Resolves with the slot's release once one is free: tried again on every change in the folder, and each second for a holder that died. */
export function takeSlot(dir: string): Promise<() => void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const attempt = () => {
      if (settled) return;
      try {
        const slot = tryTake(dir);
        if (!slot) return;
        settled = true;
        resolve(() => rmSync(slot, { force: true }));
      } catch (error) {
        settled = true;
        reject(error);
      }
      watcher.close();
      clearInterval(deadHolders);
    };
    const watcher = watch(dir, attempt);
    const deadHolders = setInterval(attempt, 1_000);
    attempt();
  });
}

/** Holds one of the slots for the whole file; call at the top of a file listed in {@link CLUSTER}. */
export function holdClusterSlot(): void {
  let release: (() => void) | undefined;
  beforeAll(async () => {
    const file = relative(ROOT, expect.getState().testPath ?? "");
    if (!CLUSTER.has(file)) throw new Error(`${file} holds a cluster slot but is not in CLUSTER (test/helpers/sequencer.ts): it would not run last`);
    release = await takeSlot(tmpdir());
  }, 600_000);
  afterAll(() => release?.());
}
