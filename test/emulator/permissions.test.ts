/**
 * The whole permission matrix, generated from the route table: every `/v1`
 * route against every kind of caller. A route added to `shared/api.ts`
 * without a fixture here fails to type-check (and the runtime check below).
 *
 * Files, skills and channels belong to another suite: here they only have to
 * enforce authentication and authorization before anything else (their
 * allowed callers must get past 401/403, whatever the route then answers).
 */
import request from "supertest";
import type { Test } from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes, type OperationId, type RouteSpec, type Routes } from "../../shared/api.js";
import { PERMISSIONS, type Permission } from "../../shared/schemas/common.js";
import { bearer, forceState, runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

type ServiceRoute = { [K in OperationId]: Routes[K]["access"]["kind"] extends "admin" ? never : K }[OperationId];

interface Call {
  params?: Record<string, string>;
  body?: unknown;
  query?: Record<string, string>;
  multipart?: { path: string; content: string };
}

interface World {
  t: TestEmulator;
  orgA: TestOrg;
  orgB: TestOrg;
  /** Org A's instances: the one keys are granted on, and one they are not. */
  a1: string;
  a2: string;
  b1: string;
}

const SKIPPED_TAGS = new Set(["files", "skills", "channels"]);

const on = (w: World, extra: Record<string, string> = {}) => ({ instance_id: w.a1, ...extra });
/** Puts A1 in the state a success needs; idempotent. */
const ensure = async (w: World, status: "running" | "stopped") => {
  await forceState(w.t.app, w.a1, { status });
};
const freshKeyId = async (w: World): Promise<string> => {
  const res = await request(w.t.app)
    .post("/v1/keys")
    .set(w.orgA.auth)
    .send({ name: "target", instance_ids: [w.a1], permissions: ["read"] });
  return (res.body as { id: string }).id;
};

const fixtures: { [K in ServiceRoute]: (w: World) => Promise<Call> | Call } = {
  signup: () => ({ body: { name: "matrix" } }),
  getOrganization: () => ({}),
  updateOrganization: () => ({ body: { name: "org-a" } }),
  getSubscription: () => ({}),
  createCheckout: () => ({ body: { tier: "crab" } }),
  createPortal: () => ({}),

  createKey: (w) => ({ body: { name: "k", instance_ids: [w.a1], permissions: ["read"] } }),
  listKeys: () => ({}),
  getKey: async (w) => ({ params: { key_id: await freshKeyId(w) } }),
  revokeKey: async (w) => ({ params: { key_id: await freshKeyId(w) } }),

  createInstance: () => ({ body: { name: "made" } }),
  listInstances: () => ({}),
  getInstance: (w) => ({ params: on(w) }),
  getInstanceStatus: (w) => ({ params: on(w) }),
  updateInstance: (w) => ({ params: on(w), body: { name: "a1" } }),
  startInstance: async (w) => (await ensure(w, "stopped"), { params: on(w) }),
  stopInstance: async (w) => (await ensure(w, "running"), { params: on(w) }),
  deleteInstance: async (w) => {
    // A fresh instance each time, so an allowed delete does not take A1 away.
    const doomed = await runningInstance(w.t, w.orgA, { name: "doomed" });
    return { params: { instance_id: doomed.id } };
  },

  createResponse: async (w) => (await ensure(w, "running"), { params: on(w), body: { model: "m", input: "hi" } }),
  createSessionResponse: async (w) => (await ensure(w, "running"), { params: on(w, { session_id: "matrix" }), body: { model: "m", input: "hi" } }),

  listChannels: (w) => ({ params: on(w) }),
  getChannelInfo: (w) => ({ params: on(w, { channel: "telegram" }) }),
  connectChannel: (w) => ({ params: on(w, { channel: "whatsapp" }), body: { config: {} } }),
  disconnectChannel: (w) => ({ params: on(w, { channel: "telegram" }) }),
  getChannelStatus: (w) => ({ params: on(w, { channel: "telegram" }) }),
  pairChannel: (w) => ({ params: on(w, { channel: "telegram" }), body: { code: "ABCD1234" } }),

  listSkills: (w) => ({ params: on(w) }),
  getSkill: (w) => ({ params: on(w, { skill_name: "no-such-skill" }) }),
  installSkill: (w) => ({ params: on(w), body: { slug: "no-such-skill" } }),
  updateSkill: (w) => ({ params: on(w, { skill_name: "no-such-skill" }), body: { enabled: false } }),
  uninstallSkill: (w) => ({ params: on(w, { skill_name: "no-such-skill" }) }),

  listFiles: (w) => ({ params: on(w), query: { path: "." } }),
  deleteFile: (w) => ({ params: on(w), query: { path: "workspace/matrix-missing" } }),
  readFile: (w) => ({ params: on(w), query: { path: "runtime.json" } }),
  writeFile: (w) => ({ params: on(w), body: { path: "workspace/matrix.txt", content: "x" } }),
  moveFile: (w) => ({ params: on(w), body: { source: "workspace/matrix-missing", destination: "workspace/matrix-elsewhere" } }),
  uploadFile: (w) => ({ params: on(w), multipart: { path: "workspace/matrix-upload.txt", content: "x" } }),
  downloadFile: (w) => ({ params: on(w), query: { path: "runtime.json" } }),
  mkdir: (w) => ({ params: on(w), query: { path: "workspace/matrix-dir" } }),
};

type Who =
  | { kind: "org" }
  | { kind: "scoped"; permission: Permission }
  | { kind: "scoped-other-instance" }
  | { kind: "other-org" }
  | { kind: "other-org-scoped" }
  | { kind: "expired" }
  | { kind: "revoked" }
  | { kind: "no-header" }
  | { kind: "header"; label: string; value: string };

const CALLERS: Who[] = [
  { kind: "org" },
  ...PERMISSIONS.map((permission) => ({ kind: "scoped", permission }) as const),
  { kind: "scoped-other-instance" },
  { kind: "other-org" },
  { kind: "other-org-scoped" },
  { kind: "expired" },
  { kind: "revoked" },
  { kind: "no-header" },
  { kind: "header", label: "Basic", value: "Basic x" },
  { kind: "header", label: "Bearer without a key", value: "Bearer" },
  { kind: "header", label: "unknown scoped key", value: `Bearer svc_sk_${"0".repeat(64)}` },
  { kind: "header", label: "unknown org key", value: `Bearer svc_org_${"0".repeat(64)}` },
];

const label = (who: Who) => (who.kind === "scoped" ? `scoped:${who.permission}` : who.kind === "header" ? `header:${who.label}` : who.kind);

/** "allowed": the route's success (or, for skipped routes, anything past auth); a number: exactly that. */
type Expected = "allowed" | 401 | 403 | 404 | "skip";

function expected(spec: RouteSpec, who: Who): Expected {
  const access = spec.access;
  if (access.kind === "admin") return "skip";
  if (access.kind === "public") return who.kind === "no-header" || who.kind === "header" || who.kind === "org" ? "allowed" : "skip";
  switch (who.kind) {
    case "no-header":
    case "header":
      return 401;
    case "expired":
    case "revoked":
      return 403;
    case "org":
      return "allowed";
    case "scoped":
      return access.kind === "instance" && access.permission === who.permission ? "allowed" : 403;
    case "scoped-other-instance":
      return 403;
    case "other-org":
      // Whatever names org A's resources is invisible to org B; the rest acts on B's own organization.
      return access.kind === "instance" || spec.path.includes("{") ? 404 : "skip";
    case "other-org-scoped":
      return access.kind === "instance" ? 404 : 403;
  }
}

let w: World;
const keys = new Map<string, string>();

beforeAll(async () => {
  const t = await startEmulator();
  const orgA = await signupOrg(t.app, { name: "org-a", tier: "lobster" });
  const orgB = await signupOrg(t.app, { name: "org-b", tier: "lobster" });
  const a1 = (await runningInstance(t, orgA, { name: "a1" })).id;
  const a2 = (await runningInstance(t, orgA, { name: "a2" })).id;
  const b1 = (await runningInstance(t, orgB, { name: "b1" })).id;
  w = { t, orgA, orgB, a1, a2, b1 };
  const mint = async (org: TestOrg, instance: string, permissions: readonly Permission[], expires_at?: string) => {
    const res = await request(t.app)
      .post("/v1/keys")
      .set(org.auth)
      .send({ name: "m", instance_ids: [instance], permissions, expires_at });
    if (res.status !== 201) throw new Error(res.text);
    return res.body as { id: string; raw_key: string };
  };
  for (const permission of PERMISSIONS) keys.set(`scoped:${permission}`, (await mint(orgA, a1, [permission])).raw_key);
  keys.set("scoped-other-instance", (await mint(orgA, a1, PERMISSIONS)).raw_key);
  keys.set("other-org-scoped", (await mint(orgB, b1, PERMISSIONS)).raw_key);
  const revoked = await mint(orgA, a1, PERMISSIONS);
  await request(t.app).delete(`/v1/keys/${revoked.id}`).set(orgA.auth).expect(204);
  keys.set("revoked", revoked.raw_key);
  keys.set("expired", (await mint(orgA, a1, PERMISSIONS, new Date(t.clock.now() + 1000).toISOString())).raw_key);
  t.clock.advance(1000);
});

afterAll(async () => {
  await w?.t.close();
});

function authorization(who: Who): string | undefined {
  switch (who.kind) {
    case "org":
      return bearer(w.orgA.apiKey).Authorization;
    case "other-org":
      return bearer(w.orgB.apiKey).Authorization;
    case "no-header":
      return undefined;
    case "header":
      return who.value;
    default:
      return bearer(keys.get(label(who)) ?? keys.get(who.kind)!).Authorization;
  }
}

function send(spec: RouteSpec, call: Call, auth: string | undefined): Test {
  const path = spec.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => encodeURIComponent(call.params?.[name] ?? "missing"));
  const method = spec.method.toLowerCase() as "get" | "post" | "put" | "patch" | "delete";
  let req = request(w.t.app)[method](path);
  if (auth !== undefined) req = req.set("Authorization", auth);
  if (call.query) req = req.query(call.query);
  if (call.multipart) return req.field("path", call.multipart.path).attach("file", Buffer.from(call.multipart.content), "upload.txt");
  if (call.body !== undefined) return req.send(call.body as object);
  return req;
}

const serviceRoutes = (Object.keys(routes) as OperationId[]).filter((id): id is ServiceRoute => routes[id].access.kind !== "admin");

describe("permission matrix", () => {
  it("has a fixture for every service route of the route table", () => {
    expect(Object.keys(fixtures).sort()).toEqual([...serviceRoutes].sort());
    expect(serviceRoutes).toContain("createResponse");
  });

  it.each(serviceRoutes)("%s", async (id) => {
    const spec = routes[id] as RouteSpec;
    const skipped = SKIPPED_TAGS.has(spec.tag);
    const wrong: string[] = [];
    for (const who of CALLERS) {
      const want = expected(spec, who);
      if (want === "skip") continue;
      const call = await fixtures[id](w);
      if (who.kind === "scoped-other-instance" && call.params?.instance_id === w.a1) call.params = { ...call.params, instance_id: w.a2 };
      const res = await send(spec, call, authorization(who));
      let ok: boolean;
      if (want !== "allowed") ok = res.status === want;
      else if (skipped || spec.access.kind === "public") ok = res.status !== 401 && res.status !== 403;
      else ok = res.status === spec.status;
      // Every refusal carries the contract's error body.
      if (ok && want !== "allowed") ok = typeof (res.body as { detail?: unknown }).detail === "string";
      if (!ok)
        wrong.push(`${label(who)}: expected ${want}${want === "allowed" && !skipped ? ` (${spec.status})` : ""}, got ${res.status} ${res.text.slice(0, 160)}`);
    }
    expect(wrong).toEqual([]);
  });

  it("left A1 usable and refused callers changed nothing they could not touch", async () => {
    const a1 = await request(w.t.app).get(`/v1/instances/${w.a1}`).set(w.orgA.auth);
    expect(a1.status).toBe(200);
    // B's instance was never reachable from A's keys, nor A's from B's.
    expect((await request(w.t.app).get(`/v1/instances/${w.b1}`).set(w.orgB.auth)).body.name).toBe("b1");
    expect((await request(w.t.app).get("/v1/organization").set(w.orgB.auth)).body.name).toBe("org-b");
  });
});
