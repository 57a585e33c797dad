/**
 * The typed client against the emulator listening on a real loopback port:
 * the path every daemon call takes.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { request as undiciRequest } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceClient, ServiceError, type ServiceClient } from "../../shared/client/index.js";
import { outputTextOf } from "../../shared/schemas/responses.js";
import { deadPort, providerKey, startEmulator, type TestEmulator } from "../helpers/emulator.js";

let t: TestEmulator;
let baseUrl: string;
let anonymous: ServiceClient;

beforeAll(async () => {
  t = await startEmulator({ provisionMs: 1000 });
  baseUrl = await t.emulator.listen(0, "127.0.0.1");
  anonymous = createServiceClient({ baseUrl });
});
afterAll(async () => {
  await t?.close();
});

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ServiceError) return error;
    throw error;
  }
  throw new Error("expected the call to fail");
}

describe("typed client over a real port", () => {
  it("runs the whole first-day flow: signup, provider key, instance, key, messages, stream", async () => {
    const signup = await anonymous.signup({ body: { name: "client-co" } });
    expect(signup.organization.subscription_tier).toBe("shrimp");
    const api = anonymous.withKey(signup.api_key);

    const org = await api.updateOrganization({ body: { model_api_keys: { anthropic: providerKey("anthropic") } } });
    expect(org.model_providers).toEqual(["anthropic"]);

    const created = await api.createInstance({ body: { name: "agent" } });
    expect(created.status).toBe("provisioning");
    const early = await failure(api.createResponse({ instance_id: created.id, body: { model: "m", input: "hi" } }));
    expect(early.status).toBe(409);
    expect(early.detail).toBe("Instance is not running (status: provisioning).");
    expect(early.retryable).toBe(false);

    t.clock.advance(1000);
    expect((await api.getInstanceStatus({ instance_id: created.id })).status).toBe("running");
    expect((await api.listInstances()).map((i) => i.id)).toEqual([created.id]);

    const key = await api.createKey({ body: { name: "bot", instance_ids: [created.id], permissions: ["read", "interact"] } });
    const bot = api.withKey(key.raw_key);
    const first = await bot.createSessionResponse({ instance_id: created.id, session_id: "alice", body: { model: "m", input: "remember me" } });
    expect(outputTextOf(first)).toBe("You said: remember me");
    const recall = await bot.createSessionResponse({ instance_id: created.id, session_id: "alice", body: { model: "m", input: "!recall" } });
    expect(outputTextOf(recall)).toBe("remember me");
    const chained = await bot.createResponse({ instance_id: created.id, body: { model: "m", input: "!recall", previous_response_id: first.id } });
    expect(outputTextOf(chained)).toBe("remember me");

    let text = "";
    let completed = "";
    for await (const event of bot.streamResponse({ instance_id: created.id, session_id: "alice", body: { model: "m", input: "streamed hello" } })) {
      if (event.type === "response.output_text.delta") text += event.delta;
      if (event.type === "response.completed") completed = outputTextOf(event.response);
    }
    expect(text).toBe("You said: streamed hello");
    expect(completed).toBe(text);

    // The scoped key may read and talk, nothing else.
    const denied = await failure(bot.stopInstance({ instance_id: created.id }));
    expect(denied.status).toBe(403);
    expect((await failure(bot.listKeys())).status).toBe(403);

    const keys = await api.listKeys();
    expect(keys).toHaveLength(1);
    expect(keys[0]!.last_used_at).not.toBeNull();
    expect(JSON.stringify(keys)).not.toContain(key.raw_key);

    await api.revokeKey({ key_id: key.id });
    expect((await failure(bot.getInstance({ instance_id: created.id }))).status).toBe(403);

    await api.deleteInstance({ instance_id: created.id });
    expect((await failure(api.getInstance({ instance_id: created.id }))).status).toBe(404);
    expect((await api.getSubscription()).instance_count).toBe(0);
  });

  it("follows a billing URL to the page the emulator serves at its own address", async () => {
    const signup = await anonymous.signup({ body: { name: "billing-co" } });
    const api = anonymous.withKey(signup.api_key);
    const { url } = await api.createCheckout({ body: { tier: "lobster" } });
    expect(url.startsWith(`${baseUrl}/`)).toBe(true);
    const page = await undiciRequest(url);
    expect(page.statusCode).toBe(200);
    expect(String(page.headers["content-type"])).toMatch(/^text\/html/);
    expect(await page.body.text()).toContain("billing-co");
    const form = await undiciRequest(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "tier=lobster" });
    expect(form.statusCode).toBe(303);
    await form.body.dump();
    expect(await api.getSubscription()).toEqual({ tier: "lobster", instance_limit: 500, instance_count: 0 });
  });

  it("turns errors into ServiceError with the contract's detail", async () => {
    const noKey = await failure(anonymous.getOrganization());
    expect(noKey.status).toBe(401);
    expect(typeof noKey.detail).toBe("string");

    const invalid = await failure(anonymous.signup({ body: { name: "" } }));
    expect(invalid.status).toBe(422);
    expect(Array.isArray(invalid.detail)).toBe(true);
    expect(invalid.message).toMatch(/^HTTP 422: body\.name: /);

    const unreachable = createServiceClient({ baseUrl: `http://127.0.0.1:${await deadPort()}` });
    const down = await failure(unreachable.getOrganization());
    expect(down.kind).toBe("network");
    expect(down.status).toBeUndefined();
    expect(down.retryable).toBe(true);
  });

  it("passes a gateway 4xx through, with its OpenAI-style code", async () => {
    const signup = await anonymous.signup({ body: { name: "fail-co" } });
    const api = anonymous.withKey(signup.api_key);
    await api.updateOrganization({ body: { model_api_keys: { anthropic: "k" } } });
    const instance = await api.createInstance({ body: { name: "agent" } });
    t.clock.advance(1000);
    const limited = await failure(api.createResponse({ instance_id: instance.id, body: { model: "m", input: "!fail 429" } }));
    expect(limited.status).toBe(429);
    expect(limited.code).toBe("simulated_failure");
    const unknown = await failure(api.createResponse({ instance_id: instance.id, body: { model: "m", input: "x", previous_response_id: "resp_nope" } }));
    expect(unknown.status).toBe(400);
    expect(unknown.code).toBe("previous_response_not_found");
  });
});

describe("a base URL with a path (the service behind a reverse proxy's prefix)", () => {
  it("sends every call under the prefix, with its parameters encoded and its query, once whatever the trailing slashes", async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      req.resume();
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const api = createServiceClient({ baseUrl: `${root}/svc/`, apiKey: "k1" });
      await api.getInstance({ instance_id: "inst 1/a" });
      await api.listFiles({ instance_id: "i2", query: { path: "a b" } });
      await createServiceClient({ baseUrl: root, apiKey: "k2" }).getInstance({ instance_id: "i3" });
      expect(seen).toEqual([
        "GET /svc/v1/instances/inst%201%2Fa Bearer k1",
        "GET /svc/v1/instances/i2/files?path=a+b Bearer k1",
        "GET /v1/instances/i3 Bearer k2",
      ]);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
