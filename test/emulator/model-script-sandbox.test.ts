/**
 * Model scripts per sandbox: two tests sharing one emulator each script the
 * model for their own sandbox and never see the other's answers; an
 * instance's own script comes first, the global one last; a reset or a
 * removal takes the sandbox's script with it. Driven by the official
 * `openai` SDK over real HTTP.
 */
import OpenAI from "openai";
import request from "supertest";
import { beforeEach, describe, expect, it } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import type { ModelScriptInput } from "../../emulator/gateway/script/index.js";
import { bearer, providerKey, startEmulator, type TestEmulator } from "../helpers/emulator.js";

const answering = (text: string): ModelScriptInput => ({ rules: [{ name: `says ${text}`, match: { contains: "hello" }, answer: { text } }] });

let t: TestEmulator;
let url: string;
beforeEach(async () => {
  t = forThisTest(await startEmulator({ modelScript: answering("from the global script") }));
  url = await t.emulator.listen();
});

interface SandboxSetup {
  id: string;
  apiKey: string;
  instanceId: string;
  client: OpenAI;
}

/** A sandbox over HTTP, with a provider key and a running instance, and an SDK client for it. */
async function sandboxWithInstance(name: string): Promise<SandboxSetup> {
  const created = await request(t.app).post("/_emulator/sandboxes").send({ name });
  expect(created.status).toBe(201);
  const { id, api_key: apiKey } = created.body as { id: string; api_key: string };
  const keys = await request(t.app)
    .patch("/v1/organization")
    .set(bearer(apiKey))
    .send({ model_api_keys: { anthropic: providerKey("anthropic") } });
  expect(keys.status).toBe(200);
  const instance = await request(t.app)
    .post("/v1/instances")
    .set(bearer(apiKey))
    .send({ name: `${name}-agent` });
  expect(instance.status).toBe(201);
  const instanceId = (instance.body as { id: string }).id;
  return { id, apiKey, instanceId, client: new OpenAI({ apiKey, baseURL: `${url}/v1/instances/${instanceId}`, maxRetries: 0 }) };
}

const say = async (client: OpenAI, input = "hello there") => (await client.responses.create({ model: "agent", input })).output_text;

describe("model scripts per sandbox", () => {
  it("answer only the sandbox's own instances, before the global script", async () => {
    const a = await sandboxWithInstance("a");
    const b = await sandboxWithInstance("b");
    const c = await sandboxWithInstance("c");
    const setA = await request(t.app).put(`/_emulator/sandboxes/${a.id}/model-script`).send(answering("from a"));
    expect(setA.status).toBe(200);
    expect(setA.body).toMatchObject({ scope: "sandbox", sandbox_id: a.id, hits: { "says from a": 0 } });
    t.emulator.sandboxes.get(b.id, b.apiKey).setModelScript(answering("from b"));

    expect(await say(a.client)).toBe("from a");
    expect(await say(b.client)).toBe("from b");
    // No script of its own: the global script answers, and neither sandbox's.
    expect(await say(c.client)).toBe("from the global script");
    // Unmatched input falls through to the echo, as without scripts.
    expect(await say(a.client, "goodbye")).toBe("You said: goodbye");

    const viewA = await request(t.app).get(`/_emulator/sandboxes/${a.id}/model-script`);
    expect(viewA.body.hits).toEqual({ "says from a": 1 });
    const viewB = await request(t.app).get(`/_emulator/sandboxes/${b.id}/model-script`);
    expect(viewB.body.hits).toEqual({ "says from b": 1 });
  });

  it("comes after an instance's own script", async () => {
    const a = await sandboxWithInstance("a");
    await request(t.app).put(`/_emulator/sandboxes/${a.id}/model-script`).send(answering("from the sandbox")).expect(200);
    await request(t.app).put(`/_emulator/instances/${a.instanceId}/model-script`).send(answering("from the instance")).expect(200);
    expect(await say(a.client)).toBe("from the instance");
    await request(t.app).delete(`/_emulator/instances/${a.instanceId}/model-script`).expect(204);
    expect(await say(a.client)).toBe("from the sandbox");
    await request(t.app).delete(`/_emulator/sandboxes/${a.id}/model-script`).expect(204);
    expect(await say(a.client)).toBe("from the global script");
  });

  it("goes with the sandbox's reset and removal", async () => {
    const a = await sandboxWithInstance("a");
    await request(t.app).put(`/_emulator/sandboxes/${a.id}/model-script`).send(answering("from a")).expect(200);
    await request(t.app).post(`/_emulator/sandboxes/${a.id}/reset`).expect(200);
    expect((await request(t.app).get(`/_emulator/sandboxes/${a.id}/model-script`)).body.script).toBeNull();

    const again = await sandboxWithInstance("again");
    await request(t.app).put(`/_emulator/sandboxes/${again.id}/model-script`).send(answering("from again")).expect(200);
    expect(await say(again.client)).toBe("from again");
    await request(t.app).delete(`/_emulator/sandboxes/${again.id}`).expect(204);
    expect((await request(t.app).get(`/_emulator/sandboxes/${again.id}/model-script`)).status).toBe(404);
    expect((await request(t.app).put(`/_emulator/sandboxes/${again.id}/model-script`).send(answering("x"))).status).toBe(404);
  });

  it("refuses a bad script whole, naming the place, and keeps the one in force", async () => {
    const a = await sandboxWithInstance("a");
    await request(t.app).put(`/_emulator/sandboxes/${a.id}/model-script`).send(answering("from a")).expect(200);
    const bad = await request(t.app)
      .put(`/_emulator/sandboxes/${a.id}/model-script`)
      .send({ rules: [{ match: { regex: "(" }, answer: { text: "never" } }] });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(["body", "rules", 0, "match", "regex"]);
    expect(() => t.emulator.sandboxes.get(a.id, a.apiKey).setModelScript({ rules: [{ match: { regex: "(" }, answer: { text: "never" } }] })).toThrow(
      /\$\.rules\[0\]\.match\.regex/,
    );
    expect(await say(a.client)).toBe("from a");
  });
});
