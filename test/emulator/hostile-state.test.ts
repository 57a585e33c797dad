/**
 * Issue 8, observations 1-3 and 6: requests a hostile client can send that
 * used to break persistence, write outside the data directory, repeat seeded
 * ids or answer the wrong status. Each is refused with the contract's status,
 * changes nothing, and leaves every later read and write working.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { describe, expect, it, onTestFinished } from "vitest";
import { MAX_JSON_DEPTH } from "../../shared/json-depth.js";
import { routes } from "../../shared/api.js";
import { runningInstance, signupOrg, snapshot, startEmulator, tempDir, type TestEmulator } from "../helpers/emulator.js";

async function emulator(options: Parameters<typeof startEmulator>[0] = {}): Promise<TestEmulator> {
  const t = await startEmulator(options);
  // Closed when the test finishes (closing a closed emulator is a no-op).
  onTestFinished(() => t.close());
  return t;
}

function dataDir(): string {
  const dir = tempDir("agent-bridge-hostile-");
  onTestFinished(dir.remove);
  return dir.path;
}

/** `{"a":{"a":...{}}}` nested `depth` objects deep, built as text (no recursion anywhere). */
const nested = (depth: number): string => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;

describe("observation 1: deeply nested JSON", () => {
  it("is refused with 422 on every body route before anything is applied, and every later write still reaches disk", async () => {
    const dir = dataDir();
    const t = await emulator({ dataDir: dir, flushMs: 5 });
    const org = await signupOrg(t.app, { tier: "crab" });
    const instance = await runningInstance(t, org);
    await request(t.app).post(`/v1/instances/${instance.id}/skills/install`).set(org.auth).send({ slug: "weather" }).expect(200);
    const before = await snapshot(t.app);

    const deep = nested(5000);
    const calls = [
      request(t.app).post("/v1/instances").set(org.auth).type("json").send(`{"name":"x","runtime_config":${deep}}`),
      request(t.app).patch(`/v1/instances/${instance.id}`).set(org.auth).type("json").send(`{"runtime_config":${deep}}`),
      request(t.app).patch(`/v1/instances/${instance.id}/skills/weather`).set(org.auth).type("json").send(`{"config":${deep}}`),
      request(t.app).post(`/v1/instances/${instance.id}/responses`).set(org.auth).type("json").send(`{"model":"m","input":"hi","metadata":${deep}}`),
      request(t.app).put("/_emulator/snapshot").type("json").send(`{"version":1,"x":${deep}}`),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status, res.text).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ["body"], type: "too_deep" });
    }
    expect(await snapshot(t.app)).toEqual(before);

    // The boundary: exactly the limit is accepted (the body wraps the config once).
    const atLimit = `{"runtime_config":${nested(MAX_JSON_DEPTH - 1)}}`;
    await request(t.app).patch(`/v1/instances/${instance.id}`).set(org.auth).type("json").send(atLimit).expect(200);
    const over = `{"runtime_config":${nested(MAX_JSON_DEPTH)}}`;
    expect((await request(t.app).patch(`/v1/instances/${instance.id}`).set(org.auth).type("json").send(over)).status).toBe(422);

    // Reads of that organization and the snapshot still answer; another organization's writes reach disk.
    await request(t.app).get("/v1/instances").set(org.auth).expect(200);
    await request(t.app).get("/_emulator/snapshot").expect(200);
    const other = await signupOrg(t.app, { name: "bystander" });
    await t.emulator.store.flush();
    expect(t.emulator.store.health()).toMatchObject({ ok: true, pending: false });
    expect(readFileSync(join(dir, "state.json"), "utf8")).toContain(other.organization.id);
    await t.close();

    const again = await emulator({ dataDir: dir });
    expect((await request(again.app).get("/v1/organization").set(other.auth)).body.name).toBe("bystander");
    const kept = await request(again.app).get(`/v1/instances/${instance.id}`).set(org.auth).expect(200);
    expect(JSON.stringify(kept.body.runtime_config)).toBe(nested(MAX_JSON_DEPTH - 1));
  });
});

describe("observation 2: snapshot import", () => {
  async function withInstance() {
    const base = dataDir();
    const t = await emulator({ dataDir: join(base, "data") });
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    // biome-ignore lint/suspicious/noExplicitAny: the test builds deliberately malformed snapshots by hand.
    const taken = (await request(t.app).get("/_emulator/snapshot")).body as Record<string, any>;
    return { base, t, org, instance, taken };
  }

  it("refuses instance ids that are not of the minted form (422); nothing is written outside, nothing replaced", async () => {
    const { base, t, org, instance, taken } = await withInstance();
    const evil = "../../escape";
    const hostile = structuredClone(taken);
    hostile.instances[evil] = { ...hostile.instances[instance.id], id: evil };
    hostile.organizations[org.organization.id].instance_ids.push(evil);
    hostile.workspaces[evil] = [
      { path: "pwned.txt", type: "file", mode: 0o644, mtime: "2026-01-01T00:00:00.000Z", data: Buffer.from("pwned").toString("base64") },
    ];
    const before = await snapshot(t.app);
    const res = await request(t.app).put("/_emulator/snapshot").send(hostile);
    expect(res.status).toBe(422);
    expect(res.body.detail.some((d: { loc: unknown[] }) => d.loc.includes(evil))).toBe(true);
    expect(existsSync(join(base, "escape"))).toBe(false);
    expect(existsSync(join(base, "data", "..", "escape", "pwned.txt"))).toBe(false);
    expect(await snapshot(t.app)).toEqual(before);

    // The organization cannot reach outside with a DELETE either, encoded or not.
    mkdirSync(join(base, "escape"));
    writeFileSync(join(base, "escape", "keep.txt"), "keep");
    for (const path of ["/v1/instances/..%2F..%2Fescape", "/v1/instances/..%2f..%2f..%2fescape", "/v1/instances/%2E%2E"]) {
      expect((await request(t.app).delete(path).set(org.auth)).status, path).toBe(404);
    }
    expect(readFileSync(join(base, "escape", "keep.txt"), "utf8")).toBe("keep");
  });

  it("refuses link targets that leave the instance root, absolute or relative (422)", async () => {
    const { t, instance, taken } = await withInstance();
    const link = (path: string, target: string) => ({
      ...taken,
      workspaces: { [instance.id]: [{ path, type: "symlink", target, mtime: "2026-01-01T00:00:00.000Z" }] },
    });
    for (const [path, target] of [
      ["workspace/out", "/etc"],
      ["workspace/out", "../../x"],
      ["out", "../x"],
      ["workspace/out", "a/../../../x"],
      ["workspace/out", "..\\..\\x"],
    ] as const) {
      const res = await request(t.app).put("/_emulator/snapshot").send(link(path, target));
      expect(res.status, `${path} -> ${target}`).toBe(422);
      expect(res.body.detail[0].loc).toEqual(["body", "workspaces", instance.id, 0, "target"]);
    }
    // Targets inside the root are kept.
    await request(t.app).put("/_emulator/snapshot").send(link("workspace/ok", "../runtime.json")).expect(204);
  });

  it("checks every record like the API does: malformed records and dangling references are 422", async () => {
    const { t, org, instance, taken } = await withInstance();
    // biome-ignore lint/suspicious/noExplicitAny: each case writes a malformed record into arbitrary JSON.
    const cases: [string, (s: Record<string, any>) => void][] = [
      ["org id not a uuid", (s) => (s.organizations["not-a-uuid"] = { ...s.organizations[org.organization.id], id: "not-a-uuid" })],
      ["instance of an unknown org", (s) => (s.instances[instance.id].organization_id = "00000000-0000-4000-8000-000000000000")],
      ["extra field", (s) => (s.instances[instance.id].extra = 1)],
      ["unknown channel", (s) => (s.instances[instance.id].channels["../x"] = {})],
      ["deep runtime_config", (s) => (s.instances[instance.id].runtime_config = JSON.parse(nested(MAX_JSON_DEPTH + 1)))],
      ["workspace key not an id", (s) => (s.workspaces["../x"] = [])],
      [
        "response of an unknown instance",
        (s) =>
          (s.gateway.responses[`resp_${"0".repeat(32)}`] = {
            id: `resp_${"0".repeat(32)}`,
            instance_id: "00000000-0000-4000-8000-000000000000",
            session: "main",
            parent_id: null,
            input_text: "",
            output_text: "",
            model: "m",
            created_at: 0,
          }),
      ],
    ];
    const before = await snapshot(t.app);
    for (const [name, mutate] of cases) {
      const bad = structuredClone(taken);
      mutate(bad);
      const res = await request(t.app).put("/_emulator/snapshot").send(bad);
      expect(res.status, name).toBe(422);
      expect(res.body.detail.length, name).toBeGreaterThan(0);
    }
    expect(await snapshot(t.app)).toEqual(before);
  });
});

describe("observation 3: --seed with a persistent data directory", () => {
  it("never repeats an id or key after a restart, and repeats them from a fresh start", async () => {
    const dir = dataDir();
    const first = await emulator({ dataDir: dir, seed: "fixed" });
    const a = await signupOrg(first.app, { name: "first" });
    await first.close();

    const second = await emulator({ dataDir: dir, seed: "fixed" });
    const b = await signupOrg(second.app, { name: "second" });
    expect(b.organization.id).not.toBe(a.organization.id);
    expect(b.apiKey).not.toBe(a.apiKey);
    expect((await request(second.app).get("/v1/organization").set(a.auth)).body.name).toBe("first");
    expect((await request(second.app).get("/v1/organization").set(b.auth)).body.name).toBe("second");

    const fresh = await emulator({ dataDir: dataDir(), seed: "fixed" });
    const c = await signupOrg(fresh.app, { name: "again" });
    expect([c.organization.id, c.apiKey]).toEqual([a.organization.id, a.apiKey]);
  });

  it("continues after a turn whose ids only reached a conversation log", async () => {
    const dir = dataDir();
    const first = await emulator({ dataDir: dir, seed: "turns" });
    const org = await signupOrg(first.app);
    const instance = await runningInstance(first, org);
    await first.emulator.store.flush();
    const file = join(dir, "state.json");
    const positionBefore = JSON.parse(readFileSync(file, "utf8")).random_position as number;
    expect(positionBefore).toBeGreaterThan(0);
    const turn = await request(first.app).post(`/v1/instances/${instance.id}/responses`).set(org.auth).send({ model: "m", input: "one" }).expect(200);
    await first.emulator.store.flush();
    await first.close();
    // Rewind state.json's position to what it held before the turn (a crash after the append, before
    // any control write): only the log knows what the generator drew for the turn.
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), random_position: positionBefore }));

    const second = await emulator({ dataDir: dir, seed: "turns" });
    const next = await request(second.app).post(`/v1/instances/${instance.id}/responses`).set(org.auth).send({ model: "m", input: "two" }).expect(200);
    expect(next.body.id).not.toBe(turn.body.id);
    expect(
      (await request(second.app).post(`/v1/instances/${instance.id}/responses`).set(org.auth).send({ model: "m", input: "!recall" })).body.output[0].content[0]
        .text,
    ).toBe("one\ntwo");
  });
});

describe("observation 6: statuses", () => {
  it("valid JSON that is not an object is 422, not 400", async () => {
    const t = await emulator();
    const org = await signupOrg(t.app);
    for (const body of ["null", "1", '"text"', "true"]) {
      const res = await request(t.app).patch("/v1/organization").set(org.auth).type("json").send(body);
      expect(res.status, body).toBe(422);
      expect(Array.isArray(res.body.detail)).toBe(true);
    }
    expect((await request(t.app).patch("/v1/organization").set(org.auth).type("json").send("{bad")).status).toBe(400);
  });

  it("a known path with a method it does not have is 405 with Allow", async () => {
    const t = await emulator();
    const res = await request(t.app).put("/v1/organization");
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("GET, PATCH, HEAD");
    const instances = await request(t.app).patch("/v1/instances");
    expect(instances.status).toBe(405);
    expect(instances.headers.allow).toBe("POST, GET, HEAD");
    expect((await request(t.app).delete("/_emulator/health")).status).toBe(405);
    expect((await request(t.app).get("/v1/nowhere")).status).toBe(404);
  });

  it("moving a missing path onto itself is 404", async () => {
    const t = await emulator();
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    const res = await request(t.app)
      .post(`/v1/instances/${instance.id}/files/move`)
      .set(org.auth)
      .send({ source: "workspace/missing", destination: "workspace/missing" });
    expect(res.status).toBe(404);
  });

  it("the responses schema refuses input items the gateway would refuse (422, never a gateway 400)", async () => {
    const t = await emulator();
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    for (const input of [[{}], [{ role: "user" }], [{ type: "message", content: "x" }], [{ role: "user", content: [{ type: "input_text" }] }]]) {
      const res = await request(t.app).post(`/v1/instances/${instance.id}/responses`).set(org.auth).send({ model: "m", input });
      expect(res.status, JSON.stringify(input)).toBe(422);
    }
    const fine = await request(t.app)
      .post(`/v1/instances/${instance.id}/responses`)
      .set(org.auth)
      .send({
        model: "m",
        input: [
          { role: "user", content: "hi" },
          { type: "function_call_output", output: "x" },
        ],
      });
    expect(fine.status).toBe(200);
  });

  it("names with a lone surrogate are refused (422)", async () => {
    const t = await emulator();
    const org = await signupOrg(t.app);
    for (const name of ["\ud800", "a\udc00b", "x\ud83d"]) {
      expect((await request(t.app).post("/v1/organization/signup").type("json").send(JSON.stringify({ name }))).status).toBe(422);
      expect((await request(t.app).patch("/v1/organization").set(org.auth).type("json").send(JSON.stringify({ name }))).status).toBe(422);
    }
    expect((await request(t.app).post("/v1/organization/signup").send({ name: "emoji \ud83d\ude00" })).status).toBe(201);
  });

  it("400 and 413 are documented on every route that takes a JSON body", async () => {
    const t = await emulator();
    const doc = (await request(t.app).get("/v1/openapi.json").expect(200)).body as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    for (const [id, spec] of Object.entries(routes)) {
      // The control plane is not in the service's document.
      if (!("body" in spec) || !spec.body || spec.access.kind === "admin") continue;
      const op = doc.paths[spec.path]?.[spec.method.toLowerCase()];
      expect(op, id).toBeDefined();
      expect(Object.keys(op!.responses), id).toEqual(expect.arrayContaining(["400", "413", "422"]));
    }
  });
});

describe("the control plane shows the store's health", () => {
  it("health carries the store's state", async () => {
    const t = await emulator({ dataDir: dataDir() });
    const res = await request(t.app).get("/_emulator/health").expect(200);
    expect(res.body).toMatchObject({ status: "ok", store: { persistent: true, ok: true, failing_since: null, last_error: null } });
  });
});
