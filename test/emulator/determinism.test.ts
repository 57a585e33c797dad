import request from "supertest";
import { describe, expect, it, onTestFinished } from "vitest";
import { startEmulator } from "../helpers/emulator.js";

/** The same calls in the same order; returns every id and secret the emulator minted. */
async function script(seed: string | undefined): Promise<Record<string, unknown>> {
  const t = await startEmulator(seed === undefined ? {} : { seed });
  onTestFinished(() => t.close());
  const signup = await request(t.app).post("/v1/organization/signup").send({ name: "acme" }).expect(201);
  const auth = { Authorization: `Bearer ${signup.body.api_key}` };
  await request(t.app)
    .patch("/v1/organization")
    .set(auth)
    .send({ model_api_keys: { anthropic: "k" } })
    .expect(200);
  const instance = await request(t.app).post("/v1/instances").set(auth).send({ name: "a" }).expect(201);
  const key = await request(t.app)
    .post("/v1/keys")
    .set(auth)
    .send({ name: "k", instance_ids: [instance.body.id], permissions: ["interact"] })
    .expect(201);
  const reply = await request(t.app)
    .post(`/v1/instances/${instance.body.id}/session/s/responses`)
    .set({ Authorization: `Bearer ${key.body.raw_key}` })
    .send({ model: "m", input: "hi" })
    .expect(200);
  const portal = await request(t.app).post("/v1/subscription/portal").set(auth).expect(200);
  return {
    api_key: signup.body.api_key,
    organization_id: signup.body.organization.id,
    instance_id: instance.body.id,
    sandbox_id: instance.body.sandbox_id,
    key_id: key.body.id,
    raw_key: key.body.raw_key,
    response_id: reply.body.id,
    message_id: reply.body.output[0].id,
    billing_path: new URL(portal.body.url as string).pathname,
    created_at: instance.body.created_at,
  };
}

describe("determinism", () => {
  it("two emulators with the same seed and clock mint identical ids and keys", async () => {
    const a = await script("seed-1");
    const b = await script("seed-1");
    expect(a).toEqual(b);
    expect(a.raw_key).toMatch(/^svc_sk_[0-9a-f]{64}$/);
  });

  it("another seed, or none, mints others", async () => {
    const a = await script("seed-1");
    const b = await script("seed-2");
    const c = await script(undefined);
    for (const field of ["api_key", "organization_id", "instance_id", "key_id", "raw_key", "response_id"]) {
      expect(a[field]).not.toEqual(b[field]);
      expect(a[field]).not.toEqual(c[field]);
    }
  });
});
