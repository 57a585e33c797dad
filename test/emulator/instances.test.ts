import request from "supertest";
import { describe, expect, it } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { Instance, InstanceStatusView } from "../../shared/schemas/instances.js";
import { requestDetail } from "../../emulator/events/capture.js";
import { bearer, forceState, runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator;

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const create = (org: TestOrg, body: Record<string, unknown>) => request(t.app).post("/v1/instances").set(org.auth).send(body);
const get = (org: TestOrg, id: string, suffix = "") => request(t.app).get(`/v1/instances/${id}${suffix}`).set(org.auth);
const message = (org: TestOrg, id: string, session?: string) =>
  request(t.app)
    .post(session ? `/v1/instances/${id}/session/${session}/responses` : `/v1/instances/${id}/responses`)
    .set(org.auth)
    .send({ model: "m", input: "hi" });

describe("create", () => {
  it("answers 201 provisioning with the defaults, then running once provisionMs has elapsed", async () => {
    t = forThisTest(await startEmulator({ provisionMs: 1500 }));
    const org = await signupOrg(t.app);
    const res = await create(org, { name: "agent" });
    expect(res.status).toBe(201);
    const instance = Instance.parse(res.body);
    expect(instance.id).toMatch(UUID4);
    expect(instance).toMatchObject({
      organization_id: org.organization.id,
      name: "agent",
      status: "provisioning",
      model_provider: "anthropic",
      sandbox_provider: "sandbox",
      runtime_version: "v1",
      runtime_config: null,
      region: null,
      error_message: null,
      created_at: "2026-01-01T00:00:00.000Z",
      updated_at: "2026-01-01T00:00:00.000Z",
    });
    // Set at creation, as strings.
    expect(instance.sandbox_id.length).toBeGreaterThan(0);
    expect(new URL(instance.gateway_url).protocol).toBe("http:");
    expect((await request(t.app).get("/v1/subscription").set(org.auth)).body.instance_count).toBe(1);

    t.clock.advance(1499);
    expect((await get(org, instance.id)).body.status).toBe("provisioning");
    expect((await get(org, instance.id, "/status")).body.status).toBe("provisioning");
    t.clock.advance(1);
    const ready = await get(org, instance.id);
    expect(ready.body.status).toBe("running");
    expect(ready.body.updated_at).toBe("2026-01-01T00:00:01.500Z");
    expect((await message(org, instance.id)).status).toBe(200);
  });

  it("takes the optional fields", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app, { providers: ["anthropic", "gemini"] });
    const res = await create(org, {
      name: "custom",
      model_provider: "gemini",
      sandbox_provider: "firecracker",
      runtime_version: "v2",
      runtime_config: { temperature: 0.2, nested: { a: [1, 2] } },
      region: "eu-west",
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      model_provider: "gemini",
      sandbox_provider: "firecracker",
      runtime_version: "v2",
      runtime_config: { temperature: 0.2, nested: { a: [1, 2] } },
      region: "eu-west",
    });
    expect((await get(org, res.body.id as string)).body).toEqual(res.body);
  });

  it("answers 402 with the exact sentence at the limit, and nothing is created", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    await runningInstance(t, org);
    const res = await create(org, { name: "second" });
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ detail: "Instance limit reached (1/1). Upgrade your subscription." });
    expect((await request(t.app).get("/v1/instances").set(org.auth)).body).toHaveLength(1);
  });

  it("counts stopped and errored instances toward the limit", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const one = await runningInstance(t, org);
    await request(t.app).post(`/v1/instances/${one.id}/stop`).set(org.auth).expect(200);
    expect((await create(org, { name: "two" })).status).toBe(402);
    await forceState(t.app, one.id, { status: "error" });
    expect((await create(org, { name: "two" })).status).toBe(402);
  });

  it("answers 400 for a provider without a key, 422 for one that does not exist", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const res = await create(org, { name: "x", model_provider: "openai" });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain("openai");
    expect((await create(org, { name: "x", model_provider: "mistral" })).status).toBe(422);

    const bare = await signupOrg(t.app, { name: "bare", providers: [] });
    expect((await create(bare, { name: "x" })).status).toBe(400); // default anthropic, no key
    expect((await request(t.app).get("/v1/instances").set(org.auth)).body).toEqual([]);
  });

  it.each([
    ["no name", {}],
    ["an empty name", { name: "" }],
    ["a 129-character name", { name: "n".repeat(129) }],
    ["a number for a name", { name: 7 }],
    ["an array runtime_config", { name: "x", runtime_config: [1] }],
    ["a 65-character region", { name: "x", region: "r".repeat(65) }],
    ["an unknown field", { name: "x", size: "large" }],
  ])("answers 422 for %s", async (_label, body) => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const res = await create(org, body);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc[0]).toBe("body");
  });

  it("reaches error with an error_message when the name is fail-provision", async () => {
    t = forThisTest(await startEmulator({ provisionMs: 1000 }));
    const org = await signupOrg(t.app);
    const res = await create(org, { name: "fail-provision" });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe("provisioning");
    expect(res.body.error_message).toBeNull();
    t.clock.advance(1000);
    const failed = await get(org, res.body.id as string);
    expect(failed.body.status).toBe("error");
    expect(typeof failed.body.error_message).toBe("string");
    expect(failed.body.error_message.length).toBeGreaterThan(0);
    // From error only delete is possible.
    expect((await request(t.app).post(`/v1/instances/${res.body.id}/start`).set(org.auth)).status).toBe(409);
    expect((await request(t.app).post(`/v1/instances/${res.body.id}/stop`).set(org.auth)).status).toBe(409);
    expect((await message(org, res.body.id as string)).status).toBe(409);
    expect((await request(t.app).delete(`/v1/instances/${res.body.id}`).set(org.auth)).status).toBe(204);
  });
});

describe("list, get, status, patch", () => {
  it("lists non-terminated instances, newest first", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app, { tier: "crab" });
    const ids: string[] = [];
    for (const name of ["a", "b", "c", "d"]) {
      ids.push((await runningInstance(t, org, { name })).id);
      t.clock.advance(1000);
    }
    await request(t.app).delete(`/v1/instances/${ids[1]}`).set(org.auth).expect(204);
    const list = await request(t.app).get("/v1/instances").set(org.auth);
    expect(list.status).toBe(200);
    expect((list.body as Instance[]).map((i) => i.name)).toEqual(["d", "c", "a"]);
    // Another organization's list is its own.
    const other = await signupOrg(t.app, { name: "other" });
    expect((await request(t.app).get("/v1/instances").set(other.auth)).body).toEqual([]);
  });

  it("get and status answer the instance; 404 for an unknown id", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    expect((await get(org, instance.id)).body).toEqual(instance);
    const status = await get(org, instance.id, "/status");
    expect(status.status).toBe(200);
    expect(InstanceStatusView.parse(status.body)).toEqual({ id: instance.id, status: "running", gateway_url: instance.gateway_url });
    // Names of Object.prototype members are ids like any other.
    for (const id of ["00000000-0000-4000-8000-000000000000", "nope", "constructor", "__proto__", "toString"]) {
      const res = await get(org, id);
      expect(res.status).toBe(404);
      expect(typeof res.body.detail).toBe("string");
    }
  });

  it("patch renames and sets or clears runtime_config; other fields stay", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org, { region: "us" });
    t.clock.advance(1000);
    let res = await request(t.app)
      .patch(`/v1/instances/${instance.id}`)
      .set(org.auth)
      .send({ name: "renamed", runtime_config: { a: 1 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...instance, name: "renamed", runtime_config: { a: 1 }, updated_at: "2026-01-01T00:00:01.000Z" });
    res = await request(t.app).patch(`/v1/instances/${instance.id}`).set(org.auth).send({ runtime_config: null });
    expect(res.body.runtime_config).toBeNull();
    expect(res.body.name).toBe("renamed");
    res = await request(t.app).patch(`/v1/instances/${instance.id}`).set(org.auth).send({});
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("renamed");
    for (const body of [{ name: "" }, { status: "stopped" }, { runtime_config: "x" }]) {
      expect((await request(t.app).patch(`/v1/instances/${instance.id}`).set(org.auth).send(body)).status).toBe(422);
    }
    expect((await get(org, instance.id)).body.name).toBe("renamed");
  });
});

describe("start and stop", () => {
  it("stop needs running, start needs stopped; 409 otherwise with the status in the sentence", async () => {
    t = forThisTest(await startEmulator({ provisionMs: 1000 }));
    const org = await signupOrg(t.app, { tier: "crab" });
    const instance = await runningInstance(t, org);
    const stop = () => request(t.app).post(`/v1/instances/${instance.id}/stop`).set(org.auth);
    const start = () => request(t.app).post(`/v1/instances/${instance.id}/start`).set(org.auth);

    const running409 = await start();
    expect(running409.status).toBe(409);
    expect(running409.body.detail).toContain("status: running");

    const stopped = await stop();
    expect(stopped.status).toBe(200);
    expect(Instance.parse(stopped.body).status).toBe("stopped");
    const again = await stop();
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ detail: "Instance is not running (status: stopped)." });

    expect((await start()).body.status).toBe("running");
    expect((await get(org, instance.id)).body.status).toBe("running");

    const provisioning = (await create(org, { name: "p" })).body as Instance;
    expect(provisioning.status).toBe("provisioning");
    expect((await request(t.app).post(`/v1/instances/${provisioning.id}/stop`).set(org.auth)).status).toBe(409);
    expect((await request(t.app).post(`/v1/instances/${provisioning.id}/start`).set(org.auth)).status).toBe(409);
  });

  it("keeps the gateway conversation across stop and start", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    await message(org, instance.id, "s").expect(200);
    await request(t.app).post(`/v1/instances/${instance.id}/stop`).set(org.auth).expect(200);
    await request(t.app).post(`/v1/instances/${instance.id}/start`).set(org.auth).expect(200);
    const recall = await request(t.app).post(`/v1/instances/${instance.id}/session/s/responses`).set(org.auth).send({ model: "m", input: "!recall" });
    expect(recall.body.output[0].content[0].text).toBe("hi");
  });
});

describe("messaging needs running", () => {
  it.each([
    ["stopped", "stopped"],
    ["provisioning", "provisioning"],
    ["error", "error"],
  ] as const)("answers 409 when %s, on both routes", async (_label, status) => {
    // A delay, so a forced `provisioning` stays provisioning.
    t = forThisTest(await startEmulator({ provisionMs: 1000 }));
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    await forceState(t.app, instance.id, { status });
    for (const session of [undefined, "alice"]) {
      const res = await message(org, instance.id, session);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ detail: `Instance is not running (status: ${status}).` });
    }
  });
});

describe("delete", () => {
  it("answers 204, then 404 on every instance route; the count drops and the slot is free", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    const key = (
      await request(t.app)
        .post("/v1/keys")
        .set(org.auth)
        .send({ name: "k", instance_ids: [instance.id], permissions: ["read", "interact", "configure"] })
    ).body as { raw_key: string };
    const res = await request(t.app).delete(`/v1/instances/${instance.id}`).set(org.auth);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");

    const base = `/v1/instances/${instance.id}`;
    const calls = [
      request(t.app).get(base),
      request(t.app).get(`${base}/status`),
      request(t.app).patch(base).send({ name: "z" }),
      request(t.app).post(`${base}/start`),
      request(t.app).post(`${base}/stop`),
      request(t.app).delete(base),
      request(t.app).post(`${base}/responses`).send({ model: "m", input: "hi" }),
      request(t.app).post(`${base}/session/s/responses`).send({ model: "m", input: "hi" }),
    ];
    for (const call of calls) expect((await call.set(org.auth)).status).toBe(404);
    // The scoped key that named it cannot see it either.
    expect((await request(t.app).get(base).set(bearer(key.raw_key))).status).toBe(404);

    expect((await request(t.app).get("/v1/instances").set(org.auth)).body).toEqual([]);
    expect((await request(t.app).get("/v1/organization").set(org.auth)).body.instance_count).toBe(0);
    expect((await request(t.app).get("/v1/subscription").set(org.auth)).body.instance_count).toBe(0);
    expect((await create(org, { name: "replacement" })).status).toBe(201);
  });

  it("answers 404 for an unknown id and for another organization's instance, which survives", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const other = await signupOrg(t.app, { name: "other" });
    const instance = await runningInstance(t, org);
    for (const id of ["00000000-0000-4000-8000-000000000000", "nope"]) {
      expect((await request(t.app).delete(`/v1/instances/${id}`).set(org.auth)).status).toBe(404);
    }
    const foreign = await request(t.app).delete(`/v1/instances/${instance.id}`).set(other.auth);
    expect(foreign.status).toBe(404);
    expect(typeof foreign.body.detail).toBe("string");
    expect((await get(org, instance.id)).body.status).toBe("running");
    expect((await request(t.app).get("/v1/organization").set(org.auth)).body.instance_count).toBe(1);
  });

  it("deletes from any state, and destroys the instance's conversations", async () => {
    t = forThisTest(await startEmulator({ provisionMs: 1000 }));
    const org = await signupOrg(t.app, { tier: "crab" });
    const provisioning = (await create(org, { name: "p" })).body as Instance;
    expect((await request(t.app).delete(`/v1/instances/${provisioning.id}`).set(org.auth)).status).toBe(204);

    const instance = await runningInstance(t, org);
    const first = await message(org, instance.id, "s");
    await request(t.app).post(`/v1/instances/${instance.id}/stop`).set(org.auth).expect(200);
    expect((await request(t.app).delete(`/v1/instances/${instance.id}`).set(org.auth)).status).toBe(204);
    const snapshot = (await request(t.app).get("/_emulator/snapshot")).body as { gateway: { responses: Record<string, unknown> } };
    expect(snapshot.gateway.responses[first.body.id as string]).toBeUndefined();
    expect((await request(t.app).get("/v1/instances").set(org.auth)).body).toEqual([]);
  });
});

describe("HEAD", () => {
  it("answers a GET route's HEAD with the GET's status and headers and no body, and logs no body", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    const got = await get(org, instance.id);
    const head = await request(t.app).head(`/v1/instances/${instance.id}`).set(org.auth);
    expect(head.status).toBe(200);
    expect(head.headers["content-type"]).toBe(got.headers["content-type"]);
    expect(head.headers["content-length"]).toBe(got.headers["content-length"]);
    expect(head.text ?? "").toBe("");
    const line = t.emulator.requests.list().find((l) => l.method === "HEAD");
    expect(line?.status).toBe(200);
    const detail = requestDetail(t.emulator.requests, line?.id ?? 0);
    expect(detail?.response.body ?? null).toBeNull();
  });
});
