/**
 * Who may call the files (`files`), skills (`configure`) and channels
 * (`channels`) routes: the organization key and a scoped key with that
 * permission on the instance succeed; a scoped key with any other permission,
 * or granted on another instance, revoked or expired gets 403; another
 * organization's keys 404; no usable key 401. A refused call changes nothing
 * (the instance tree and its records are compared before and after).
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import type { Test } from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes, type OperationId } from "../../shared/api.js";
import { PERMISSIONS, type Permission } from "../../shared/schemas/common.js";
import { bearer, runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

let t: TestEmulator;
let orgA: TestOrg;
let orgB: TestOrg;
let a1: string;
let a2: string;
const keys = new Map<string, string>();
let n = 0;

beforeAll(async () => {
  t = await startEmulator();
  orgA = await signupOrg(t.app, { name: "org-a", tier: "lobster" });
  orgB = await signupOrg(t.app, { name: "org-b", tier: "lobster" });
  a1 = (await runningInstance(t, orgA, { name: "a1" })).id;
  a2 = (await runningInstance(t, orgA, { name: "a2" })).id;
  const b1 = (await runningInstance(t, orgB, { name: "b1" })).id;
  const mint = async (org: TestOrg, instance: string, permissions: readonly Permission[], expires_at?: string) => {
    const res = await request(t.app)
      .post("/v1/keys")
      .set(org.auth)
      .send({ name: "k", instance_ids: [instance], permissions, expires_at });
    expect(res.status).toBe(201);
    return res.body as { id: string; raw_key: string };
  };
  for (const p of PERMISSIONS) keys.set(p, (await mint(orgA, a1, [p])).raw_key);
  keys.set("other-instance", (await mint(orgA, a2, PERMISSIONS)).raw_key);
  keys.set("other-org-scoped", (await mint(orgB, b1, PERMISSIONS)).raw_key);
  const revoked = await mint(orgA, a1, PERMISSIONS);
  await request(t.app).delete(`/v1/keys/${revoked.id}`).set(orgA.auth).expect(204);
  keys.set("revoked", revoked.raw_key);
  keys.set("expired", (await mint(orgA, a1, PERMISSIONS, new Date(t.clock.now() + 1000).toISOString())).raw_key);
  t.clock.advance(1000);
});
afterAll(async () => {
  await t?.close();
});

const A = (suffix: string) => `/v1/instances/${a1}${suffix}`;
const asOrg = (req: Test) => req.set(orgA.auth);
const write = (path: string, content = "x") =>
  asOrg(request(t.app).put(A("/files/content")))
    .send({ path, content })
    .expect(204);
const install = (slug: string) =>
  asOrg(request(t.app).post(A("/skills/install")))
    .send({ slug })
    .expect(200);
const connect = () =>
  asOrg(request(t.app).post(A("/channels/telegram/connect")))
    .send({ config: { token: TELEGRAM_BOT_TOKEN } })
    .expect(200);

/** For each route: set up what a success needs (with the org key), then the call, to which a caller's key is added. */
type Fixture = () => Promise<(auth: Record<string, string>) => Test>;
const on = (req: Test, auth: Record<string, string>) => (auth.Authorization ? req.set(auth) : req);

const FIXTURES: Partial<Record<OperationId, Fixture>> = {
  listFiles: async () => (auth) => on(request(t.app).get(A("/files")).query({ path: "workspace" }), auth),
  readFile: async () => (auth) => on(request(t.app).get(A("/files/content")).query({ path: "runtime.json" }), auth),
  downloadFile: async () => (auth) => on(request(t.app).get(A("/files/download")).query({ path: "runtime.json" }), auth),
  writeFile: async () => {
    const path = `workspace/perm/w-${++n}.txt`;
    return (auth) => on(request(t.app).put(A("/files/content")), auth).send({ path, content: "w" });
  },
  deleteFile: async () => {
    const path = `workspace/perm/d-${++n}.txt`;
    await write(path);
    return (auth) => on(request(t.app).delete(A("/files")).query({ path }), auth);
  },
  moveFile: async () => {
    const source = `workspace/perm/m-${++n}.txt`;
    await write(source);
    return (auth) => on(request(t.app).post(A("/files/move")), auth).send({ source, destination: `${source}.moved` });
  },
  uploadFile: async () => {
    const path = `workspace/perm/u-${++n}.bin`;
    return (auth) =>
      on(request(t.app).post(A("/files/upload")), auth)
        .field("path", path)
        .attach("file", Buffer.from("u"), "u.bin");
  },
  mkdir: async () => {
    const path = `workspace/perm/dir-${++n}`;
    return (auth) => on(request(t.app).post(A("/files/mkdir")).query({ path }), auth);
  },

  listSkills: async () => (auth) => on(request(t.app).get(A("/skills")), auth),
  getSkill: async () => (await install("todo"), (auth) => on(request(t.app).get(A("/skills/todo")), auth)),
  installSkill: async () => (auth) => on(request(t.app).post(A("/skills/install")), auth).send({ slug: "summarize" }),
  updateSkill: async () => (await install("todo"), (auth) => on(request(t.app).patch(A("/skills/todo")), auth).send({ enabled: n++ % 2 === 0 })),
  uninstallSkill: async () => (await install("shell"), (auth) => on(request(t.app).delete(A("/skills/shell")), auth)),

  listChannels: async () => (auth) => on(request(t.app).get(A("/channels")), auth),
  getChannelStatus: async () => (auth) => on(request(t.app).get(A("/channels/telegram/status")), auth),
  connectChannel: async () => (auth) => on(request(t.app).post(A("/channels/telegram/connect")), auth).send({ config: { token: TELEGRAM_BOT_TOKEN } }),
  disconnectChannel: async () => (await connect(), (auth) => on(request(t.app).post(A("/channels/telegram/disconnect")), auth)),
  pairChannel: async () => (await connect(), (auth) => on(request(t.app).post(A("/channels/telegram/pair")), auth).send({ code: `CODE${++n}` })),
};

const TAGS = new Set(["files", "skills", "channels"]);
const covered = (Object.keys(routes) as OperationId[]).filter((id) => TAGS.has(routes[id].tag) && routes[id].access.kind === "instance");

/** Everything a refused call could have changed: A1's tree and records. */
function footprint(): string {
  const hash = createHash("sha256");
  const walk = (dir: string, rel: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      const stats = lstatSync(full);
      hash.update(`${rel}/${name} ${stats.isDirectory() ? "d" : "f"}\n`);
      if (stats.isDirectory()) walk(full, `${rel}/${name}`);
      else hash.update(readFileSync(full));
    }
  };
  walk(t.emulator.env.workspaces.rootOf(a1), "");
  const record = t.emulator.store.data.instances[a1]!;
  hash.update(JSON.stringify({ skills: record.skills, channels: record.channels }));
  return hash.digest("hex");
}

interface Caller {
  label: string;
  auth: () => Record<string, string>;
  /** "ok" for the route's success status. */
  expect: (permission: Permission) => "ok" | 401 | 403 | 404;
}

const CALLERS: Caller[] = [
  { label: "organization key", auth: () => orgA.auth, expect: () => "ok" },
  ...PERMISSIONS.map((p): Caller => ({ label: `scoped key with ${p}`, auth: () => bearer(keys.get(p)!), expect: (needed) => (needed === p ? "ok" : 403) })),
  { label: "scoped key for another instance", auth: () => bearer(keys.get("other-instance")!), expect: () => 403 },
  { label: "another organization's key", auth: () => orgB.auth, expect: () => 404 },
  { label: "another organization's scoped key", auth: () => bearer(keys.get("other-org-scoped")!), expect: () => 404 },
  { label: "revoked key", auth: () => bearer(keys.get("revoked")!), expect: () => 403 },
  { label: "expired key", auth: () => bearer(keys.get("expired")!), expect: () => 403 },
  { label: "no Authorization", auth: () => ({}), expect: () => 401 },
  { label: "Basic scheme", auth: () => ({ Authorization: "Basic dXNlcjpwYXNz" }), expect: () => 401 },
  { label: "Bearer without a key", auth: () => ({ Authorization: "Bearer" }), expect: () => 401 },
  { label: "unknown key", auth: () => bearer(`svc_sk_${"0".repeat(64)}`), expect: () => 401 },
];

describe("access to files, skills and channels", () => {
  it("has a fixture for every files, skills and channels route of the route table", () => {
    expect(Object.keys(FIXTURES).sort()).toEqual([...covered].sort());
    expect(covered).toHaveLength(18);
  });

  it.each(covered)("%s", async (id) => {
    const spec = routes[id];
    if (spec.access.kind !== "instance") throw new Error("not an instance route");
    const permission = spec.access.permission;
    expect(permission).toBe(spec.tag === "files" ? "files" : spec.tag === "skills" ? "configure" : "channels");
    const wrong: string[] = [];
    for (const caller of CALLERS) {
      const call = await FIXTURES[id]!();
      const want = caller.expect(permission);
      const before = want === "ok" ? "" : footprint();
      const res = await call(caller.auth());
      if (want === "ok") {
        if (res.status !== spec.status) wrong.push(`${caller.label}: expected ${spec.status}, got ${res.status} ${String(res.text ?? "").slice(0, 160)}`);
        continue;
      }
      if (res.status !== want || typeof res.body?.detail !== "string")
        wrong.push(`${caller.label}: expected ${want}, got ${res.status} ${String(res.text ?? "").slice(0, 160)}`);
      if (footprint() !== before) wrong.push(`${caller.label}: a refused call changed the instance`);
    }
    expect(wrong).toEqual([]);
  });

  it("channel info is public: any caller, or none, gets it", async () => {
    for (const caller of CALLERS) {
      const res = await on(request(t.app).get(A("/channels/telegram")), caller.auth());
      expect(res.status, caller.label).toBe(200);
      expect(res.body.connection_type).toBe("token");
    }
  });

  it("the control plane's scan takes no service key: with an admin token set, only that token opens it", async () => {
    const guarded = await startEmulator({ adminToken: "admin-secret" });
    try {
      const o = await signupOrg(guarded.app);
      const id = (await runningInstance(guarded, o)).id;
      await request(guarded.app).post(`/v1/instances/${id}/channels/whatsapp/connect`).set(o.auth).send({ config: {} }).expect(200);
      const path = `/_emulator/instances/${id}/channels/whatsapp/scan`;
      expect((await request(guarded.app).post(path)).status).toBe(401);
      expect((await request(guarded.app).post(path).set(o.auth)).status).toBe(401);
      expect((await request(guarded.app).post(path).set(bearer("admin-secret"))).status).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});
