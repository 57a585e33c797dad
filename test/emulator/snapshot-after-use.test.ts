/**
 * The snapshot after ordinary use (issue: a state that had passed through the
 * skill routes could no longer be exported): sign up, set a provider key,
 * create an instance, install every listed skill, install one that needs
 * variables with them, disable it and uninstall another. The export must
 * still answer, and import back to the same state.
 */
import request from "supertest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { bearer, providerKey, snapshot, startEmulator, type TestEmulator } from "../helpers/emulator.js";

let t: TestEmulator;
beforeAll(async () => {
  t = await startEmulator();
});
afterAll(async () => {
  await t?.close();
});

it("exports, and round-trips, after skills were installed, disabled and uninstalled", async () => {
  const signup = await request(t.app).post("/v1/organization/signup").send({ name: "acme" });
  expect(signup.status).toBe(201);
  const auth = bearer(signup.body.api_key as string);
  expect(
    (
      await request(t.app)
        .patch("/v1/organization")
        .set(auth)
        .send({ model_api_keys: { anthropic: providerKey("anthropic") } })
    ).status,
  ).toBe(200);
  const created = await request(t.app).post("/v1/instances").set(auth).send({ name: "agent" });
  expect(created.status).toBe(201);
  const base = `/v1/instances/${created.body.id as string}/skills`;

  const listed = await request(t.app).get(base).set(auth);
  expect(listed.status).toBe(200);
  const names = (listed.body as { name: string }[]).map((skill) => skill.name);
  expect(names.length).toBeGreaterThan(2);
  for (const name of names) expect((await request(t.app).post(`${base}/install`).set(auth).send({ slug: name })).status).toBe(200);
  const install = await request(t.app)
    .post(`${base}/install`)
    .set(auth)
    .send({ slug: "weather", env: { WEATHER_API_KEY: "weather-secret-1" } });
  expect(install.status).toBe(200);
  expect((await request(t.app).patch(`${base}/weather`).set(auth).send({ enabled: false })).status).toBe(204);
  const other = names.find((name) => name !== "weather")!;
  expect((await request(t.app).delete(`${base}/${other}`).set(auth)).status).toBe(204);

  const exported = await request(t.app).get("/_emulator/snapshot");
  expect(exported.status, exported.text).toBe(200);
  // Still answers a second time, and after the state is imported back.
  expect((await request(t.app).get("/_emulator/snapshot")).status).toBe(200);
  expect((await request(t.app).post("/_emulator/reset")).status).toBe(204);
  expect((await request(t.app).put("/_emulator/snapshot").send(exported.body)).status).toBe(204);
  expect(await snapshot(t.app)).toEqual(exported.body);
});
