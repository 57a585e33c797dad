/**
 * The suite's limit of three cluster files at once (test/helpers/cluster-slots.ts): a fourth
 * waits for a release, a slot whose holder died is taken back, and every file the sequencer
 * runs last as a cluster file holds one.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { takeSlot } from "../helpers/cluster-slots.js";
import { CLUSTER } from "../helpers/sequencer.js";

const ROOT = join(import.meta.dirname, "..", "..");
const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "cluster-slots-test-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Resolves once the folder reports a change, after `change` made one. */
function changed(dir: string, change: () => void): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dir, () => {
      watcher.close();
      resolve();
    });
    change();
  });
}

it("gives three slots at once; a fourth is taken only when one is released", async () => {
  const dir = scratch();
  const held = await Promise.all([takeSlot(dir), takeSlot(dir), takeSlot(dir)]);
  let fourth: (() => void) | undefined;
  const waiting = takeSlot(dir).then((release) => (fourth = release));
  // A change in the folder makes the waiting one try again: still nothing free.
  await changed(dir, () => writeFileSync(join(dir, "unrelated"), ""));
  await changed(dir, () => rmSync(join(dir, "unrelated")));
  expect(fourth).toBeUndefined();
  held[1]!();
  await waiting;
  expect(readlinkSync(join(dir, "agent-bridge-cluster-slot-1"))).toBe(String(process.pid));
  fourth!();
  for (const release of [held[0]!, held[2]!]) release();
});

it("takes back a slot whose holder is gone", async () => {
  const dir = scratch();
  const child = spawn(process.execPath, ["-e", ""]);
  const dead = await new Promise<number>((resolve) => child.on("exit", () => resolve(child.pid!)));
  for (let n = 0; n < 3; n++) symlinkSync(String(dead), join(dir, `agent-bridge-cluster-slot-${n}`));
  const release = await takeSlot(dir);
  expect(readlinkSync(join(dir, "agent-bridge-cluster-slot-0"))).toBe(String(process.pid));
  release();
});

it("is held by every file the sequencer runs last as a cluster file", () => {
  for (const file of CLUSTER) expect(readFileSync(join(ROOT, file), "utf8"), file).toMatch(/^holdClusterSlot\(\);$/m);
});
