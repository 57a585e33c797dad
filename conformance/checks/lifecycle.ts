/** Stop, start and delete the run's instance: last, since they end what the other checks need. */
import { type Check, expectDetail, expectEmpty, expectStatus, field, jsonArray, that } from "../check.js";
import { waitRunning } from "./instances.js";

export const lifecycleChecks: readonly Check[] = [
  {
    id: "instances.stop-start",
    title: "stop answers stopped; a message is then 409 naming the status; stop again is 409; start brings it back",
    needs: ["running"],
    async run(ctx) {
      const params = { instance_id: ctx.facts.instanceId! };
      const stopped = await ctx.call("stopInstance", { params });
      expectStatus(stopped, 200);
      that(field(stopped.json, "status") === "stopped", `stop answered status ${JSON.stringify(field(stopped.json, "status"))}`);
      const refused = expectDetail(await ctx.call("createResponse", { params, body: { model: "conformance", input: "hello" } }), 409);
      that(refused.includes("stopped"), `the 409 does not name the status: ${refused}`);
      expectDetail(await ctx.call("stopInstance", { params }), 409);
      expectStatus(await ctx.call("startInstance", { params }), 200);
      await waitRunning(ctx, ctx.facts.instanceId!);
    },
  },
  {
    id: "instances.delete",
    title: "DELETE is 204; the instance is then 404 and out of the list; deleting again is 404",
    needs: ["instanceId"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId! };
      expectEmpty(await call("deleteInstance", { params }));
      expectDetail(await call("getInstance", { params }), 404);
      const list = await call("listInstances");
      expectStatus(list, 200);
      that(!jsonArray(list).some((i) => field(i, "id") === facts.instanceId), "a deleted instance is still listed");
      expectDetail(await call("deleteInstance", { params }), 404);
    },
  },
];
