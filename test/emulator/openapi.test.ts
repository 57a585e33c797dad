import { createConfig, lintFromString } from "@redocly/openapi-core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operationDescriptions, routes, type RouteSpec } from "../../shared/api.js";
import { buildOpenApiDocument } from "../../shared/openapi.js";
import { pages } from "../../shared/pages.js";
import { runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

interface Operation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  parameters: { name: string; in: string; required: boolean }[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, unknown>;
  security: unknown[];
}
interface JsonSchema {
  $ref?: string;
  type?: string;
  required?: string[];
  properties?: Record<string, JsonSchema & { maxLength?: number; minLength?: number; enum?: string[] }>;
  additionalProperties?: unknown;
}
interface Document {
  openapi: string;
  info: { description?: string; license?: { name: string; identifier?: string } };
  servers: { url: string }[];
  tags: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema>; responses: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}

let t: TestEmulator;
/** The two served documents, and (for the checks every operation gets) the two read as one. */
let serviceDoc: Document;
let controlDoc: Document;
let doc: Document;
let org: TestOrg;
let instanceId: string;

beforeAll(async () => {
  t = await startEmulator();
  const res = await request(t.app).get("/v1/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  serviceDoc = res.body as Document;
  const control = await request(t.app).get("/_emulator/openapi.json");
  expect(control.status).toBe(200);
  controlDoc = control.body as Document;
  doc = {
    ...serviceDoc,
    tags: [...serviceDoc.tags, ...controlDoc.tags.filter((tag) => !serviceDoc.tags.some((s) => s.name === tag.name))],
    paths: { ...serviceDoc.paths, ...controlDoc.paths },
    components: {
      schemas: { ...serviceDoc.components.schemas, ...controlDoc.components.schemas },
      responses: { ...serviceDoc.components.responses, ...controlDoc.components.responses },
      securitySchemes: { ...serviceDoc.components.securitySchemes, ...controlDoc.components.securitySchemes },
    },
  };
  org = await signupOrg(t.app, { tier: "crab" });
  instanceId = (await runningInstance(t, org)).id;
});
afterAll(async () => {
  await t?.close();
});

const entries = Object.entries(routes) as [string, RouteSpec][];
const service = entries.filter(([, spec]) => spec.access.kind !== "admin");
const controlPlane = entries.filter(([, spec]) => spec.access.kind === "admin");

/** Follows a local `$ref` (`#/a/b`) to what it names; undefined when it names nothing. */
function pointer(ref: string, within: Document = doc): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = within;
  for (const part of ref.slice(2).split("/")) {
    if (!node || typeof node !== "object" || !Object.hasOwn(node, part)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
const deref = (schema: JsonSchema): JsonSchema => (schema.$ref ? deref(pointer(schema.$ref) as JsonSchema) : schema);
const bodySchema = (op: Operation) => {
  const schema = op.requestBody?.content["application/json"]?.schema;
  return schema && deref(schema);
};
/** Every `$ref` in a part of the document, with where it was found. */
function refs(node: unknown, at = "#", into: [string, string][] = []): [string, string][] {
  if (Array.isArray(node)) {
    for (const [i, v] of node.entries()) refs(v, `${at}/${i}`, into);
  } else if (node && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") into.push([at, v]);
      else refs(v, `${at}/${k}`, into);
    }
  }
  return into;
}

describe("GET /v1/openapi.json", () => {
  it("is OpenAPI 3.1", () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
  });

  it.each(entries)("documents %s with its method, path parameters, success status, errors and description", (id, spec) => {
    const op = doc.paths[spec.path]?.[spec.method.toLowerCase()];
    expect(op, `${spec.method} ${spec.path}`).toBeDefined();
    expect(op!.operationId).toBe(id);
    const pathParams = [...spec.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]);
    expect(op!.parameters.filter((p) => p.in === "path").map((p) => p.name)).toEqual(pathParams);
    expect(Object.keys(op!.responses)).toContain(String(spec.status));
    for (const status of spec.errors) expect(Object.keys(op!.responses)).toContain(String(status));
    const security = { public: [], admin: [{ adminToken: [] }, {}], org: [{ apiKey: [] }], instance: [{ apiKey: [] }] }[spec.access.kind];
    expect(op!.security).toEqual(security);
    expect(op!.tags).toEqual([spec.tag]);
    expect(op!.summary).toBe(spec.summary);
    expect(op!.description).toBe(operationDescriptions[id as keyof typeof operationDescriptions]);
    expect(op!.description.length).toBeGreaterThan(spec.summary.length);
    if (spec.body) expect(bodySchema(op!)).toBeDefined();
    else if (!spec.multipart) expect(op!.requestBody).toBeUndefined();
  });

  it("has every route of the table and every control-plane page, and nothing else; the control plane under its own described tag", () => {
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const expected = [...entries, ...Object.entries(pages)].map(([, s]) => `${s.method} ${s.path}`);
    expect(documented.sort()).toEqual(expected.sort());
    for (const [id, page] of Object.entries(pages)) {
      const op = doc.paths[page.path]![page.method.toLowerCase()]!;
      expect(op).toMatchObject({
        operationId: id,
        tags: ["emulator"],
        security: "admin" in page ? [{ adminToken: [] }, {}] : [],
        description: page.description,
      });
    }
    for (const [, spec] of controlPlane) {
      expect(spec.path.startsWith("/_emulator/")).toBe(true);
      expect(doc.paths[spec.path]![spec.method.toLowerCase()]!.tags).toEqual(["emulator"]);
    }
    for (const [, spec] of service) expect(spec.tag).not.toBe("emulator");
    expect(doc.tags.find((t) => t.name === "emulator")?.description).toMatch(/control plane/);
    // Every tag an operation uses is declared once, with a description.
    const used = new Set(entries.map(([, s]) => s.tag));
    expect(doc.tags.map((t) => t.name).sort()).toEqual([...used].sort());
    for (const tag of doc.tags) expect(tag.description, tag.name).toBeTruthy();
  });

  it("describes the web console's routes: its page, the events stream and its data routes, behind the admin rule", () => {
    const op = (path: string) => doc.paths[path]?.get;
    type Content = { content: Record<string, { schema: unknown }> };
    const answer = (path: string, status: string) => op(path)!.responses[status] as Content;
    for (const path of [
      "/_emulator/ui/{view}",
      "/_emulator/events",
      "/_emulator/console/state",
      "/_emulator/console/instances/{instance_id}/sessions/{session_id}",
      "/_emulator/console/requests/{request_id}",
    ]) {
      expect(op(path), path).toMatchObject({ tags: ["emulator"], security: [{ adminToken: [] }, {}] });
    }
    expect(Object.keys(answer("/_emulator/events", "200").content)).toEqual(["text/event-stream"]);
    expect(Object.keys(answer("/_emulator/ui/{view}", "200").content)).toEqual(["text/html"]);
    const turns = op("/_emulator/console/instances/{instance_id}/sessions/{session_id}")!;
    expect(turns.parameters).toContainEqual(
      expect.objectContaining({ name: "limit", in: "query", schema: expect.objectContaining({ minimum: 1, maximum: 1000 }) }),
    );
    expect(answer("/_emulator/console/instances/{instance_id}/sessions/{session_id}", "200").content["application/json"]!.schema).toEqual({
      $ref: "#/components/schemas/SessionTurns",
    });
    expect(turns.responses["422"]).toEqual({ $ref: "#/components/responses/ValidationFailed" });
  });

  it("names its schemas: every body and answer of a resource is a $ref into components/schemas", () => {
    const op = (path: string, method: string) => doc.paths[path]![method]!;
    const json = (o: Operation, status: number) =>
      (o.responses[status] as { content: Record<string, { schema: JsonSchema }> }).content["application/json"]!.schema;
    expect(op("/v1/organization/signup", "post").requestBody?.content["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/SignupRequest" });
    expect(json(op("/v1/instances/{instance_id}", "get"), 200)).toEqual({ $ref: "#/components/schemas/Instance" });
    expect(json(op("/v1/keys", "get"), 200)).toEqual({ type: "array", items: { $ref: "#/components/schemas/ScopedKey" } });
    expect(json(op("/v1/instances/{instance_id}/responses", "post"), 200)).toEqual({ $ref: "#/components/schemas/Response" });
    // Shared vocabularies are named once and referred to.
    expect(doc.components.schemas.Organization!.properties?.subscription_tier).toEqual({ $ref: "#/components/schemas/Tier" });
    expect(doc.components.schemas.Permission).toMatchObject({ type: "string", enum: ["read", "interact", "configure", "files", "channels"] });
    // Errors are one shared response per status, each with the error schema.
    expect(op("/v1/keys", "get").responses["401"]).toEqual({ $ref: "#/components/responses/Unauthorized" });
    expect(JSON.stringify(doc.components.responses.Unauthorized)).toContain('"#/components/schemas/Error"');
  });

  it("has every $ref resolve and every component used", () => {
    const all = refs(doc);
    expect(all.length).toBeGreaterThan(100);
    for (const [at, ref] of all) expect(pointer(ref), `${ref} at ${at}`).toBeDefined();
    const targets = new Set(all.map(([, ref]) => ref));
    for (const kind of ["schemas", "responses"] as const) {
      for (const name of Object.keys(doc.components[kind])) expect(targets.has(`#/components/${kind}/${name}`), `${kind}/${name} unused`).toBe(true);
    }
    // A security scheme is used by some operation.
    const schemes = new Set(Object.values(doc.paths).flatMap((ops) => Object.values(ops).flatMap((o) => o.security.flatMap((s) => Object.keys(s as object)))));
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual([...schemes].sort());
  });

  it("states integer bounds someone meant, never JavaScript's ±2^53", () => {
    const text = JSON.stringify(doc);
    expect(text).not.toContain(String(Number.MAX_SAFE_INTEGER));
    expect(doc.components.schemas.Organization!.properties?.instance_count).toEqual({ type: "integer", minimum: 0 });
  });

  it("has a license and names, as its server, the address it was asked at", async () => {
    expect(doc.info.license).toEqual({ name: "MIT", identifier: "MIT" });
    expect(doc.servers).toHaveLength(1);
    expect(new URL(doc.servers[0]!.url).protocol).toBe("http:");
    // Driven in-process (not listening): the Host the caller used, when it is a plain host.
    const asked = await request(t.app).get("/v1/openapi.json").set("host", "emulator.test:8080");
    expect((asked.body as Document).servers).toEqual([{ url: "http://emulator.test:8080", description: "This emulator" }]);
    const odd = await request(t.app).get("/v1/openapi.json").set("host", 'x"><script>');
    expect((odd.body as Document).servers).toEqual([{ url: "http://localhost", description: "This emulator" }]);
  });

  it("passes Redocly's recommended rules with no error and no warning", async () => {
    // Nothing is turned off: the document meets every recommended rule.
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: "openapi.json", config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it("states the request schemas the spec gives", () => {
    const schemaOf = (path: string, method: string) => bodySchema(doc.paths[path]![method]!)!;
    const prop = (schema: JsonSchema, name: string) => deref(schema.properties![name]!) as JsonSchema & { enum?: string[] };
    const signup = schemaOf("/v1/organization/signup", "post");
    expect(signup.required).toEqual(["name"]);
    expect(signup.properties?.name).toMatchObject({ type: "string", minLength: 1, maxLength: 128 });
    expect(signup.additionalProperties).toBe(false);

    const key = schemaOf("/v1/keys", "post");
    expect([...(key.required ?? [])].sort()).toEqual(["instance_ids", "name", "permissions"]);
    expect(prop(key, "permissions")).toMatchObject({ type: "array", items: { $ref: "#/components/schemas/Permission" } });

    const instance = schemaOf("/v1/instances", "post");
    expect(instance.required).toEqual(["name"]);
    expect(prop(instance, "model_provider").enum).toEqual(["anthropic", "openai", "gemini"]);

    const message = schemaOf("/v1/instances/{instance_id}/responses", "post");
    expect([...(message.required ?? [])].sort()).toEqual(["input", "model"]);
    expect(message.additionalProperties).not.toBe(false); // open: passed through

    expect(prop(schemaOf("/v1/subscription/checkout", "post"), "tier").enum).toEqual(["crab", "lobster"]);
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

describe("the two served documents", () => {
  it("/v1/openapi.json is exactly the service's API: every service route, no control-plane operation, page, tag or scheme", () => {
    const documented = Object.entries(serviceDoc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual(service.map(([, s]) => `${s.method} ${s.path}`).sort());
    expect(Object.keys(serviceDoc.paths).filter((p) => p.startsWith("/_emulator"))).toEqual([]);
    expect(serviceDoc.tags.map((t) => t.name)).not.toContain("emulator");
    expect(Object.keys(serviceDoc.components.securitySchemes)).toEqual(["apiKey"]);
    expect(serviceDoc.components.schemas.FaultRule).toBeUndefined();
  });

  it("/_emulator/openapi.json is the control plane's own: every control-plane route and page, nothing of /v1", () => {
    const documented = Object.entries(controlDoc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const expected = [...controlPlane, ...Object.entries(pages)].map(([, s]) => `${s.method} ${s.path}`);
    expect(documented.sort()).toEqual(expected.sort());
    expect(controlDoc.tags.map((t) => t.name)).toEqual(["emulator"]);
    expect(Object.keys(controlDoc.components.securitySchemes)).toEqual(["adminToken"]);
    expect(controlDoc.info.description).toMatch(/control plane/);
  });

  it.each([
    ["service", () => serviceDoc],
    ["control plane", () => controlDoc],
  ] as const)("the %s document stands alone: every $ref resolves in it and it lints clean", async (_name, get) => {
    const own = get();
    for (const [at, ref] of refs(own)) expect(pointer(ref, own), `${ref} at ${at}`).toBeDefined();
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: JSON.stringify(own), absoluteRef: "openapi.json", config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it("the control plane's document is behind the control plane's access rule", async () => {
    const locked = await startEmulator({ adminToken: "a-long-admin-token-for-this-test" });
    try {
      expect((await request(locked.app).get("/_emulator/openapi.json")).status).toBe(401);
      const opened = await request(locked.app).get("/_emulator/openapi.json").set("authorization", "Bearer a-long-admin-token-for-this-test");
      expect(opened.status).toBe(200);
      expect((await request(locked.app).get("/v1/openapi.json")).status).toBe(200);
    } finally {
      await locked.close();
    }
  });
});

describe("the service-only document", () => {
  const service = buildOpenApiDocument({ version: "1", serverUrl: "https://api.example.test", serviceOnly: true }) as unknown as Document;

  it("leaves out the control plane, its tag and its security scheme, and still lints clean", async () => {
    expect(Object.keys(service.paths).filter((p) => p.startsWith("/_emulator"))).toEqual([]);
    expect(service.tags.map((t) => t.name)).not.toContain("emulator");
    expect(Object.keys(service.components.securitySchemes)).toEqual(["apiKey"]);
    // Schemas only the control plane uses go with it.
    expect(service.components.schemas.FaultRule).toBeUndefined();
    expect(service.components.schemas.Instance).toBeDefined();
    const config = await createConfig({ extends: ["recommended"] });
    expect(await lintFromString({ source: JSON.stringify(service), absoluteRef: "openapi.json", config })).toEqual([]);
  });
});

describe("GET /v1/openapi.json on a listening emulator", () => {
  it("names the URL the emulator listens on as its server", async () => {
    const url = await t.emulator.listen(0, "127.0.0.1");
    const res = await fetch(`${url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    const served = (await res.json()) as Document;
    expect(served.servers).toEqual([{ url, description: "This emulator" }]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});
