/**
 * Temporary folders named after their owner's pid: a folder whose owner is gone (killed with
 * kill -9 before it could remove it) is removed when the next one of its kind is made; a
 * living owner's, and anything not named that way, stays.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { expect, it, onTestFinished } from "vitest";
import { makeOwnedTempDirSync, sweepOrphans } from "../../shared/temp-dirs.js";

let root: string;
/** A fresh folder for this test, removed when it finishes. */
const freshRoot = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "temp-dirs-test-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

/** The pid of a process that has exited (and was waited for, so nothing holds it). */
const deadPid = () => spawnSync(process.execPath, ["-e", ""]).pid;

it("removes the folders of owners that are gone, keeps living owners' and foreign names", () => {
  root = freshRoot();
  const gone = join(root, `kind-${deadPid()}-a1b2c3`);
  const mine = join(root, `kind-${process.pid}-d4e5f6`);
  const parent = join(root, `kind-${process.ppid}-g7h8i9`);
  const foreign = join(root, "kind-template-123-x");
  const otherKind = join(root, `other-${deadPid()}-j1k2l3`);
  for (const dir of [gone, mine, parent, foreign, otherKind]) mkdirSync(join(dir, "inside"), { recursive: true });

  expect(sweepOrphans("kind-", root)).toEqual([basename(gone)]);
  expect([gone, mine, parent, foreign, otherKind].map(existsSync)).toEqual([false, true, true, true, true]);
});

it("names a new folder after its owner, sweeping first", () => {
  root = freshRoot();
  const gone = join(root, `kind-${deadPid()}-zzzzzz`);
  mkdirSync(gone);
  const made = makeOwnedTempDirSync("kind-", root);
  expect(basename(made)).toMatch(new RegExp(`^kind-${process.pid}-\\w{6}$`));
  expect(existsSync(made)).toBe(true);
  expect(existsSync(gone)).toBe(false);
});
