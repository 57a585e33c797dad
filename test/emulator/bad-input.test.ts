/**
 * Bad input changes nothing: every refused request leaves the exported state
 * exactly as it was, and answers the contract's status and body.
 */
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runningInstance, signupOrg, snapshot, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator;
let org: TestOrg;
let instanceId: string;
let keyId: string;

beforeAll(async () => {
  t = await startEmulator();
  org = await signupOrg(t.app, { tier: "crab" });
  instanceId = (await runningInstance(t, org)).id;
  keyId = (
    (
      await request(t.app)
        .post("/v1/keys")
        .set(org.auth)
        .send({ name: "k", instance_ids: [instanceId], permissions: ["read"] })
    ).body as { id: string }
  ).id;
  // A conversation, so the gateway state is not empty either.
  await request(t.app).post(`/v1/instances/${instanceId}/responses`).set(org.auth).send({ model: "m", input: "hi" }).expect(200);
});

afterAll(async () => {
  await t?.close();
});

type Method = "post" | "patch" | "put";
interface BadCall {
  method: Method;
  path: () => string;
  auth?: boolean;
}

const CALLS: Record<string, BadCall> = {
  signup: { method: "post", path: () => "/v1/organization/signup", auth: false },
  "update organization": { method: "patch", path: () => "/v1/organization" },
  checkout: { method: "post", path: () => "/v1/subscription/checkout" },
  "create key": { method: "post", path: () => "/v1/keys" },
  "create instance": { method: "post", path: () => "/v1/instances" },
  "update instance": { method: "patch", path: () => `/v1/instances/${instanceId}` },
  message: { method: "post", path: () => `/v1/instances/${instanceId}/responses` },
  "session message": { method: "post", path: () => `/v1/instances/${instanceId}/session/s/responses` },
};

/** Sends a raw body with a JSON content type. */
function raw(call: BadCall, body: string) {
  let req = request(t.app)[call.method](call.path()).set("Content-Type", "application/json");
  if (call.auth !== false) req = req.set(org.auth);
  return req.send(body);
}

async function unchanged(run: () => Promise<request.Response>): Promise<request.Response> {
  const before = await snapshot(t.app);
  const res = await run();
  expect(await snapshot(t.app)).toEqual(before);
  return res;
}

const isValidationList = (detail: unknown) =>
  Array.isArray(detail) &&
  detail.length > 0 &&
  detail.every((d: { loc?: unknown; msg?: unknown; type?: unknown }) => Array.isArray(d.loc) && typeof d.msg === "string" && typeof d.type === "string");

describe.each(Object.entries(CALLS))("%s", (_name, call) => {
  it("malformed JSON: 400, nothing changes", async () => {
    const res = await unchanged(() => raw(call, '{"name": "x",'));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: "Request body is not valid JSON." });
  });

  it("a body over 1 MiB: 413, nothing changes", async () => {
    const big = JSON.stringify({ name: "x", model: "m", input: "a".repeat(1024 * 1024 + 10) });
    const res = await unchanged(() => raw(call, big));
    expect(res.status).toBe(413);
    expect(typeof res.body.detail).toBe("string");
  });

  it("wrong types: 422 with a {loc, msg, type} list, nothing changes", async () => {
    const res = await unchanged(() =>
      raw(call, JSON.stringify({ name: 12, model: 12, input: 12, tier: 12, instance_ids: "x", permissions: 1, model_api_keys: 3 })),
    );
    expect(res.status).toBe(422);
    expect(isValidationList(res.body.detail)).toBe(true);
    expect(res.body.detail[0].loc[0]).toBe("body");
  });

  it("a JSON body that is not an object: 422, nothing changes", async () => {
    for (const body of ["[]", '"text"', "42", "null"]) {
      const res = await unchanged(() => raw(call, body));
      expect([400, 422]).toContain(res.status);
      if (res.status === 422) expect(isValidationList(res.body.detail)).toBe(true);
    }
  });
});

describe("overlong names and unknown fields", () => {
  const longName = "n".repeat(129);
  const cases: [string, BadCall, Record<string, unknown>][] = [
    ["signup", CALLS.signup!, { name: longName }],
    ["update organization", CALLS["update organization"]!, { name: longName }],
    ["create key", CALLS["create key"]!, { name: longName, instance_ids: ["00000000-0000-4000-8000-000000000000"], permissions: ["read"] }],
    ["create instance", CALLS["create instance"]!, { name: longName }],
    ["update instance", CALLS["update instance"]!, { name: longName }],
  ];

  it.each(cases)("%s: a 129-character name is 422 too_big at body.name", async (_label, call, body) => {
    const res = await unchanged(() => raw(call, JSON.stringify(body)));
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ["body", "name"], type: "too_big" })]);
  });

  const closed: [string, BadCall, Record<string, unknown>][] = [
    ["signup", CALLS.signup!, { name: "ok", admin: true }],
    ["update organization", CALLS["update organization"]!, { name: "ok", subscription_tier: "lobster" }],
    ["checkout", CALLS.checkout!, { tier: "crab", price: 0 }],
    ["create key", CALLS["create key"]!, { name: "ok", instance_ids: ["00000000-0000-4000-8000-000000000000"], permissions: ["read"], raw_key: "mine" }],
    ["create instance", CALLS["create instance"]!, { name: "ok", status: "running" }],
    ["update instance", CALLS["update instance"]!, { status: "running" }],
  ];

  it.each(closed)("%s: an unknown field is 422 extra_forbidden", async (_label, call, body) => {
    const res = await unchanged(() => raw(call, JSON.stringify(body)));
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ["body"], type: "extra_forbidden" })]);
    expect(res.body.detail[0].msg).toMatch(/admin|subscription_tier|price|raw_key|status/);
  });

  it("messages are open: unknown fields pass (to the gateway), so they are not refused", async () => {
    const res = await request(t.app).post(`/v1/instances/${instanceId}/responses`).set(org.auth).send({ model: "m", input: "x", temperature: 1 });
    expect(res.status).toBe(200);
  });
});

describe("malformed requests other than the body", () => {
  it("a path that is not valid percent-encoding: 400 that says so, not a JSON complaint", async () => {
    for (const path of ["/v1/instances/%E0", "/v1/keys/%zz", `/v1/instances/${"%E0"}/session/s/responses`]) {
      const res = await unchanged(() => request(t.app).get(path).set(org.auth));
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/decode/i);
      expect(res.body.detail).not.toMatch(/JSON/);
    }
  });

  it("a body in an unsupported charset: 415 that names it", async () => {
    const res = await unchanged(() =>
      request(t.app).post("/v1/organization/signup").set("Content-Type", "application/json; charset=latin9").send('{"name":"x"}'),
    );
    expect(res.status).toBe(415);
    expect(res.body.detail).toMatch(/charset/i);
  });

  it("a body that is not JSON at all (another content type) fails validation: 422", async () => {
    const res = await unchanged(() => request(t.app).post("/v1/organization/signup").set("Content-Type", "text/plain").send("name=x"));
    expect(res.status).toBe(422);
    expect(isValidationList(res.body.detail)).toBe(true);
  });
});

describe("refusals before validation change nothing either", () => {
  it("an unknown key, a wrong state, a foreign id", async () => {
    await unchanged(() =>
      request(t.app)
        .patch("/v1/organization")
        .set("Authorization", `Bearer svc_org_${"1".repeat(64)}`)
        .send({ name: "x" }),
    );
    await unchanged(() => request(t.app).post(`/v1/instances/${instanceId}/start`).set(org.auth));
    const other = await signupOrg(t.app, { name: "other" });
    await unchanged(() => request(t.app).delete(`/v1/keys/${keyId}`).set(other.auth));
    await unchanged(() => request(t.app).patch(`/v1/instances/${instanceId}`).set(other.auth).send({ name: "stolen" }));
    expect((await request(t.app).get(`/v1/keys/${keyId}`).set(org.auth)).body.is_active).toBe(true);
  });
});
