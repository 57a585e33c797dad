/**
 * A sandbox's clock drives its instances' model too: `!sleep` waits on the
 * sandbox's time, so moving that clock answers at once, and another
 * sandbox's move does not.
 */
import request from "supertest";
import { expect, it } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { bearer, providerKey } from "../helpers/emulator.js";

let emulator: Emulator | undefined;

async function sandboxInstance(e: Emulator) {
  const sandbox = await e.sandboxes.create();
  await request(e.app)
    .patch("/v1/organization")
    .set(bearer(sandbox.apiKey))
    .send({ model_api_keys: { anthropic: providerKey("anthropic") } })
    .expect(200);
  const instance = await request(e.app).post("/v1/instances").set(bearer(sandbox.apiKey)).send({ name: "a" }).expect(201);
  return { sandbox, instanceId: (instance.body as { id: string }).id };
}

it("!sleep in a sandbox ends when that sandbox's clock moves past it, not another's", async () => {
  // The real clock as base: an hour's sleep would never end by itself within the test.
  emulator = forThisTest(await createEmulator({ provisionMs: 0 }));
  const a = await sandboxInstance(emulator);
  const b = await sandboxInstance(emulator);
  let answered = false;
  const asked = request(emulator.app)
    .post(`/v1/instances/${a.instanceId}/responses`)
    .set(bearer(a.sandbox.apiKey))
    .send({ model: "m", input: "!sleep 600000" })
    .then((res) => {
      answered = true;
      return res;
    });
  // The turn has reached the model: its sleep is one of the sandbox's timers.
  const clocks = emulator.env.sandboxClocks;
  await expect.poll(() => clocks.pending(a.sandbox.id)).toBe(1);
  await b.sandbox.advance(600_000);
  expect(clocks.pending(a.sandbox.id)).toBe(1);
  expect(answered).toBe(false);
  await a.sandbox.advance(600_000);
  const res = await asked;
  expect(res.status).toBe(200);
});
