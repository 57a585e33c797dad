import { readFileSync } from "node:fs";
import request from "supertest";
import { describe, expect, it, vi } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import type { z } from "zod";
import { KeyCreated, type ScopedKey } from "../../shared/schemas/keys.js";

type Created = z.infer<typeof KeyCreated>;
import { bearer, runningInstance, signupOrg, startEmulator, tempDir, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator;

const SCOPED_KEY = /^svc_sk_[0-9a-f]{64}$/;

async function setup(): Promise<{ org: TestOrg; instanceId: string }> {
  t = forThisTest(await startEmulator());
  const org = await signupOrg(t.app, { tier: "crab" });
  const instance = await runningInstance(t, org);
  return { org, instanceId: instance.id };
}

const createKey = (org: TestOrg, body: Record<string, unknown>) => request(t.app).post("/v1/keys").set(org.auth).send(body);

describe("create a scoped key", () => {
  it("answers 201 with every scoped-key field and the raw key, once", async () => {
    const { org, instanceId } = await setup();
    const res = await createKey(org, { name: "bot", instance_ids: [instanceId], permissions: ["read", "interact"] });
    expect(res.status).toBe(201);
    const created = KeyCreated.parse(res.body);
    expect(created.raw_key).toMatch(SCOPED_KEY);
    expect(created).toMatchObject({
      name: "bot",
      key_prefix: "svc_sk_",
      is_active: true,
      expires_at: null,
      last_used_at: null,
      created_at: new Date(t.clock.now()).toISOString(),
      instances: [{ instance_id: instanceId, permissions: ["read", "interact"] }],
    });

    // Never again: not in the list, not in get, not in the snapshot.
    for (const path of ["/v1/keys", `/v1/keys/${created.id}`]) {
      const res2 = await request(t.app).get(path).set(org.auth);
      expect(res2.status).toBe(200);
      expect(res2.text).not.toContain(created.raw_key);
      expect(res2.text).not.toContain("raw_key");
    }
    expect((await request(t.app).get("/_emulator/snapshot")).text).not.toContain(created.raw_key);
  });

  it("keeps an expiry, normalised to UTC", async () => {
    const { org, instanceId } = await setup();
    // The manual clock starts at 2026-01-01T00:00:00Z; 03:00+02:00 is an hour later.
    expect(new Date(t.clock.now()).toISOString()).toBe("2026-01-01T00:00:00.000Z");
    const res = await createKey(org, { name: "k", instance_ids: [instanceId], permissions: ["read"], expires_at: "2026-01-01T03:00:00+02:00" });
    expect(res.status).toBe(201);
    expect(res.body.expires_at).toBe("2026-01-01T01:00:00.000Z");
  });

  it("refuses an expiry in the past with 400", async () => {
    const { org, instanceId } = await setup();
    const res = await createKey(org, { name: "k", instance_ids: [instanceId], permissions: ["read"], expires_at: new Date(t.clock.now() - 1).toISOString() });
    expect(res.status).toBe(400);
    expect(typeof res.body.detail).toBe("string");
  });

  it("answers 404 for an instance that is unknown, terminated, or another organization's", async () => {
    const { org, instanceId } = await setup();
    const other = await signupOrg(t.app, { name: "other" });
    const theirs = await runningInstance(t, other);
    const gone = await runningInstance(t, org, { name: "gone" });
    expect((await request(t.app).delete(`/v1/instances/${gone.id}`).set(org.auth)).status).toBe(204);
    for (const id of ["00000000-0000-4000-8000-000000000000", theirs.id, gone.id]) {
      const res = await createKey(org, { name: "k", instance_ids: [instanceId, id], permissions: ["read"] });
      expect(res.status).toBe(404);
      expect(res.body.detail).toContain(id);
    }
    expect((await request(t.app).get("/v1/keys").set(org.auth)).body).toEqual([]);
  });

  it.each([
    ["an unknown permission", { permissions: ["admin"] }],
    ["no permissions", { permissions: [] }],
    ["no instances", { instance_ids: [] }],
    ["an instance id that is not a UUID", { instance_ids: ["abc"] }],
    ["a missing name", { name: undefined }],
    ["a 129-character name", { name: "n".repeat(129) }],
    ["an expiry that is not a datetime", { expires_at: "tomorrow" }],
    ["an unknown field", { scope: "all" }],
  ])("refuses %s with 422", async (_label, change) => {
    const { org, instanceId } = await setup();
    const res = await createKey(org, { name: "k", instance_ids: [instanceId], permissions: ["read"], ...change });
    expect(res.status).toBe(422);
    expect(res.body.detail.length).toBeGreaterThan(0);
    for (const issue of res.body.detail as { loc: unknown[]; msg: unknown; type: unknown }[]) {
      expect(issue.loc[0]).toBe("body");
      expect(typeof issue.msg).toBe("string");
      expect(typeof issue.type).toBe("string");
    }
  });

  it("de-duplicates repeated instances and permissions", async () => {
    const { org, instanceId } = await setup();
    const res = await createKey(org, { name: "k", instance_ids: [instanceId, instanceId], permissions: ["read", "read", "files"] });
    expect(res.status).toBe(201);
    expect(res.body.instances).toEqual([{ instance_id: instanceId, permissions: ["read", "files"] }]);
  });
});

describe("list, get, revoke", () => {
  it("lists every key, revoked and expired ones included with is_active false", async () => {
    const { org, instanceId } = await setup();
    const base = { instance_ids: [instanceId], permissions: ["read"] };
    const live = (await createKey(org, { ...base, name: "live" })).body as Created;
    const revoked = (await createKey(org, { ...base, name: "revoked" })).body as Created;
    const expiring = (await createKey(org, { ...base, name: "expiring", expires_at: new Date(t.clock.now() + 60_000).toISOString() })).body as Created;
    expect((await request(t.app).delete(`/v1/keys/${revoked.id}`).set(org.auth)).status).toBe(204);

    let list = (await request(t.app).get("/v1/keys").set(org.auth)).body as ScopedKey[];
    expect(list.map((k) => [k.name, k.is_active])).toEqual([
      ["live", true],
      ["revoked", false],
      ["expiring", true],
    ]);

    t.clock.advance(60_000);
    list = (await request(t.app).get("/v1/keys").set(org.auth)).body as ScopedKey[];
    expect(list.map((k) => [k.name, k.is_active])).toEqual([
      ["live", true],
      ["revoked", false],
      ["expiring", false],
    ]);
    expect(list.map((k) => k.id)).toEqual([live.id, revoked.id, expiring.id]);

    // Another organization sees none of them.
    const other = await signupOrg(t.app, { name: "other" });
    expect((await request(t.app).get("/v1/keys").set(other.auth)).body).toEqual([]);
  });

  it("gets one key; 404 for an unknown id or another organization's key", async () => {
    const { org, instanceId } = await setup();
    const key = (await createKey(org, { name: "k", instance_ids: [instanceId], permissions: ["configure"] })).body as Created;
    const got = await request(t.app).get(`/v1/keys/${key.id}`).set(org.auth);
    expect(got.status).toBe(200);
    const { raw_key: _raw, ...view } = key;
    expect(got.body).toEqual(view);

    const other = await signupOrg(t.app, { name: "other" });
    expect((await request(t.app).get(`/v1/keys/${key.id}`).set(other.auth)).status).toBe(404);
    expect((await request(t.app).delete(`/v1/keys/${key.id}`).set(other.auth)).status).toBe(404);
    expect((await request(t.app).get("/v1/keys/00000000-0000-4000-8000-000000000000").set(org.auth)).status).toBe(404);
    expect((await request(t.app).delete("/v1/keys/not-a-key").set(org.auth)).status).toBe(404);
    for (const id of ["constructor", "__proto__", "hasOwnProperty"]) {
      expect((await request(t.app).get(`/v1/keys/${id}`).set(org.auth)).status).toBe(404);
      expect((await request(t.app).delete(`/v1/keys/${id}`).set(org.auth)).status).toBe(404);
    }
    // The other organization's attempt did not revoke it.
    expect((await request(t.app).get(`/v1/instances/${instanceId}`).set(bearer(key.raw_key))).status).toBe(403); // no read
    expect((await request(t.app).get(`/v1/keys/${key.id}`).set(org.auth)).body.is_active).toBe(true);
  });

  it("revoke answers 204 with no body, again 204, and the key yields 403 at once", async () => {
    const { org, instanceId } = await setup();
    const key = (await createKey(org, { name: "k", instance_ids: [instanceId], permissions: ["read"] })).body as Created;
    expect((await request(t.app).get(`/v1/instances/${instanceId}`).set(bearer(key.raw_key))).status).toBe(200);

    const first = await request(t.app).delete(`/v1/keys/${key.id}`).set(org.auth);
    expect(first.status).toBe(204);
    expect(first.text).toBe("");
    const denied = await request(t.app).get(`/v1/instances/${instanceId}`).set(bearer(key.raw_key));
    expect(denied.status).toBe(403);
    expect(denied.body.detail).toMatch(/revoked/);

    t.clock.advance(1000);
    const second = await request(t.app).delete(`/v1/keys/${key.id}`).set(org.auth);
    expect(second.status).toBe(204);
    expect((await request(t.app).get(`/v1/keys/${key.id}`).set(org.auth)).body.is_active).toBe(false);
  });

  it("an expired key yields 403 once the clock passes expires_at, not before", async () => {
    const { org, instanceId } = await setup();
    const expires = t.clock.now() + 10_000;
    const key = (await createKey(org, { name: "k", instance_ids: [instanceId], permissions: ["read"], expires_at: new Date(expires).toISOString() }))
      .body as Created;
    t.clock.advance(9_999);
    expect((await request(t.app).get(`/v1/instances/${instanceId}`).set(bearer(key.raw_key))).status).toBe(200);
    t.clock.advance(1);
    const res = await request(t.app).get(`/v1/instances/${instanceId}`).set(bearer(key.raw_key));
    expect(res.status).toBe(403);
    expect(res.body.detail).toMatch(/expired/);
  });
});

describe("last_used_at", () => {
  it("records the last successful authentication", async () => {
    const { org, instanceId } = await setup();
    const key = (await createKey(org, { name: "k", instance_ids: [instanceId], permissions: ["read"] })).body as Created;
    t.clock.advance(5_000);
    await request(t.app).get(`/v1/instances/${instanceId}`).set(bearer(key.raw_key)).expect(200);
    const used = new Date(t.clock.now()).toISOString();
    expect((await request(t.app).get(`/v1/keys/${key.id}`).set(org.auth)).body.last_used_at).toBe(used);

    // A request it is authenticated for but not permitted still authenticated it.
    t.clock.advance(5_000);
    await request(t.app).post(`/v1/instances/${instanceId}/stop`).set(bearer(key.raw_key)).expect(403);
    expect((await request(t.app).get(`/v1/keys/${key.id}`).set(org.auth)).body.last_used_at).toBe(new Date(t.clock.now()).toISOString());

    // A revoked key does not authenticate, so it does not move.
    await request(t.app).delete(`/v1/keys/${key.id}`).set(org.auth).expect(204);
    const revokedAt = (await request(t.app).get(`/v1/keys/${key.id}`).set(org.auth)).body.last_used_at as string;
    t.clock.advance(5_000);
    await request(t.app).get(`/v1/instances/${instanceId}`).set(bearer(key.raw_key)).expect(403);
    expect((await request(t.app).get(`/v1/keys/${key.id}`).set(org.auth)).body.last_used_at).toBe(revokedAt);
  });

  it("is not a file write per request: a burst of authenticated reads costs at most a couple of writes", async () => {
    const dir = tempDir();
    try {
      t = forThisTest(await startEmulator({ dataDir: dir.path, flushMs: 5 }));
      const org = await signupOrg(t.app, { tier: "crab" });
      const instance = await runningInstance(t, org);
      const key = (await createKey(org, { name: "k", instance_ids: [instance.id], permissions: ["read"] })).body as Created;
      await t.emulator.store.flush();
      const before = t.emulator.store.writes;
      for (let i = 0; i < 40; i++) {
        t.clock.advance(1000);
        await request(t.app).get(`/v1/instances/${instance.id}`).set(bearer(key.raw_key)).expect(200);
        await request(t.app).get(`/v1/instances/${instance.id}/status`).set(bearer(key.raw_key)).expect(200);
      }
      // Then one real change, committed within flushMs (5 ms): wait until it is on disk. The 80
      // reads took far longer than 5 ms, so a write per read would have shown as many writes.
      await request(t.app).patch(`/v1/instances/${instance.id}`).set(org.auth).send({ name: "renamed" }).expect(200);
      type State = { instances: Record<string, { name: string }>; keys: Record<string, { last_used_at: string | null }> };
      const onDisk = () => JSON.parse(readFileSync(`${dir.path}/state.json`, "utf8")) as State;
      await vi.waitFor(() => expect(onDisk().instances[instance.id]?.name).toBe("renamed"), { timeout: 10_000, interval: 5 });
      // The change's write, and at most one flush of the bookkeeping (5 s) on a very slow run.
      expect(t.emulator.store.writes - before).toBeLessThanOrEqual(2);
      // The bookkeeping is still kept: it went out with that write.
      expect(onDisk().keys[key.id]?.last_used_at).toBe(new Date(t.clock.now()).toISOString());
    } finally {
      await t.close();
      dir.remove();
    }
  });
});
