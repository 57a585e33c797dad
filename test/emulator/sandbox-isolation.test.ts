/**
 * Many sandboxes at once on one emulator, in-process: each creates its own
 * number of instances, has a fault rule fail one of its creates, moves its
 * clock and then checks its own journal exactly. Any request, rule or clock
 * move that crossed into another sandbox would change one of the counts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import type { SandboxHandle } from "../../emulator/sandboxes/handle.js";
import { createManualClock } from "../../shared/clock.js";
import { providerKey } from "../helpers/emulator.js";

let emulator: Emulator;
let url: string;

beforeAll(async () => {
  emulator = await createEmulator({ clock: createManualClock(), provisionMs: 10_000 });
  url = await emulator.listen(0, "127.0.0.1");
});
afterAll(async () => {
  await emulator?.close();
});

async function send(sandbox: SandboxHandle, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${sandbox.apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => undefined)) as Record<string, unknown> };
}

/** One test's whole life in its sandbox; returns what it saw. */
async function life(index: number) {
  const sandbox = await emulator.sandboxes.create({ name: `worker-${index}` });
  const instances = 2 + (index % 4);
  await send(sandbox, "PATCH", "/v1/organization", { model_api_keys: { anthropic: providerKey("anthropic") } });
  // The free plan holds one instance: the control plane (not a sandbox's request) lifts it.
  const tier = await fetch(`${url}/_emulator/organizations/${sandbox.organizationId}/tier`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tier: "crab" }),
  });
  expect(tier.status).toBe(200);
  // The second create of this sandbox fails: the rule is its own, used once.
  sandbox.addFault({ target: "api", path: "/v1/instances", method: "POST", status: 503, times: 1 });
  const created: string[] = [];
  const statuses: number[] = [];
  for (let i = 0; i < instances + 1; i++) {
    const res = await send(sandbox, "POST", "/v1/instances", { name: `i${i}` });
    statuses.push(res.status);
    if (res.status === 201) created.push(res.body.id as string);
  }
  const moved = await sandbox.advance(10_000 * (1 + (index % 3)));
  const listed = await send(sandbox, "GET", "/v1/instances");
  return { sandbox, instances, created, statuses, moved, listed, index };
}

describe("sandboxes in parallel, in-process", () => {
  it("each sees exactly its own requests, faults, clock and instances", async () => {
    const lives = await Promise.all(Array.from({ length: 24 }, (_, i) => life(i)));
    for (const { sandbox, instances, created, statuses, moved, listed, index } of lives) {
      expect(statuses.filter((s) => s === 503)).toHaveLength(1);
      expect(created).toHaveLength(instances);
      expect(moved.offset_ms).toBe(10_000 * (1 + (index % 3)));
      expect(moved.happened.map((h) => h.id).sort()).toEqual([...created].sort());
      expect(moved.happened.every((h) => h.kind === "instance_running")).toBe(true);
      expect((listed.body as unknown as { id: string; status: string }[]).map((i) => i.status)).toEqual(created.map(() => "running"));
      // PATCH, the creates (one refused by the fault), the list: nothing more, nothing less.
      expect(sandbox.count()).toBe(1 + instances + 1 + 1);
      expect(sandbox.count({ route: "createInstance", status: 201 })).toBe(instances);
      expect(sandbox.count({ method: "POST", status: 503 })).toBe(1);
      expect(sandbox.requests({ route: "listInstances" })).toHaveLength(1);
      expect(sandbox.unmatched()).toEqual([]);
      expect(sandbox.info()).toMatchObject({ instance_count: instances, name: `worker-${index}` });
    }
    // The rules were used up in their own sandboxes: none is left anywhere.
    expect(emulator.env.faults.list()).toEqual([]);
    await Promise.all(lives.map(({ sandbox }) => sandbox.remove()));
    expect(Object.keys(emulator.store.data.organizations)).toEqual([]);
    expect(Object.keys(emulator.store.data.instances)).toEqual([]);
  });
});
