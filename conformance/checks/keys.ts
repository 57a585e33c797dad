/** Scoped keys and the access rules they carry; every key the run mints is revoked. */
import { type Check, expectDetail, expectEmpty, expectInvalid, expectStatus, field, jsonArray, jsonObject, stringField, that } from "../check.js";

export const keyChecks: readonly Check[] = [
  {
    id: "keys.create-invalid",
    title: "POST /v1/keys with an unknown permission is 422 at body.permissions",
    needs: ["instanceId"],
    async run({ call, facts, run }) {
      const ex = await call("createKey", { body: { name: `${run.prefix}-bad`, instance_ids: [facts.instanceId], permissions: ["fly"] } });
      expectInvalid(ex, ["body", "permissions"]);
    },
  },
  {
    id: "keys.create",
    title: "POST /v1/keys answers 201 with the key's fields and its raw key (svc_sk_ + 64 hex), once",
    needs: ["instanceId"],
    async run({ call, facts, cleanup, run }) {
      cleanup.keys();
      const ex = await call("createKey", { body: { name: `${run.prefix}-read`, instance_ids: [facts.instanceId], permissions: ["read"] } });
      expectStatus(ex, 201);
      const key = jsonObject(ex);
      const raw = stringField(key, "raw_key") ?? "";
      that(/^svc_sk_[0-9a-f]{64}$/.test(raw), "raw_key is not svc_sk_ + 64 lowercase hex");
      that(key.is_active === true, "a new key is not active");
      const grants = field(key, "instances");
      that(
        Array.isArray(grants) && grants.length === 1 && field(grants[0], "instance_id") === facts.instanceId,
        `instances is ${JSON.stringify(grants)}, expected one grant on the run's instance`,
      );
      facts.scopedKey = { id: stringField(key, "id")!, raw };
    },
  },
  {
    id: "keys.read",
    title: "GET /v1/keys and /v1/keys/{id} show the key, never its raw key",
    needs: ["scopedKey"],
    async run({ call, facts }) {
      const list = await call("listKeys");
      expectStatus(list, 200);
      that(
        jsonArray(list).some((k) => field(k, "id") === facts.scopedKey!.id),
        "the new key is not listed",
      );
      const one = await call("getKey", { params: { key_id: facts.scopedKey!.id } });
      expectStatus(one, 200);
      that(!list.text.includes(facts.scopedKey!.raw) && !one.text.includes(facts.scopedKey!.raw), "a read answer holds the raw key");
      that(field(one.json, "raw_key") === undefined, "GET /v1/keys/{id} has raw_key");
    },
  },
  {
    id: "permissions.granted",
    title: "A scoped key with read can get its instance",
    needs: ["scopedKey", "instanceId"],
    async run({ call, facts }) {
      expectStatus(await call("getInstance", { params: { instance_id: facts.instanceId! }, key: facts.scopedKey!.raw }), 200);
    },
  },
  {
    id: "permissions.missing",
    title: "A scoped key without the permission is 403 (message, files, configure, channels)",
    needs: ["scopedKey", "instanceId"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId! };
      const key = facts.scopedKey!.raw;
      expectDetail(await call("createResponse", { params, key, body: { model: "conformance", input: "hello" } }), 403);
      expectDetail(await call("listFiles", { params, key }), 403);
      expectDetail(await call("stopInstance", { params, key }), 403);
      expectDetail(await call("listChannels", { params, key }), 403);
    },
  },
  {
    id: "permissions.organization-only",
    title: "A scoped key on an organization-only route is 403",
    needs: ["scopedKey", "instanceId"],
    async run({ call, facts }) {
      const key = facts.scopedKey!.raw;
      expectDetail(await call("getOrganization", { key }), 403);
      expectDetail(await call("listKeys", { key }), 403);
      expectDetail(await call("listInstances", { key }), 403);
      expectDetail(await call("deleteInstance", { params: { instance_id: facts.instanceId! }, key }), 403);
    },
  },
  {
    id: "keys.revoke",
    title: "DELETE /v1/keys/{id} is 204 (again too), the key is 403 at once and reads inactive",
    needs: ["scopedKey", "instanceId"],
    async run({ call, facts }) {
      const params = { key_id: facts.scopedKey!.id };
      expectEmpty(await call("revokeKey", { params }));
      expectDetail(await call("getInstance", { params: { instance_id: facts.instanceId! }, key: facts.scopedKey!.raw }), 403);
      expectEmpty(await call("revokeKey", { params }));
      const one = await call("getKey", { params });
      expectStatus(one, 200);
      that(field(one.json, "is_active") === false, "a revoked key reads is_active true");
    },
  },
  {
    id: "keys.unknown",
    title: "An unknown key id is 404",
    async run({ call }) {
      expectDetail(await call("getKey", { params: { key_id: "00000000-0000-4000-8000-000000000000" } }), 404);
    },
  },
];
