/**
 * Fifty tests of one worker: each in its own sandbox creates instances
 * through a fault, moves its clock, and asserts its own journal exactly.
 * Any request crossing from another test (a fault firing on someone else's
 * call, a clock moving someone else's instances, a journal line landing in
 * the wrong sandbox) makes a count wrong.
 */
import { createServiceClient, ServiceError } from "agent-bridge/client";
import { useSandbox } from "agent-bridge/testing/vitest";
import { expect, test } from "vitest";

export function defineWorkerTests(worker: number): void {
  const sandbox = useSandbox({ name: `worker-${worker}` });
  for (let i = 0; i < 50; i++) {
    const instances = 1 + ((worker + i) % 3);
    test(`worker ${worker} test ${i}: ${instances} instance(s)`, async () => {
      const s = sandbox();
      const api = createServiceClient({ baseUrl: s.url, apiKey: s.apiKey });
      await api.updateOrganization({ body: { model_api_keys: { anthropic: "sk-test" } } });
      await s.setTier("crab");
      await s.addFault({ target: "api", path: "/v1/instances", method: "POST", status: 503, times: 1 });
      await expect(api.createInstance({ body: { name: "refused" } })).rejects.toBeInstanceOf(ServiceError);
      const ids: string[] = [];
      for (let n = 0; n < instances; n++) ids.push((await api.createInstance({ body: { name: `i${n}` } })).id);
      const listed = await api.listInstances({});
      expect(listed.map((x) => x.status)).toEqual(ids.map(() => "provisioning"));

      const moved = await s.advance(60_000);
      expect(moved.happened.map((h) => h.kind)).toEqual(ids.map(() => "instance_running"));
      expect(new Set(moved.happened.map((h) => h.id))).toEqual(new Set(ids));
      expect((await api.listInstances({})).map((x) => x.status)).toEqual(ids.map(() => "running"));

      // Exactly this test's requests: 1 PATCH, 1 + n POST /v1/instances, 2 GET /v1/instances.
      await expect(s).toHaveReceivedTimes({ route: "createInstance" }, 1 + instances);
      await expect(s).toHaveReceivedTimes({ route: "createInstance", status: 503 }, 1);
      await expect(s).toHaveReceivedTimes({ route: "listInstances" }, 2);
      expect(await s.count()).toBe(1 + 1 + instances + 2);
      await expect(s).toHaveNoUnmatchedRequests();
      expect((await s.info()).clock.offset_ms).toBe(60_000);
    });
  }
}
