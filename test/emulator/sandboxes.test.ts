/**
 * Sandboxes over real HTTP: one emulator shared by tests that never see each
 * other. Each sandbox's keys reach only its own organizations, instances,
 * fault rules, clock and journal; removing or resetting one touches nothing
 * else; its journal says exactly what it received.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { createManualClock } from "../../shared/clock.js";
import { providerKey } from "../helpers/emulator.js";
import { waitUntil } from "../helpers/wait.js";

let emulator: Emulator;
let url: string;
const clock = createManualClock();

beforeAll(async () => {
  emulator = await createEmulator({ clock, provisionMs: 60_000, validateResponses: true });
  url = await emulator.listen(0, "127.0.0.1");
});
afterAll(async () => {
  await emulator?.close();
});

type Json = Record<string, unknown>;

async function call(method: string, path: string, options: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${url}${path}`, { method, headers, body: options.body === undefined ? null : JSON.stringify(options.body) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Json & Json[] };
}

interface Created {
  id: string;
  api_key: string;
  organization_id: string;
}

async function sandbox(body: Json = {}): Promise<Created> {
  const res = await call("POST", "/_emulator/sandboxes", { body });
  expect(res.status).toBe(201);
  return res.body as unknown as Created;
}

/** A sandbox whose organization can create instances. */
async function readySandbox(name?: string): Promise<Created> {
  const created = await sandbox(name ? { name } : {});
  const patch = await call("PATCH", "/v1/organization", { key: created.api_key, body: { model_api_keys: { anthropic: providerKey("anthropic") } } });
  expect(patch.status).toBe(200);
  return created;
}

const journal = async (id: string, query = "") =>
  (await call("GET", `/_emulator/sandboxes/${id}/requests${query}`)).body as unknown as { count: number; requests: Json[] };

describe("sandboxes over HTTP", () => {
  it("creates a sandbox with an organization and its key, which the /v1 API accepts", async () => {
    const created = await sandbox({ name: "checkout-tests" });
    expect(created.id).toMatch(/^sbx_[0-9a-f]{24}$/);
    expect(created.api_key).toMatch(/^svc_org_/);
    const org = await call("GET", "/v1/organization", { key: created.api_key });
    expect(org.status).toBe(200);
    expect(org.body.id).toBe(created.organization_id);
    const got = await call("GET", `/_emulator/sandboxes/${created.id}`);
    expect(got.body).toMatchObject({
      id: created.id,
      name: "checkout-tests",
      organization_ids: [created.organization_id],
      instance_count: 0,
      request_count: 1,
    });
    expect((await call("GET", "/_emulator/sandboxes/sbx_000000000000000000000000")).status).toBe(404);
  });

  it("journals each sandbox's own requests, with redacted bodies, filterable and counted", async () => {
    const a = await readySandbox();
    const b = await readySandbox();
    const instance = await call("POST", "/v1/instances", { key: a.api_key, body: { name: "a-agent" } });
    expect(instance.status).toBe(201);
    await call("GET", `/v1/instances/${instance.body.id}`, { key: a.api_key });
    await call("GET", "/v1/instances", { key: b.api_key });

    const all = await journal(a.id);
    expect(all.requests.map((r) => `${r.method} ${r.route} ${r.status}`)).toEqual([
      "PATCH updateOrganization 200",
      "POST createInstance 201",
      "GET getInstance 200",
    ]);
    expect(all.count).toBe(3);
    // The provider key sent is never kept in clear.
    expect(JSON.stringify(all.requests[0]!.body)).not.toContain(providerKey("anthropic"));
    expect(all.requests[1]!.body).toEqual({ name: "a-agent" });
    expect((await journal(a.id, `?instance_id=${instance.body.id}`)).count).toBe(1);
    expect((await journal(a.id, "?method=post&status=201")).requests.map((r) => r.route)).toEqual(["createInstance"]);
    expect((await journal(a.id, "?route=listInstances")).count).toBe(0);
    expect((await journal(b.id)).requests.map((r) => r.route)).toEqual(["updateOrganization", "listInstances"]);
    expect((await call("GET", `/_emulator/sandboxes/${a.id}/requests?status=abc`)).status).toBe(422);
  });

  it("keeps fault rules to their sandbox", async () => {
    const a = await readySandbox();
    const b = await readySandbox();
    const rule = await call("POST", `/_emulator/sandboxes/${a.id}/faults`, { body: { target: "api", path: "/v1/instances", method: "POST", status: 503 } });
    expect(rule.status).toBe(201);
    expect((await call("POST", "/v1/instances", { key: b.api_key, body: { name: "b" } })).status).toBe(201);
    expect((await call("POST", "/v1/instances", { key: a.api_key, body: { name: "a" } })).status).toBe(503);
    // Not a sandbox's request: the rule does not fire outside it either.
    const signup = await call("POST", "/v1/organization/signup", { body: { name: "outside" } });
    const outsideKey = signup.body.api_key as string;
    await call("PATCH", "/v1/organization", { key: outsideKey, body: { model_api_keys: { anthropic: providerKey("anthropic") } } });
    expect((await call("POST", "/v1/instances", { key: outsideKey, body: { name: "o" } })).status).toBe(201);
  });

  it("moves one sandbox's clock: its provisioning completes and its keys expire, another's do not", async () => {
    const a = await readySandbox();
    const b = await readySandbox();
    const ia = await call("POST", "/v1/instances", { key: a.api_key, body: { name: "a" } });
    const ib = await call("POST", "/v1/instances", { key: b.api_key, body: { name: "b" } });
    expect([ia.body.status, ib.body.status]).toEqual(["provisioning", "provisioning"]);
    const soon = new Date(clock.now() + 30_000).toISOString();
    const key = await call("POST", "/v1/keys", { key: a.api_key, body: { name: "k", instance_ids: [ia.body.id], permissions: ["read"], expires_at: soon } });
    expect(key.status).toBe(201);

    const moved = await call("POST", `/_emulator/sandboxes/${a.id}/clock`, { body: { advance_ms: 60_000 } });
    expect(moved.status).toBe(200);
    expect(moved.body.offset_ms).toBe(60_000);
    expect(moved.body.happened).toEqual([
      { kind: "key_expired", id: key.body.id, at: soon },
      { kind: "instance_running", id: ia.body.id, at: new Date(clock.now() + 60_000).toISOString() },
    ]);
    expect((await call("GET", `/v1/instances/${ia.body.id}`, { key: a.api_key })).body.status).toBe("running");
    expect((await call("GET", `/v1/instances/${ia.body.id}`, { key: key.body.raw_key as string })).status).toBe(403);
    expect((await call("GET", `/v1/instances/${ib.body.id}`, { key: b.api_key })).body.status).toBe("provisioning");
    // Only forward.
    expect((await call("POST", `/_emulator/sandboxes/${a.id}/clock`, { body: { set: new Date(clock.now()).toISOString() } })).status).toBe(409);
  });

  it("places a signup in a sandbox by the X-Emulator-Sandbox header; an unknown one is 404", async () => {
    const a = await sandbox();
    const signup = await call("POST", "/v1/organization/signup", { body: { name: "second" }, headers: { "x-emulator-sandbox": a.id } });
    expect(signup.status).toBe(201);
    expect((await call("GET", `/_emulator/sandboxes/${a.id}`)).body.organization_ids).toEqual([a.organization_id, (signup.body.organization as Json).id]);
    expect((await journal(a.id)).requests.map((r) => r.route)).toEqual(["signup"]);
    const unknown = await call("POST", "/v1/organization/signup", { body: { name: "x" }, headers: { "x-emulator-sandbox": "sbx_ffffffffffffffffffffffff" } });
    expect(unknown.status).toBe(404);
  });

  it("lists the requests that matched nothing, with the closest route", async () => {
    const a = await sandbox();
    expect((await call("GET", "/v1/instancez", { key: a.api_key })).status).toBe(404);
    expect((await call("DELETE", "/v1/organization", { key: a.api_key })).status).toBe(405);
    const unmatched = (await call("GET", `/_emulator/sandboxes/${a.id}/unmatched`)).body as unknown as Json[];
    expect(unmatched.map(({ method, path, reason, closest_route }) => ({ method, path, reason, closest_route }))).toEqual([
      { method: "GET", path: "/v1/instancez", reason: "unknown_route", closest_route: "GET /v1/instances" },
      { method: "DELETE", path: "/v1/organization", reason: "wrong_method", closest_route: "GET /v1/organization" },
    ]);
    // An unknown key belongs to no sandbox: it is listed outside them.
    expect((await call("GET", "/v1/instances", { key: "svc_org_not-a-key-of-anyone" })).status).toBe(401);
    const outside = (await call("GET", "/_emulator/unmatched")).body as unknown as Json[];
    expect(outside.at(-1)).toMatchObject({ method: "GET", path: "/v1/instances", reason: "unknown_key", closest_route: "GET /v1/instances" });
  });

  it("removing a sandbox removes what it holds and touches nothing else; its key stops working", async () => {
    const a = await readySandbox();
    const b = await readySandbox();
    const ia = await call("POST", "/v1/instances", { key: a.api_key, body: { name: "a" } });
    await call("POST", "/v1/keys", { key: a.api_key, body: { name: "k", instance_ids: [ia.body.id], permissions: ["read"] } });
    const ib = await call("POST", "/v1/instances", { key: b.api_key, body: { name: "b" } });
    expect((await call("DELETE", `/_emulator/sandboxes/${a.id}`)).status).toBe(204);
    expect((await call("GET", "/v1/organization", { key: a.api_key })).status).toBe(401);
    expect((await call("GET", `/_emulator/sandboxes/${a.id}`)).status).toBe(404);
    expect((await call("GET", `/v1/instances/${ib.body.id}`, { key: b.api_key })).status).toBe(200);
    const state = (await call("GET", "/_emulator/snapshot")).body;
    expect(Object.keys(state.organizations as Json)).not.toContain(a.organization_id);
    expect(Object.keys(state.instances as Json)).not.toContain(ia.body.id);
    // What is left is a whole state: it imports back as it is.
    expect((await call("PUT", "/_emulator/snapshot", { body: state })).status).toBe(204);
    expect((await call("GET", `/v1/instances/${ib.body.id}`, { key: b.api_key })).status).toBe(200);
  });

  it("resetting a sandbox empties it back to its organization and key, with its journal", async () => {
    const a = await readySandbox();
    const b = await readySandbox();
    await call("POST", "/v1/instances", { key: a.api_key, body: { name: "a" } });
    const ib = await call("POST", "/v1/instances", { key: b.api_key, body: { name: "b" } });
    const reset = await call("POST", `/_emulator/sandboxes/${a.id}/reset`);
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ instance_count: 0, request_count: 0, organization_ids: [a.organization_id] });
    expect((await call("GET", "/v1/instances", { key: a.api_key })).body).toEqual([]);
    expect((await call("GET", "/v1/organization", { key: a.api_key })).body.model_providers_configured ?? []).toEqual([]);
    expect((await call("GET", `/v1/instances/${ib.body.id}`, { key: b.api_key })).status).toBe(200);
  });
});

describe("an emulator in a long test process", () => {
  // On Node 20 every AsyncLocalStorage ever entered stays in one process-wide list, and each
  // new promise gets a slot per entry: a process that creates an emulator per test, each
  // serving sandboxed requests, got slower with every one (a sixth of a test worker's CPU).
  const slotsOnANewPromise = () => Object.getOwnPropertySymbols(new Promise(() => {})).filter((s) => s.description === "kResourceStore").length;
  // Node 24's AsyncContextFrame keeps no such list (nothing to leak, nothing to count there).
  const tracksEachStore = (() => {
    const before = slotsOnANewPromise();
    const probe = new AsyncLocalStorage<number>();
    probe.enterWith(1);
    const tracked = slotsOnANewPromise() > before;
    probe.disable();
    return tracked;
  })();

  // Run on every Node (a skip fails CI): where nothing is tracked, the counts stay level throughout.
  it("leaves no context tracking behind once closed, and none for requests outside sandboxes", async () => {
    const before = slotsOnANewPromise();
    for (let i = 0; i < 3; i++) {
      const other = await createEmulator({ provisionMs: 0 });
      const base = await other.listen(0, "127.0.0.1");
      // Outside any sandbox: nothing to track.
      expect((await fetch(`${base}/_emulator/health`)).status).toBe(200);
      expect(slotsOnANewPromise()).toBe(before);
      const sandboxed = await fetch(`${base}/_emulator/sandboxes`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(sandboxed.status).toBe(201);
      const created = (await sandboxed.json()) as Created;
      const org = await fetch(`${base}/v1/organization`, { headers: { authorization: `Bearer ${created.api_key}` } });
      expect(org.status).toBe(200);
      expect(slotsOnANewPromise()).toBe(before + (tracksEachStore ? 1 : 0));
      // A sandbox's timer still pending at the close (a fault's latency, a model's wait) fires
      // after it, in the sandbox's time, without tracking anything again.
      let firedAt: number | undefined;
      const { sandboxClocks, clock } = other.env;
      sandboxClocks.run(created.id, () => clock.setTimeout(() => (firedAt = clock.now()), 5));
      await other.close();
      await waitUntil(() => firedAt !== undefined, "the sandbox's timer");
      expect(sandboxClocks.run(created.id, () => clock.now())).toBeGreaterThanOrEqual(firedAt!);
    }
    expect(slotsOnANewPromise()).toBe(before);
  });
});
