/**
 * The Python and Go test helpers (testing/python, testing/go) are typed against the emulator's own
 * control-plane OpenAPI document: each ships a manifest (`control-plane.json`) of the operations
 * it calls and the fields of each body it sends and answer it parses, its own tests check its code
 * against that manifest (pytest, `go test`), and this file checks the manifest against the
 * document the emulator serves, field by field. A control-plane change that would break either
 * package (a renamed field, a new required one, a changed type or path) fails here, on every
 * machine, without Python or Go.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startEmulator, type TestEmulator } from "../helpers/emulator.js";

const ROOT = join(import.meta.dirname, "..", "..");
const MANIFESTS = {
  python: "testing/python/src/agent_bridge_testing/control-plane.json",
  go: "testing/go/agentbridgetest/control-plane.json",
};

const Manifest = z.object({
  about: z.string(),
  operations: z.record(
    z.string(),
    z.object({
      method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]),
      path: z.string(),
      status: z.number().int(),
      query: z.record(z.string(), z.string()).optional(),
      body: z.string().optional(),
      response: z.string().optional(),
    }),
  ),
  schemas: z.record(z.string(), z.record(z.string(), z.string())),
});
type Manifest = z.output<typeof Manifest>;

interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
}
interface Operation {
  operationId: string;
  parameters?: { name: string; in: string; schema: JsonSchema }[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema: JsonSchema }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema> };
}

type Direction = "request" | "response";

/** Every way the manifest differs from the document, one sentence each; none when it agrees. */
function checkManifest(manifest: Manifest, doc: Document): string[] {
  const problems: string[] = [];
  const resolve = (schema: JsonSchema): JsonSchema => {
    let s = schema;
    for (let depth = 0; s.$ref && depth < 10; depth++) s = doc.components.schemas[s.$ref.replace("#/components/schemas/", "")] ?? {};
    return s;
  };
  const typesOf = (s: JsonSchema): string[] => (s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type]);

  /** Whether `schema` allows null, and the schema without that null. */
  const splitNull = (schema: JsonSchema): { nullable: boolean; rest: JsonSchema } => {
    const s = resolve(schema);
    if (s.anyOf) {
      const others = s.anyOf.filter((a) => !typesOf(resolve(a)).includes("null") || typesOf(resolve(a)).length > 1);
      const nullable = others.length < s.anyOf.length;
      return { nullable, rest: others.length === 1 ? others[0]! : { anyOf: others } };
    }
    const types = typesOf(s);
    if (types.includes("null") && types.length > 1) {
      const left = types.filter((t) => t !== "null");
      return { nullable: true, rest: { ...s, type: left.length === 1 ? left[0]! : left } };
    }
    return { nullable: false, rest: s };
  };

  const compare = (type: string, schema: JsonSchema, where: string, direction: Direction, seen: Set<string>): void => {
    const { nullable, rest } = splitNull(schema);
    const wantsNull = type.endsWith("|null");
    if (wantsNull !== nullable) problems.push(`${where}: the package says ${type}, the document ${nullable ? "allows" : "does not allow"} null`);
    const t = wantsNull ? type.slice(0, -"|null".length) : type;
    const s = resolve(rest);
    const types = typesOf(s);
    const generic = /^(array|map)<(.+)>$/.exec(t);
    const enumerated = /^enum\((.+)\)$/.exec(t);
    if (["string", "integer", "number", "boolean"].includes(t)) {
      if (types.length !== 1 || types[0] !== t || s.enum) problems.push(`${where}: the package says ${t}, the document ${JSON.stringify(s)}`);
    } else if (t === "any") {
      if (types.length || s.anyOf || s.properties) problems.push(`${where}: the package takes any value, the document ${JSON.stringify(s)}`);
    } else if (t === "object") {
      if (types.length !== 1 || types[0] !== "object") problems.push(`${where}: the package says a JSON object, the document ${JSON.stringify(s)}`);
    } else if (generic) {
      const [, kind, inner] = generic;
      if (kind === "array") {
        if (types[0] !== "array" || !s.items) problems.push(`${where}: the package says an array, the document ${JSON.stringify(s)}`);
        else compare(inner!, s.items, `${where}[]`, direction, seen);
      } else if (types[0] !== "object" || typeof s.additionalProperties !== "object" || s.properties) {
        problems.push(`${where}: the package says a map, the document ${JSON.stringify(s)}`);
      } else compare(inner!, s.additionalProperties, `${where}{}`, direction, seen);
    } else if (enumerated) {
      const want = enumerated[1]!.split(",").sort();
      const have = (s.enum ?? []).map(String).sort();
      if (JSON.stringify(want) !== JSON.stringify(have))
        problems.push(`${where}: the package knows ${want.join(", ")}, the document ${have.join(", ") || JSON.stringify(s)}`);
    } else if (t.startsWith("#")) {
      const name = t.slice(1);
      const fields = manifest.schemas[name];
      if (!fields) {
        problems.push(`${where}: the manifest has no schema ${name}`);
        return;
      }
      if (seen.has(name)) return;
      if (types[0] !== "object" || !s.properties) {
        problems.push(`${where}: the package reads ${name} as an object, the document ${JSON.stringify(s)}`);
        return;
      }
      const required = new Set(s.required ?? []);
      const declared = new Set<string>();
      for (const [key, fieldType] of Object.entries(fields)) {
        const optional = key.endsWith("?");
        const field = optional ? key.slice(0, -1) : key;
        declared.add(field);
        const property = s.properties[field];
        if (!property) {
          problems.push(`${where}.${field}: the package ${direction === "request" ? "sends" : "reads"} it, the document has no such field`);
          continue;
        }
        if (optional === required.has(field)) {
          problems.push(`${where}.${field}: the package has it ${optional ? "optional" : "required"}, the document ${optional ? "required" : "optional"}`);
        }
        compare(fieldType, property, `${where}.${field}`, direction, new Set([...seen, name]));
      }
      for (const field of Object.keys(s.properties)) {
        if (!declared.has(field)) {
          problems.push(`${where}.${field}: the document has this field (${required.has(field) ? "required" : "optional"}), the package does not know it`);
        }
      }
    } else problems.push(`${where}: the manifest's type ${type} is not one it can state`);
  };

  for (const [id, op] of Object.entries(manifest.operations)) {
    const operation = doc.paths[op.path]?.[op.method.toLowerCase()];
    if (!operation) {
      problems.push(`${id}: the document has no ${op.method} ${op.path}`);
      continue;
    }
    if (operation.operationId !== id) problems.push(`${op.method} ${op.path}: the package calls it ${id}, the document ${operation.operationId}`);
    const answer = operation.responses[String(op.status)];
    if (!answer) problems.push(`${id}: the package expects ${op.status}, the document lists ${Object.keys(operation.responses).join(", ")}`);
    for (const [name, type] of Object.entries(op.query ?? {})) {
      const parameter = operation.parameters?.find((p) => p.in === "query" && p.name === name);
      if (!parameter) problems.push(`${id}: the package sends the query parameter ${name}, the document has none`);
      else compare(type, parameter.schema, `${id}?${name}`, "request", new Set());
    }
    for (const p of operation.parameters ?? []) {
      if (p.in === "query" && !(p.name in (op.query ?? {})))
        problems.push(`${id}: the document has the query parameter ${p.name}, the package does not know it`);
    }
    const body = operation.requestBody?.content["application/json"]?.schema;
    if (op.body && !body) problems.push(`${id}: the package sends a JSON body, the document takes none`);
    else if (!op.body && body) problems.push(`${id}: the document takes a JSON body, the package sends none`);
    else if (op.body && body) compare(op.body, body, `${id} body`, "request", new Set());
    const returned = answer?.content?.["application/json"]?.schema;
    if (op.response && !returned) problems.push(`${id}: the package reads a JSON answer, the document has none for ${op.status}`);
    else if (!op.response && returned) problems.push(`${id}: the document answers JSON on ${op.status}, the package reads none`);
    else if (op.response && returned) compare(op.response, returned, `${id} answer`, "response", new Set());
  }
  return problems;
}

let t: TestEmulator;
let doc: Document;
const manifests = Object.fromEntries(
  Object.entries(MANIFESTS).map(([name, path]) => [name, Manifest.parse(JSON.parse(readFileSync(join(ROOT, path), "utf8")))]),
) as Record<keyof typeof MANIFESTS, Manifest>;

beforeAll(async () => {
  t = await startEmulator();
  const res = await request(t.app).get("/_emulator/openapi.json");
  expect(res.status).toBe(200);
  doc = res.body as Document;
});
afterAll(async () => {
  await t?.close();
});

describe("the Python and Go helpers against the control plane's OpenAPI document", () => {
  it.each(Object.keys(MANIFESTS))("the %s package's manifest agrees with the document, operation by operation and field by field", (name) => {
    const manifest = manifests[name as keyof typeof MANIFESTS];
    expect(Object.keys(manifest.operations).length).toBeGreaterThan(10);
    expect(checkManifest(manifest, doc)).toEqual([]);
  });

  it("the two packages state the same control plane (one manifest, copied into each package)", () => {
    expect(manifests.go).toEqual(manifests.python);
  });

  it("a control-plane change fails the check: a renamed field, a field made nullable, a new required field, a moved path, a new query parameter", () => {
    const changed = structuredClone(doc);
    const schemas = changed.components.schemas;
    const created = schemas.SandboxCreated!;
    created.properties!.key = created.properties!.api_key!;
    delete created.properties!.api_key;
    created.required = created.required!.map((f) => (f === "api_key" ? "key" : f));
    schemas.SandboxClock!.properties!.offset_ms = { type: ["integer", "null"] };
    schemas.FaultRuleRequest!.properties!.scope = { type: "string" };
    schemas.FaultRuleRequest!.required = [...schemas.FaultRuleRequest!.required!, "scope"];
    changed.paths["/_emulator/sandboxes/{sandbox_id}/time"] = changed.paths["/_emulator/sandboxes/{sandbox_id}/clock"]!;
    delete changed.paths["/_emulator/sandboxes/{sandbox_id}/clock"];
    changed.paths["/_emulator/sandboxes/{sandbox_id}/requests"]!.get!.parameters!.push({ name: "since", in: "query", schema: { type: "string" } });
    const problems = checkManifest(manifests.python, changed);
    expect(problems).toEqual(
      expect.arrayContaining([
        "adminCreateSandbox answer.api_key: the package reads it, the document has no such field",
        "adminCreateSandbox answer.key: the document has this field (required), the package does not know it",
        "adminCreateSandbox answer.clock.offset_ms: the package says integer, the document allows null",
        "adminSandboxCreateFault body.scope: the document has this field (required), the package does not know it",
        "adminSandboxClock: the document has no POST /_emulator/sandboxes/{sandbox_id}/clock",
        "adminSandboxRequests: the document has the query parameter since, the package does not know it",
      ]),
    );
  });
});
