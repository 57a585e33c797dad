/**
 * `--skip`: a user can leave out checks (messages cost money against the real
 * service): those named, and every check of an area named, are skipped as
 * such; the rest run and pass; a name that is no check is a usage error.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { runConformance, unknownCheckNames } from "../../conformance/run.js";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { runAgentBridge } from "../helpers/cli.js";
import { leftovers, throwawayOrg } from "../helpers/conformance.js";

let emulator: Emulator;
let url: string;

beforeAll(async () => {
  emulator = await createEmulator({ inMemory: true, provisionMs: 0 });
  url = await emulator.listen(0, "127.0.0.1");
});
afterAll(async () => {
  await emulator.close();
});

it("skips the checks and areas named, runs the rest", async () => {
  const org = await throwawayOrg(url);
  const run = await runConformance({ baseUrl: url, key: org.key, skip: ["messaging", "files.delete"] });
  const skipped = run.results.filter((r) => r.outcome === "skip");
  expect(skipped.map((r) => r.id)).toEqual([
    "signup.create",
    "messaging.respond",
    "messaging.session",
    "messaging.invalid",
    "messaging.previous-unknown",
    "messaging.stream",
    "files.delete",
  ]);
  expect(skipped.filter((r) => r.id !== "signup.create").every((r) => r.message === "skipped with --skip")).toBe(true);
  expect(run.results.filter((r) => r.outcome === "fail")).toEqual([]);
  expect(run.ok).toBe(true);
  expect((await leftovers(url, org)).instances).toEqual([]);
});

it("refuses a name that is no check or area", async () => {
  expect(unknownCheckNames(["messaging", "files.delete", "messagin", "files.nope"])).toEqual(["messagin", "files.nope"]);
  const kit = runAgentBridge(["conformance", "--base-url", url, "--key", `svc_org_${"c".repeat(64)}`, "--skip", "messaging,messagin"]);
  expect(await kit.exited).toBe(2);
  expect(kit.stderr()).toContain("--skip names no such check or area: messagin");
});
