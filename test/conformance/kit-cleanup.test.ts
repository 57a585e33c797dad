/**
 * The kit removes what it made however the run ends: when the answer to a
 * create is lost (the server made the instance, the kit never learned its id),
 * when the server fails for a stretch mid-run (the cleanup retries until it
 * answers again), and when the kit is stopped by SIGINT or SIGTERM while a
 * request is in flight. Each time the organization ends as it began. What a
 * SIGKILL leaves, `--sweep` removes.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { runConformance } from "../../conformance/run.js";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { JournalEntry } from "../../shared/schemas/admin.js";
import { runAgentBridge } from "../helpers/cli.js";
import { leftovers, restorable, type ThrowawayOrg, throwawayOrg } from "../helpers/conformance.js";
import { tempDir } from "../helpers/emulator.js";
import { createLossyProxy, type LossyProxy, type ProxiedRequest } from "../helpers/lossy-proxy.js";

let emulator: Emulator;
let upstream: string;
let proxy: LossyProxy;
const dir = tempDir("conformance-cleanup-");

beforeAll(async () => {
  emulator = await createEmulator({ inMemory: true, provisionMs: 0 });
  upstream = await emulator.listen(0, "127.0.0.1");
  proxy = await createLossyProxy(upstream);
});
afterAll(async () => {
  await proxy.close();
  await emulator.close();
  dir.remove();
});

async function expectAsFound(org: ThrowawayOrg): Promise<void> {
  const after = await leftovers(upstream, org);
  expect(after.instances).toEqual([]);
  expect(after.activeKeys).toEqual([]);
  expect(restorable(after.organization)).toEqual(restorable(org.organization));
}

const requestLog = async () => z.array(JournalEntry).parse(await (await fetch(`${upstream}/_emulator/requests`)).json());

const isCreate = (r: ProxiedRequest, path: string) => r.method === "POST" && r.path === path;

it("removes an instance whose create answer was lost", async () => {
  const org = await throwawayOrg(upstream);
  const before = (await requestLog()).length;
  let lost = 0;
  // The server makes the instance; the connection is reset before its answer.
  proxy.setPolicy((r) => (isCreate(r, "/v1/instances") && (r.json as { name?: string }).name?.endsWith("-instance") && lost++ === 0 ? "reset" : "pass"));
  const run = await runConformance({ baseUrl: proxy.url, key: org.key });

  const create = run.results.find((r) => r.id === "instances.create")!;
  expect(create.outcome).toBe("fail");
  expect(create.message).toContain("the server closed the connection or cannot be reached");
  expect(run.results.find((r) => r.id === "instances.get")!.message).toContain("needs instanceId");
  expect(run.ok).toBe(false);
  expect(run.cleanup.every((c) => c.ok)).toBe(true);
  // The server did make it, and the cleanup found it by its name and deleted it.
  const journal = (await requestLog()).slice(before);
  expect(journal.filter((e) => e.method === "POST" && e.path === "/v1/instances" && e.status === 201)).toHaveLength(1);
  expect(journal.filter((e) => e.method === "DELETE" && e.path.startsWith("/v1/instances/") && e.status === 204)).toHaveLength(1);
  await expectAsFound(org);
});

it("keeps cleaning up through a stretch of failures mid-run", async () => {
  const org = await throwawayOrg(upstream);
  let failing = false;
  let cleaning = false;
  let refusedInCleanup = 0;
  // From the scoped key's creation on, requests reach the server but lose their answers: the rest of
  // the checks fail, and so do the cleanup's first three attempts; then the server answers again.
  proxy.setPolicy((r) => {
    if (isCreate(r, "/v1/keys") && (r.json as { permissions?: string[] }).permissions?.[0] === "read") failing = true;
    if (!failing || refusedInCleanup === 3) return "pass";
    if (cleaning) refusedInCleanup++;
    return "reset";
  });
  const run = await runConformance({ baseUrl: proxy.url, key: org.key, onCleanup: () => (cleaning = true) });

  expect(refusedInCleanup).toBe(3);
  expect(run.results.find((r) => r.id === "keys.create")!.outcome).toBe("fail");
  expect(run.results.find((r) => r.id === "instances.delete")!.message).toContain("the server closed the connection or cannot be reached");
  expect(
    run.cleanup.every((c) => c.ok),
    JSON.stringify(run.cleanup),
  ).toBe(true);
  expect(run.cleanup[0]).toMatchObject({ what: expect.stringMatching(/^scoped keys named conformance-/), attempts: 4 });
  await expectAsFound(org);
});

it.each(["SIGINT", "SIGTERM"] as const)("cleans up when stopped by %s with a request in flight", async (signal) => {
  const org = await throwawayOrg(upstream);
  let held = false;
  // The upload is held, never answered: the kit waits on it until the signal.
  proxy.setPolicy((r) => {
    if (!held && r.method === "POST" && r.path.endsWith("/files/upload")) {
      held = true;
      return "drop";
    }
    return "pass";
  });
  const junit = `${dir.path}/${signal}.xml`;
  // The key from the environment (it stays out of the process list).
  const kit = runAgentBridge(["conformance", "--base-url", proxy.url, "--junit", junit], { env: { ...process.env, AGENT_BRIDGE_CONFORMANCE_KEY: org.key } });
  await proxy.nextHeld();
  kit.child.kill(signal);
  const code = await kit.exited;

  expect(code, kit.stdout() + kit.stderr()).toBe(1);
  expect(kit.stdout()).toContain(`conformance: ${signal}, stopping the checks and cleaning up`);
  expect(kit.stdout()).toMatch(/SKIP instances\.delete \(0 ms\): interrupted/);
  expect(kit.stdout()).toContain("conformance: interrupted");
  expect(kit.stdout()).toMatch(/done {2}instances named conformance-[0-9a-f]{8}\*/);
  expect(kit.stdout()).not.toContain("LEFT");
  await expectAsFound(org);
});

it("leaves what a SIGKILL interrupted to --sweep, which removes only what runs named", async () => {
  const org = await throwawayOrg(upstream);
  // Room for the user's own instance beside the kit's; the sweep must not touch it.
  expect(
    (
      await fetch(`${upstream}/_emulator/organizations/${org.organization.id}/tier`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"tier":"crab"}',
      })
    ).status,
  ).toBe(200);
  const auth = { authorization: `Bearer ${org.key}`, "content-type": "application/json" };
  expect((await fetch(`${upstream}/v1/instances`, { method: "POST", headers: auth, body: '{"name":"keep-me"}' })).status).toBe(201);
  let held = false;
  // Held once the run's instance and scoped key exist.
  proxy.setPolicy((r) => {
    if (!held && r.method === "GET" && r.path === "/v1/keys") {
      held = true;
      return "drop";
    }
    return "pass";
  });
  const kit = runAgentBridge(["conformance", "--base-url", proxy.url, "--key", org.key, "--junit", `${dir.path}/killed.xml`]);
  await proxy.nextHeld();
  kit.child.kill("SIGKILL");
  expect(await kit.exited).toBe("SIGKILL");
  const left = await leftovers(upstream, org);
  expect(left.instances).toHaveLength(2);
  expect(left.instances).toEqual(expect.arrayContaining([expect.stringMatching(/^conformance-[0-9a-f]{8}-instance /), "keep-me (running)"]));
  expect(left.activeKeys).toEqual([expect.stringMatching(/^conformance-[0-9a-f]{8}-read$/)]);

  const sweep = runAgentBridge(["conformance", "--base-url", upstream, "--key", org.key, "--sweep"]);
  expect(await sweep.exited, sweep.stdout() + sweep.stderr()).toBe(0);
  expect(sweep.stdout()).toContain("done  instances named conformance-*");
  expect(sweep.stdout()).toContain("nothing left");
  const after = await leftovers(upstream, org);
  expect(after.instances).toEqual(["keep-me (running)"]);
  expect(after.activeKeys).toEqual([]);
});

it("abandons the cleanup on a second SIGINT and says what may be left, by the run's name", async () => {
  const org = await throwawayOrg(upstream);
  let stage: "checks" | "cleanup" | "held" = "checks";
  // The upload is held (first SIGINT); then the cleanup's first request is held too (second SIGINT).
  proxy.setPolicy((r) => {
    if (stage === "checks" && r.method === "POST" && r.path.endsWith("/files/upload")) {
      stage = "cleanup";
      return "drop";
    }
    if (stage === "cleanup" && r.method === "GET" && r.path === "/v1/keys") {
      stage = "held";
      return "drop";
    }
    return "pass";
  });
  const kit = runAgentBridge(["conformance", "--base-url", proxy.url, "--key", org.key, "--junit", `${dir.path}/abandoned.xml`]);
  await proxy.nextHeld();
  kit.child.kill("SIGINT");
  await proxy.nextHeld();
  kit.child.kill("SIGINT");

  expect(await kit.exited, kit.stdout() + kit.stderr()).toBe(1);
  const runId = /LEFT BEHIND \(remove by hand; names start with (conformance-[0-9a-f]{8})\): (.*)/.exec(kit.stdout());
  expect(runId, kit.stdout()).not.toBeNull();
  expect(runId![2]).toContain("instances named conformance-");
  expect((await leftovers(upstream, org)).instances).toEqual([expect.stringMatching(new RegExp(`^${runId![1]}-instance `))]);

  // What it named, --sweep removes.
  proxy.setPolicy(() => "pass");
  const sweep = runAgentBridge(["conformance", "--base-url", upstream, "--key", org.key, "--sweep"]);
  expect(await sweep.exited, sweep.stdout()).toBe(0);
  expect((await leftovers(upstream, org)).instances).toEqual([]);
});
