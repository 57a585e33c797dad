import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { describe, expect, it } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { Organization, SignupResponse, Subscription } from "../../shared/schemas/organization.js";
import { bearer, providerKey, runningInstance, signupOrg, startEmulator, tempDir, type TestEmulator } from "../helpers/emulator.js";

let t: TestEmulator;

const ORG_KEY = /^svc_org_[0-9a-f]{64}$/;

describe("signup", () => {
  it("answers 201 with an organization key and a shrimp organization, without any Authorization header", async () => {
    t = forThisTest(await startEmulator());
    const res = await request(t.app).post("/v1/organization/signup").send({ name: "acme" });
    expect(res.status).toBe(201);
    const body = SignupResponse.parse(res.body);
    expect(body.api_key).toMatch(ORG_KEY);
    expect(body.organization).toMatchObject({
      name: "acme",
      model_providers: [],
      subscription_tier: "shrimp",
      instance_limit: 1,
      instance_count: 0,
      created_at: new Date(t.clock.now()).toISOString(),
    });
    // The key it returned works.
    const me = await request(t.app).get("/v1/organization").set(bearer(body.api_key));
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(body.organization.id);
  });

  it("ignores an Authorization header, even a bogus one", async () => {
    t = forThisTest(await startEmulator());
    const res = await request(t.app).post("/v1/organization/signup").set("Authorization", "Basic x").send({ name: "acme" });
    expect(res.status).toBe(201);
  });

  it("gives every signup its own organization and key", async () => {
    t = forThisTest(await startEmulator());
    const a = await signupOrg(t.app, { name: "a" });
    const b = await signupOrg(t.app, { name: "b" });
    expect(a.organization.id).not.toBe(b.organization.id);
    expect(a.apiKey).not.toBe(b.apiKey);
    const seenByB = await request(t.app).get("/v1/organization").set(b.auth);
    expect(seenByB.body.name).toBe("b");
  });

  it.each([
    ["empty name", { name: "" }],
    ["129 characters", { name: "x".repeat(129) }],
    ["missing name", {}],
    ["a number", { name: 42 }],
    ["an unknown field", { name: "acme", plan: "lobster" }],
  ])("refuses %s with 422 and a validation detail", async (_label, body) => {
    t = forThisTest(await startEmulator());
    const res = await request(t.app).post("/v1/organization/signup").send(body);
    expect(res.status).toBe(422);
    expect(Array.isArray(res.body.detail)).toBe(true);
    expect(res.body.detail[0].loc[0]).toBe("body");
    const count = Object.keys(((await request(t.app).get("/_emulator/snapshot")).body as { organizations: object }).organizations).length;
    expect(count).toBe(0);
  });

  it("accepts a name of exactly 128 and of 1 character", async () => {
    t = forThisTest(await startEmulator());
    expect(
      (
        await request(t.app)
          .post("/v1/organization/signup")
          .send({ name: "x".repeat(128) })
      ).status,
    ).toBe(201);
    expect((await request(t.app).post("/v1/organization/signup").send({ name: "x" })).status).toBe(201);
  });
});

describe("organization", () => {
  it("GET answers the caller's organization", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app, { providers: [] });
    const res = await request(t.app).get("/v1/organization").set(org.auth);
    expect(res.status).toBe(200);
    expect(Organization.parse(res.body)).toEqual(org.organization);
  });

  it("PATCH renames, within 1-128 characters", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app, { providers: [] });
    t.clock.advance(60_000);
    const res = await request(t.app).patch("/v1/organization").set(org.auth).send({ name: "renamed" });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("renamed");
    expect(res.body.updated_at).toBe(new Date(t.clock.now()).toISOString());
    expect(res.body.created_at).toBe(org.organization.created_at);
    expect((await request(t.app).get("/v1/organization").set(org.auth)).body.name).toBe("renamed");
    expect((await request(t.app).patch("/v1/organization").set(org.auth).send({ name: "" })).status).toBe(422);
    expect(
      (
        await request(t.app)
          .patch("/v1/organization")
          .set(org.auth)
          .send({ name: "y".repeat(129) })
      ).status,
    ).toBe(422);
    expect((await request(t.app).get("/v1/organization").set(org.auth)).body.name).toBe("renamed");
  });

  it("PATCH merges model_api_keys; an empty string removes that provider", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app, { providers: [] });
    const patch = (keys: Record<string, string>) => request(t.app).patch("/v1/organization").set(org.auth).send({ model_api_keys: keys });

    expect((await patch({ anthropic: providerKey("anthropic") })).body.model_providers).toEqual(["anthropic"]);
    expect((await patch({ openai: providerKey("openai") })).body.model_providers).toEqual(["anthropic", "openai"]);
    expect((await patch({ gemini: providerKey("gemini"), anthropic: "" })).body.model_providers).toEqual(["openai", "gemini"]);
    // Removing a provider that has no key is not an error.
    expect((await patch({ anthropic: "" })).body.model_providers).toEqual(["openai", "gemini"]);
    // Renaming alone keeps the keys.
    const renamed = await request(t.app).patch("/v1/organization").set(org.auth).send({ name: "n" });
    expect(renamed.body.model_providers).toEqual(["openai", "gemini"]);
    expect((await request(t.app).get("/v1/organization").set(org.auth)).body.model_providers).toEqual(["openai", "gemini"]);
  });

  it("PATCH refuses an unknown provider or a non-string key with 422 and changes nothing", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    for (const keys of [{ mistral: "k" }, { anthropic: 5 }, "anthropic"]) {
      const res = await request(t.app).patch("/v1/organization").set(org.auth).send({ model_api_keys: keys });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc.slice(0, 2)).toEqual(["body", "model_api_keys"]);
    }
    expect((await request(t.app).get("/v1/organization").set(org.auth)).body.model_providers).toEqual(["anthropic"]);
  });

  it("never returns a provider key: not in any response, not in the snapshot, not in the state file", async () => {
    const dir = tempDir();
    try {
      t = forThisTest(await startEmulator({ dataDir: dir.path, flushMs: 1 }));
      const secrets = [providerKey("anthropic"), providerKey("openai"), providerKey("gemini")];
      const texts: string[] = [];
      const org = await signupOrg(t.app, { providers: ["anthropic", "openai", "gemini"], tier: "crab" });
      texts.push(JSON.stringify(org.organization));
      const instance = await runningInstance(t, org, { model_provider: "openai" });
      texts.push(JSON.stringify(instance));
      for (const path of ["/v1/organization", "/v1/subscription", "/v1/instances", `/v1/instances/${instance.id}`, "/v1/keys"]) {
        texts.push((await request(t.app).get(path).set(org.auth)).text);
      }
      texts.push(
        (
          await request(t.app)
            .patch("/v1/organization")
            .set(org.auth)
            .send({ model_api_keys: { gemini: "" } })
        ).text,
      );
      texts.push((await request(t.app).get("/_emulator/snapshot")).text);
      texts.push((await request(t.app).get("/_emulator/requests")).text);
      await t.emulator.store.flush();
      const file = readFileSync(join(dir.path, "state.json"), "utf8");
      texts.push(file);
      for (const text of texts) {
        for (const secret of secrets) expect(text).not.toContain(secret);
        // The organization key is stored as a hash only.
        expect(text).not.toContain(org.apiKey);
      }
      // The state did record the providers (so the check above looked at a file that has them),
      // and the organization key as its SHA-256.
      expect(file).toContain("openai");
      expect(file).toContain(createHash("sha256").update(org.apiKey).digest("hex"));
    } finally {
      await t.close();
      dir.remove();
    }
  });
});

describe("subscription and billing", () => {
  it("GET /v1/subscription answers tier, limit and count", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const res = await request(t.app).get("/v1/subscription").set(org.auth);
    expect(res.status).toBe(200);
    expect(Subscription.parse(res.body)).toEqual({ tier: "shrimp", instance_limit: 1, instance_count: 0 });
    await runningInstance(t, org);
    expect((await request(t.app).get("/v1/subscription").set(org.auth)).body.instance_count).toBe(1);
  });

  it("checkout refuses a tier that is not crab or lobster with 422", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    for (const body of [{ tier: "shrimp" }, { tier: "whale" }, {}, { tier: "crab", extra: 1 }]) {
      const res = await request(t.app).post("/v1/subscription/checkout").set(org.auth).send(body);
      expect(res.status).toBe(422);
      expect(Array.isArray(res.body.detail)).toBe(true);
    }
  });

  it("a checkout URL opens a page the emulator serves, whose form switches the plan", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app, { name: "Acme <Labs>" });
    const res = await request(t.app).post("/v1/subscription/checkout").set(org.auth).send({ tier: "crab" });
    expect(res.status).toBe(200);
    const url = new URL(res.body.url as string);
    const page = await request(t.app).get(url.pathname);
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.text).toContain("Checkout");
    expect(page.text).toContain("Acme &#60;Labs&#62;"); // the name is escaped
    expect(page.text).toMatch(/<form method="post"[^>]*>.*name="tier" value="crab"/s);

    const switched = await request(t.app).post(url.pathname).type("form").send({ tier: "crab" });
    expect(switched.status).toBe(303);
    expect(switched.headers.location).toBe(url.pathname);
    const sub = await request(t.app).get("/v1/subscription").set(org.auth);
    expect(sub.body).toEqual({ tier: "crab", instance_limit: 10, instance_count: 0 });
    expect((await request(t.app).get(url.pathname)).text).toContain('<strong id="tier">crab</strong>');
  });

  it("a portal URL opens a page too, and the plan it picks is the one the limits follow", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    await runningInstance(t, org);
    // At the shrimp limit.
    expect((await request(t.app).post("/v1/instances").set(org.auth).send({ name: "second" })).status).toBe(402);

    const res = await request(t.app).post("/v1/subscription/portal").set(org.auth);
    expect(res.status).toBe(200);
    const path = new URL(res.body.url as string).pathname;
    const page = await request(t.app).get(path);
    expect(page.status).toBe(200);
    expect(page.text).toContain("Billing portal");
    expect((await request(t.app).post(path).type("form").send({ tier: "lobster" })).status).toBe(303);

    expect((await request(t.app).get("/v1/subscription").set(org.auth)).body).toEqual({ tier: "lobster", instance_limit: 500, instance_count: 1 });
    expect((await request(t.app).get("/v1/organization").set(org.auth)).body.subscription_tier).toBe("lobster");
    expect((await request(t.app).post("/v1/instances").set(org.auth).send({ name: "second" })).status).toBe(201);
  });

  it("the billing page refuses an unknown plan and an unknown session", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const path = new URL((await request(t.app).post("/v1/subscription/portal").set(org.auth)).body.url as string).pathname;
    expect((await request(t.app).post(path).type("form").send({ tier: "whale" })).status).toBe(422);
    expect((await request(t.app).post(path).type("form").send({})).status).toBe(422);
    expect((await request(t.app).get("/v1/subscription").set(org.auth)).body.tier).toBe("shrimp");
    for (const session of ["0123456789abcdef", "constructor", "__proto__"]) {
      expect((await request(t.app).get(`/_emulator/billing/${session}`)).status).toBe(404);
    }
    expect((await request(t.app).post("/_emulator/billing/0123456789abcdef").type("form").send({ tier: "crab" })).status).toBe(404);
  });

  it("each checkout or portal call mints a distinct link", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const a = await request(t.app).post("/v1/subscription/portal").set(org.auth);
    const b = await request(t.app).post("/v1/subscription/portal").set(org.auth);
    expect(a.body.url).not.toBe(b.body.url);
  });
});
