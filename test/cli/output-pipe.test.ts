/**
 * A long output through a pipe arrives whole: stdout to a pipe is written asynchronously, so a
 * binary that exits the moment its command resolves cuts what is still queued
 * (`agent-bridge config schema | jq` got the first 64 KiB of the schema).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { BIN } from "../helpers/cli.js";

const ROOT = join(import.meta.dirname, "..", "..");

it("prints the whole config schema into a pipe that reads slowly", async () => {
  const child = spawn(process.execPath, [BIN, "config", "schema"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const chunks: Buffer[] = [];
  // A reader that lets the pipe fill: nothing is read until the process has said it is exiting.
  child.stdout.pause();
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise<void>((resolve) => child.stdout.on("close", () => resolve()));
  setImmediate(() => child.stdout.resume());
  await closed;
  expect(await exited).toBe(0);
  const printed = Buffer.concat(chunks).toString("utf8");
  expect(printed.length).toBeGreaterThan(65_536);
  expect(JSON.parse(printed)).toEqual(JSON.parse(readFileSync(join(ROOT, "config.schema.json"), "utf8")));
});
