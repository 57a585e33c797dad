/** Creating, reading, changing and polling the run's instance; the 402 of a full plan. */
import { type Check, type CheckContext, expectDetail, expectInvalid, expectStatus, field, jsonArray, jsonObject, skip, stringField, that } from "../check.js";

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

/** Polls the status until `running` (an `error` or the deadline fails). */
export async function waitRunning(ctx: CheckContext, instanceId: string): Promise<void> {
  let waited = 0;
  let wait = 100;
  for (;;) {
    const ex = await ctx.call("getInstanceStatus", { params: { instance_id: instanceId } });
    expectStatus(ex, 200);
    const status = stringField(ex.json, "status");
    if (status === "running") return;
    that(status === "provisioning" || status === "stopped", `the instance became ${status}, not running`);
    that(waited + wait <= ctx.run.provisionTimeoutMs, `the instance is still ${status} after ${ctx.run.provisionTimeoutMs} ms (--provision-timeout-ms)`);
    await ctx.sleep(wait);
    waited += wait;
    wait = Math.min(wait * 2, 2_000);
  }
}

export const instanceChecks: readonly Check[] = [
  {
    id: "instances.create-invalid",
    title: "POST /v1/instances without a name is 422 at body.name, and creates nothing",
    async run({ call }) {
      expectInvalid(await call("createInstance", { body: {} }), ["body", "name"]);
    },
  },
  {
    id: "instances.create",
    title: "POST /v1/instances answers 201 with the instance in provisioning (or running)",
    async run({ call, facts, cleanup, run }) {
      that(facts.provider, "the organization holds no model-provider key: store one (PATCH /v1/organization model_api_keys) and run again");
      cleanup.instances();
      const name = `${run.prefix}-instance`;
      const ex = await call("createInstance", { body: { name, model_provider: facts.provider } });
      expectStatus(ex, 201);
      const instance = jsonObject(ex);
      that(instance.name === name, `name is ${JSON.stringify(instance.name)}, expected ${name}`);
      that(instance.status === "provisioning" || instance.status === "running", `status is ${JSON.stringify(instance.status)}`);
      that(instance.organization_id === facts.organizationId, "organization_id is not the key's organization");
      facts.instanceId = stringField(instance, "id");
    },
  },
  {
    id: "instances.limit",
    title: "Creating past the plan's instance_limit is 402, naming the limit",
    needs: ["instanceId"],
    async run({ call, run }) {
      const sub = await call("getSubscription");
      expectStatus(sub, 200);
      const limit = field(sub.json, "instance_limit");
      const count = field(sub.json, "instance_count");
      if (limit !== count) return skip(`the plan has room (${String(count)}/${String(limit)}): checking would create more instances`);
      const sentence = expectDetail(await call("createInstance", { body: { name: `${run.prefix}-over-limit` } }), 402);
      that(sentence.includes(`${String(count)}/${String(limit)}`), `the sentence does not name ${String(count)}/${String(limit)}: ${sentence}`);
    },
  },
  {
    id: "instances.list",
    title: "GET /v1/instances lists the new instance",
    needs: ["instanceId"],
    async run({ call, facts }) {
      const ex = await call("listInstances");
      expectStatus(ex, 200);
      that(
        jsonArray(ex).some((i) => field(i, "id") === facts.instanceId),
        "the new instance is not in the list",
      );
    },
  },
  {
    id: "instances.get",
    title: "GET /v1/instances/{id} and its /status answer the instance",
    needs: ["instanceId"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId! };
      const got = await call("getInstance", { params });
      expectStatus(got, 200);
      that(field(got.json, "id") === facts.instanceId, "a different instance came back");
      const status = await call("getInstanceStatus", { params });
      expectStatus(status, 200);
      that(field(status.json, "id") === facts.instanceId, "the status names a different instance");
    },
  },
  {
    id: "instances.unknown",
    title: "An unknown instance id is 404 with a detail sentence",
    async run({ call }) {
      expectDetail(await call("getInstance", { params: { instance_id: UNKNOWN_ID } }), 404);
    },
  },
  {
    id: "instances.running",
    title: "The instance becomes running after provisioning",
    needs: ["instanceId"],
    async run(ctx) {
      await waitRunning(ctx, ctx.facts.instanceId!);
      ctx.facts.running = true;
    },
  },
  {
    id: "instances.update",
    title: "PATCH sets and clears runtime_config; a wrong type is 422",
    needs: ["instanceId"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId! };
      const set = await call("updateInstance", { params, body: { runtime_config: { conformance: true } } });
      expectStatus(set, 200);
      that(field(field(set.json, "runtime_config"), "conformance") === true, "runtime_config was not set");
      const cleared = await call("updateInstance", { params, body: { runtime_config: null } });
      expectStatus(cleared, 200);
      that(field(cleared.json, "runtime_config") === null, "runtime_config was not cleared by null");
      expectInvalid(await call("updateInstance", { params, body: { name: 5 } }), ["body", "name"]);
    },
  },
];
