/**
 * The conformance kit against the emulator, both as processes over real HTTP,
 * as CI and a user run it: every check passes (signup included), the JUnit
 * file says so, every route of the service was called, and the organization
 * ends as it began.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { routes } from "../../shared/api.js";
import { createContractValidator } from "../../shared/contract/index.js";
import { JournalEntry } from "../../shared/schemas/admin.js";
import { runAgentBridge, startCli, stopCli } from "../helpers/cli.js";
import { leftovers, restorable, throwawayOrg } from "../helpers/conformance.js";
import { tempDir } from "../helpers/emulator.js";

let emulator: Awaited<ReturnType<typeof startCli>>;
const dir = tempDir("conformance-");

beforeAll(async () => {
  emulator = await startCli(["--in-memory", "--port", "0", "--provision-ms", "20"]);
});
afterAll(async () => {
  await stopCli(emulator, "SIGTERM");
  dir.remove();
});

it("passes every check against the emulator and leaves the organization as it found it", async () => {
  const org = await throwawayOrg(emulator.url);
  const junit = join(dir.path, "reports", "conformance.xml");
  const kit = runAgentBridge(["conformance", "--base-url", emulator.url, "--key", org.key, "--junit", junit, "--allow-signup"]);
  const code = await kit.exited;
  expect(kit.stdout()).toMatch(/\n(\d+) passed, 0 failed, 0 skipped\n/);
  expect(kit.stdout()).not.toContain(org.key);
  expect(code, kit.stdout() + kit.stderr()).toBe(0);

  const xml = readFileSync(junit, "utf8");
  const cases = xml.match(/<testcase /g) ?? [];
  expect(cases.length).toBeGreaterThan(45);
  expect(xml).toMatch(/<testsuites name="agent-bridge conformance" tests="\d+" failures="0" skipped="0"/);
  expect(xml).not.toContain("<failure");
  // Each area of the contract is covered.
  for (const area of [
    "auth",
    "signup",
    "organization",
    "subscription",
    "instances",
    "keys",
    "permissions",
    "messaging",
    "channels",
    "skills",
    "files",
    "cleanup",
  ]) {
    expect(xml, area).toContain(`classname="conformance.${area}"`);
  }

  // Every route of the service was called (the emulator's request log, matched to the contract's routes).
  const log = z.array(JournalEntry).parse(await (await fetch(`${emulator.url}/_emulator/requests`)).json());
  const validator = createContractValidator();
  const called = new Set(log.map((entry) => validator.matchRoute(entry.method, entry.path)?.route));
  const service = Object.values(routes)
    .filter((spec) => spec.path.startsWith("/v1/"))
    .map((spec) => `${spec.method} ${spec.path}`);
  expect(service.filter((route) => !called.has(route))).toEqual([]);

  const after = await leftovers(emulator.url, org);
  expect(after.instances).toEqual([]);
  expect(after.activeKeys).toEqual([]);
  expect(restorable(after.organization)).toEqual(restorable(org.organization));
});
