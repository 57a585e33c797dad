/**
 * The OpenAPI 3.1 document, built from the route table and its zod schemas
 * (JSON Schema 2020-12 is OpenAPI 3.1's dialect), so it cannot drift from
 * what the emulator validates. Schemas named in `schemas/components.ts` become
 * `components/schemas` and are referred to with `$ref`; anything else an
 * operation uses (a list of a named schema, a query) is written in place.
 */
import { z } from "zod";
import { operationDescriptions, routes, tagDescriptions, type OperationId, type RouteSpec } from "./api.js";
import { pages, type PageSpec } from "./pages.js";
import { ErrorBody } from "./schemas/common.js";
import { GatewayErrorBody } from "./schemas/responses.js";
import { apiComponents, namedSchemas } from "./schemas/components.js";

type JsonSchema = Record<string, unknown>;
type Io = "input" | "output";

const COMPONENT = "#/components/schemas/";

/** Error answers, shared by every operation through `components/responses`. */
const ERROR_RESPONSES: Record<number, { name: string; description: string }> = {
  400: { name: "BadRequest", description: "Unusable input: not JSON, a path escaping the instance root, credentials of the wrong form" },
  401: { name: "Unauthorized", description: "No key, not a Bearer key, or an unknown key" },
  402: { name: "InstanceLimitReached", description: "The plan's instance limit is reached" },
  403: { name: "Forbidden", description: "Key expired or revoked, or not allowed this operation or instance" },
  404: { name: "NotFound", description: "Unknown id, another organization's, a terminated instance, or a missing path" },
  409: { name: "Conflict", description: "Wrong state for the action, or a path already exists" },
  413: { name: "TooLarge", description: "A JSON body over 1 MiB, an upload over the limit, or a text file too big to read as text" },
  422: { name: "ValidationFailed", description: "The body or query failed validation: `detail` lists `{loc, msg, type}`" },
  429: { name: "RateLimited", description: "Too many requests; `retry-after` (seconds) says when to try again" },
  501: { name: "NotImplemented", description: "Not implemented by the emulator" },
  502: { name: "BadGateway", description: "The instance gateway could not be reached or broke the exchange" },
};

/** A message route's error that may come from the instance gateway: `BadRequest` -> `GatewayBadRequest`. */
const gatewayResponseName = (status: number): string => `Gateway${ERROR_RESPONSES[status]!.name}`;

/**
 * The answer for a status the gateway may give itself: its OpenAI error body
 * (only that for 429, which the API never answers on its own), else either
 * shape; with `retry-after` when the gateway sends one.
 */
function gatewayErrorResponse(status: number, errorSchema: JsonSchema, gatewayErrorSchema: JsonSchema): JsonSchema {
  const onlyGateway = status === 429;
  const retry = {
    "retry-after": {
      description: "Seconds to wait before trying again (sent with a 429, or when a model script says so)",
      schema: { type: "integer", minimum: 0 },
    },
    "retry-after-ms": { description: "The same wait in milliseconds (the OpenAI SDKs read it first)", schema: { type: "integer", minimum: 0 } },
  };
  return {
    description: onlyGateway
      ? `${ERROR_RESPONSES[status]!.description}: the instance gateway's error, in the OpenAI shape`
      : `${ERROR_RESPONSES[status]!.description}; or the instance gateway's own error, in the OpenAI shape (\`{error: {type, code, param, message}}\`, e.g. \`previous_response_not_found\`)`,
    headers: retry,
    content: { "application/json": { schema: onlyGateway ? gatewayErrorSchema : { oneOf: [errorSchema, gatewayErrorSchema] } } },
  };
}

const PATH_PARAMETERS: Record<string, string> = {
  instance_id: "The instance's id (UUID).",
  session_id: "A session name chosen by the client; the session is created on first use.",
  key_id: "The scoped key's id (UUID).",
  channel: "A channel of the catalog, e.g. `telegram` or `whatsapp`.",
  skill_name: "An installed skill's name.",
  fault_id: "The fault rule's id.",
  sandbox_id: "The sandbox's id (`sbx_...`).",
  organization_id: "The organization's id (UUID).",
  session: "The billing session's id, from a checkout or portal URL.",
  response_id: "A response's id (`resp_...`).",
  request_id: "A request log line's id (a positive integer, from a `request` event).",
  view: "A console view's path, e.g. `instances` or `instances/{id}/sessions/{session}` (may hold slashes).",
};

const pathParameters = (path: string) =>
  [...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => ({
    name: m[1],
    in: "path",
    required: true,
    description: PATH_PARAMETERS[m[1]!],
    schema: { type: "string" },
  }));

/** A browser page of the control plane (`pages.ts`): described, with no body schema. */
function pageOperation(operationId: string, page: PageSpec): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const [status, { description, type }] of Object.entries(page.responses)) {
    responses[status] = type ? { description, content: { [type]: { schema: { type: "string" } } } } : { description };
  }
  const operation: Record<string, unknown> = {
    operationId,
    summary: page.summary,
    description: page.description,
    tags: ["emulator"],
    parameters: pathParameters(page.path),
    responses,
    security: page.admin ? [{ adminToken: [] }, {}] : [],
  };
  return operation;
}

/**
 * zod states `.int()` as ±2^53 (JavaScript's safe integers); a client generator
 * reads that as a 64-bit bound nobody meant. Only bounds a schema sets on purpose stay.
 */
function dropSafeIntegerBounds(ctx: { jsonSchema: JsonSchema }): void {
  const s = ctx.jsonSchema;
  if (s.minimum === Number.MIN_SAFE_INTEGER) delete s.minimum;
  if (s.maximum === Number.MAX_SAFE_INTEGER) delete s.maximum;
}

interface Generated {
  /** Named schemas, as one io sees them. */
  schemas: Record<string, JsonSchema>;
  /** Each operation's own (unnamed) schema, keyed by an internal id. */
  inline: Map<string, JsonSchema>;
}

/** Converts every named schema plus `extra` (operation-local ones) in one pass, so nested named schemas become `$ref`s. */
function generate(extra: Map<string, z.ZodType>, io: Io): Generated {
  const registry = z.registry<{ id: string; description?: string }>();
  const named = new Set<string>();
  for (const schema of namedSchemas) {
    const meta = apiComponents.get(schema)!;
    registry.add(schema, { id: meta.id, description: meta.description });
    named.add(meta.id);
  }
  for (const [id, schema] of extra) if (!registry.has(schema)) registry.add(schema, { id });
  const out = z.toJSONSchema(registry, {
    io,
    uri: (id) => COMPONENT + id,
    unrepresentable: "any",
    override: dropSafeIntegerBounds,
  }) as { schemas: Record<string, JsonSchema> };
  const schemas: Record<string, JsonSchema> = {};
  const inline = new Map<string, JsonSchema>();
  for (const [id, raw] of Object.entries(out.schemas)) {
    const { $schema: _s, $id: _i, ...schema } = raw;
    if (named.has(id)) schemas[id] = schema;
    else inline.set(id, schema);
  }
  return { schemas, inline };
}

/** Every `$ref` to a named schema inside `value`. */
function refsIn(value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const v of value) refsIn(v, into);
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string" && v.startsWith(COMPONENT)) into.add(v.slice(COMPONENT.length));
      else refsIn(v, into);
    }
  }
  return into;
}

/** The named schemas `roots` use, directly or through each other. */
function closure(roots: Set<string>, schemas: Record<string, JsonSchema>): Set<string> {
  const seen = new Set<string>();
  const queue = [...roots];
  while (queue.length) {
    const id = queue.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    for (const next of refsIn(schemas[id], new Set())) queue.push(next);
  }
  return seen;
}

export interface OpenApiOptions {
  version: string;
  /** Where the API is served, e.g. `http://127.0.0.1:8080` (the `servers` entry). */
  serverUrl: string;
  /** Leave the control plane out: the service's own API, what `/v1/openapi.json` serves (default false). */
  serviceOnly?: boolean;
  /** Only the emulator's control plane (`/_emulator`) and its pages, what `/_emulator/openapi.json` serves (default false). */
  controlPlaneOnly?: boolean;
}

const DESCRIPTIONS = {
  all: "The hosting service's `/v1` API as the agent-bridge emulator implements it: organizations, scoped keys, instances, messaging in the OpenAI Responses format, channels, skills and workspace files, plus the emulator's own control plane under `/_emulator`. Errors answer `{detail}`, except an instance gateway's own 4xx on a message call, which passes through in the OpenAI error shape `{error: {type, code, param, message}}`.",
  service:
    "The hosting service's `/v1` API as the agent-bridge emulator implements it: organizations, scoped keys, instances, messaging in the OpenAI Responses format, channels, skills and workspace files. Errors answer `{detail}`, except an instance gateway's own 4xx on a message call, which passes through in the OpenAI error shape `{error: {type, code, param, message}}`. The emulator's control plane has a document of its own at `/_emulator/openapi.json`.",
  control:
    "The agent-bridge emulator's own control plane under `/_emulator`: health, reset, snapshots, fault rules, forced states, the request journal, the web console and its data. Not part of the hosting service's API (that is `/v1/openapi.json`). Errors always answer `{detail}`.",
};

export function buildOpenApiDocument(options: OpenApiOptions): JsonSchema {
  if (options.serviceOnly && options.controlPlaneOnly) throw new Error("openapi: ask for serviceOnly or controlPlaneOnly, not both");
  const entries = (Object.entries(routes) as [OperationId, RouteSpec][]).filter(([, spec]) =>
    options.serviceOnly ? spec.access.kind !== "admin" : options.controlPlaneOnly ? spec.access.kind === "admin" : true,
  );

  // Each operation's unnamed schemas, under internal ids (one per schema, however many operations share it).
  const local = { input: new Map<z.ZodType, string>(), output: new Map<z.ZodType, string>() };
  const note = (io: Io, schema: z.ZodType, id: string) => {
    if (!apiComponents.has(schema) && !local[io].has(schema)) local[io].set(schema, id);
  };
  for (const [id, spec] of entries) {
    if (spec.body) note("input", spec.body, `${id}.body`);
    if (spec.query) note("input", spec.query, `${id}.query`);
    if (typeof spec.response === "object") note("output", spec.response, `${id}.response`);
  }
  const byId = (m: Map<z.ZodType, string>) => new Map([...m].map(([schema, id]) => [id, schema]));
  const input = generate(byId(local.input), "input");
  const output = generate(byId(local.output), "output");

  const schemaFor = (schema: z.ZodType, io: Io): JsonSchema => {
    const meta = apiComponents.get(schema);
    if (meta) return { $ref: COMPONENT + meta.id };
    const found = (io === "input" ? input : output).inline.get(local[io].get(schema) ?? "");
    if (!found) throw new Error("openapi: an operation's schema was not generated");
    return structuredClone(found);
  };

  const usedResponses = new Set<number>();
  /** Statuses some message route answers with the gateway's own error body too. */
  const usedGatewayResponses = new Set<number>();
  const paths: Record<string, Record<string, unknown>> = {};
  const roots = { input: new Set<string>(), output: new Set<string>() };
  for (const [operationId, spec] of entries) {
    const parameters: unknown[] = pathParameters(spec.path);
    if (spec.query) {
      const q = schemaFor(spec.query, "input") as { properties?: Record<string, JsonSchema>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {})) {
        refsIn(schema, roots.input);
        parameters.push({ name, in: "query", required: q.required?.includes(name) ?? false, schema });
      }
    }

    const responses: Record<string, unknown> = {};
    if (spec.response === "empty") responses[spec.status] = { description: "Done; no body" };
    else if (spec.response === "binary") {
      responses[spec.status] = { description: "The file's bytes", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } };
    } else if (spec.response === "any") {
      responses[spec.status] = { description: "A JSON document", content: { "application/json": { schema: { type: "object" } } } };
    } else {
      const schema = schemaFor(spec.response, "output");
      refsIn(schema, roots.output);
      const content: Record<string, unknown> = { "application/json": { schema } };
      if (spec.streams)
        content["text/event-stream"] = {
          schema: {
            type: "string",
            description: "Server-sent events (`response.created`, `response.output_text.delta`, ..., `response.completed`) when the body asks `stream: true`",
          },
        };
      responses[spec.status] = { description: "Success", content };
    }
    for (const status of spec.errors) {
      if (!ERROR_RESPONSES[status]) throw new Error(`openapi: ${operationId} names status ${status}, which has no description`);
      const fromGateway = spec.gatewayErrors?.includes(status) === true;
      (fromGateway ? usedGatewayResponses : usedResponses).add(status);
      responses[status] = { $ref: `#/components/responses/${fromGateway ? gatewayResponseName(status) : ERROR_RESPONSES[status].name}` };
    }

    const operation: Record<string, unknown> = {
      operationId,
      summary: spec.summary,
      description: operationDescriptions[operationId],
      tags: [spec.tag],
      parameters,
      responses,
      // The control plane is open on loopback (no key) and needs the admin token elsewhere.
      security: spec.access.kind === "public" ? [] : spec.access.kind === "admin" ? [{ adminToken: [] }, {}] : [{ apiKey: [] }],
    };
    if (spec.access.kind === "instance") operation["x-required-permission"] = spec.access.permission;
    if (spec.access.kind === "org") operation["x-required-key"] = "organization";
    if (spec.body) {
      const schema = schemaFor(spec.body, "input");
      refsIn(schema, roots.input);
      operation.requestBody = { required: true, content: { "application/json": { schema } } };
    }
    if (spec.multipart) {
      operation.requestBody = {
        required: true,
        content: {
          "multipart/form-data": {
            schema: {
              type: "object",
              required: ["path", "file"],
              properties: {
                path: { type: "string", description: "Destination, relative to the instance root; send it before `file`" },
                file: { type: "string", format: "binary" },
              },
            },
          },
        },
      };
    }
    const item = paths[spec.path] ?? {};
    item[spec.method.toLowerCase()] = operation;
    paths[spec.path] = item;
  }
  if (!options.serviceOnly) {
    for (const [operationId, page] of Object.entries(pages) as [string, PageSpec][]) {
      const item = paths[page.path] ?? {};
      item[page.method.toLowerCase()] = pageOperation(operationId, page);
      paths[page.path] = item;
    }
  }
  const errorSchema = schemaFor(ErrorBody, "output");
  if (usedResponses.size || usedGatewayResponses.size) refsIn(errorSchema, roots.output);
  const gatewayErrorSchema = schemaFor(GatewayErrorBody, "output");
  if (usedGatewayResponses.size) refsIn(gatewayErrorSchema, roots.output);

  // A named schema is written as requests see it (input) or as answers do
  // (output); one used both ways must read the same either way.
  const asInput = closure(roots.input, input.schemas);
  const asOutput = closure(roots.output, output.schemas);
  const schemas: Record<string, JsonSchema> = {};
  for (const schema of namedSchemas) {
    const id = apiComponents.get(schema)!.id;
    if (asInput.has(id) && asOutput.has(id) && JSON.stringify(input.schemas[id]) !== JSON.stringify(output.schemas[id])) {
      throw new Error(`openapi: schema ${id} reads differently in requests and answers; name the two separately`);
    }
    if (asOutput.has(id)) schemas[id] = output.schemas[id]!;
    else if (asInput.has(id)) schemas[id] = input.schemas[id]!;
  }

  const responsesComponent: Record<string, unknown> = {};
  for (const status of [...usedResponses].sort()) {
    const { name, description } = ERROR_RESPONSES[status]!;
    responsesComponent[name] = { description, content: { "application/json": { schema: errorSchema } } };
  }
  for (const status of [...usedGatewayResponses].sort()) {
    responsesComponent[gatewayResponseName(status)] = gatewayErrorResponse(status, errorSchema, gatewayErrorSchema);
  }

  const usedTags = new Set(entries.map(([, spec]) => spec.tag));
  if (!options.serviceOnly) usedTags.add("emulator");
  const security = new Set(entries.map(([, spec]) => spec.access.kind));
  const securitySchemes: Record<string, unknown> = {};
  if (security.has("org") || security.has("instance")) {
    securitySchemes.apiKey = { type: "http", scheme: "bearer", description: "An organization key (`svc_org_...`) or a scoped key (`svc_sk_...`)" };
  }
  if (security.has("admin")) {
    securitySchemes.adminToken = {
      type: "http",
      scheme: "bearer",
      description: "The emulator's `--admin-token`, needed on the control plane when one was set",
    };
  }

  return {
    openapi: "3.1.0",
    info: {
      title: options.controlPlaneOnly ? "Agent instance hosting service emulator: control plane" : "Agent instance hosting service",
      version: options.version,
      description: DESCRIPTIONS[options.serviceOnly ? "service" : options.controlPlaneOnly ? "control" : "all"],
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: options.serverUrl, description: "This emulator" }],
    tags: [...new Set([...Object.keys(tagDescriptions), ...usedTags])]
      .filter((name) => usedTags.has(name))
      .map((name) => ({ name, description: tagDescriptions[name] })),
    paths,
    components: { schemas, responses: responsesComponent, securitySchemes },
  };
}
