import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes, type RouteSpec } from "../../shared/api.js";
import { runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

interface Operation {
  operationId: string;
  parameters: { name: string; in: string; required: boolean }[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, unknown>;
  security: unknown[];
}
interface JsonSchema {
  type?: string;
  required?: string[];
  properties?: Record<string, JsonSchema & { maxLength?: number; minLength?: number; enum?: string[] }>;
  additionalProperties?: unknown;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
}

let t: TestEmulator;
let doc: Document;
let org: TestOrg;
let instanceId: string;

beforeAll(async () => {
  t = await startEmulator();
  const res = await request(t.app).get("/v1/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  doc = res.body as Document;
  org = await signupOrg(t.app, { tier: "crab" });
  instanceId = (await runningInstance(t, org)).id;
});
afterAll(async () => {
  await t?.close();
});

const entries = Object.entries(routes) as [string, RouteSpec][];
const service = entries.filter(([, spec]) => spec.access.kind !== "admin");
const bodySchema = (op: Operation) => op.requestBody?.content["application/json"]?.schema;

describe("GET /v1/openapi.json", () => {
  it("is OpenAPI 3.1", () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
  });

  it.each(service)("documents %s with its method, path parameters, success status and errors", (id, spec) => {
    const op = doc.paths[spec.path]?.[spec.method.toLowerCase()];
    expect(op, `${spec.method} ${spec.path}`).toBeDefined();
    expect(op!.operationId).toBe(id);
    const pathParams = [...spec.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]);
    expect(op!.parameters.filter((p) => p.in === "path").map((p) => p.name)).toEqual(pathParams);
    expect(Object.keys(op!.responses)).toContain(String(spec.status));
    for (const status of spec.errors) expect(Object.keys(op!.responses)).toContain(String(status));
    expect(op!.security).toEqual(spec.access.kind === "public" ? [] : [{ apiKey: [] }]);
    if (spec.body) expect(bodySchema(op!)).toBeDefined();
    else if (!spec.multipart) expect(op!.requestBody).toBeUndefined();
  });

  it("has nothing else: no control-plane route, no operation the route table lacks", () => {
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual(service.map(([, s]) => `${s.method} ${s.path}`).sort());
    expect(documented.some((d) => d.includes("/_emulator"))).toBe(false);
  });

  it("states the request schemas the spec gives", () => {
    const schemaOf = (path: string, method: string) => bodySchema(doc.paths[path]![method]!)!;
    const signup = schemaOf("/v1/organization/signup", "post");
    expect(signup.required).toEqual(["name"]);
    expect(signup.properties?.name).toMatchObject({ type: "string", minLength: 1, maxLength: 128 });
    expect(signup.additionalProperties).toBe(false);

    const key = schemaOf("/v1/keys", "post");
    expect([...(key.required ?? [])].sort()).toEqual(["instance_ids", "name", "permissions"]);
    expect(JSON.stringify(key.properties?.permissions)).toContain('"read","interact","configure","files","channels"');

    const instance = schemaOf("/v1/instances", "post");
    expect(instance.required).toEqual(["name"]);
    expect(instance.properties?.model_provider?.enum).toEqual(["anthropic", "openai", "gemini"]);

    const message = schemaOf("/v1/instances/{instance_id}/responses", "post");
    expect([...(message.required ?? [])].sort()).toEqual(["input", "model"]);
    expect(message.additionalProperties).not.toBe(false); // open: passed through

    expect(schemaOf("/v1/subscription/checkout", "post").properties?.tier?.enum).toEqual(["crab", "lobster"]);
    const update = schemaOf("/v1/organization", "patch");
    expect(update.required ?? []).toEqual([]);
  });

  // The document and the validator agree: leaving out any field the document
  // requires is refused with 422 at exactly that field.
  const bodied = service.filter(([, spec]) => spec.body && !["files", "skills", "channels"].includes(spec.tag));
  it.each(bodied)("%s refuses each required field's absence at that field", async (_id, spec) => {
    const op = doc.paths[spec.path]![spec.method.toLowerCase()]!;
    const schema = bodySchema(op)!;
    const path = spec.path.replace("{instance_id}", instanceId).replace("{session_id}", "s");
    for (const field of schema.required ?? []) {
      let req = request(t.app)[spec.method.toLowerCase() as "post" | "patch"](path);
      if (spec.access.kind !== "public") req = req.set(org.auth);
      const res = await req.send({});
      expect(res.status).toBe(422);
      expect((res.body.detail as { loc: unknown[] }[]).map((d) => d.loc)).toContainEqual(["body", field]);
    }
  });
});
