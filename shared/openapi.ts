/**
 * The OpenAPI 3.1 document, built from the route table and its zod schemas
 * (JSON Schema 2020-12 is OpenAPI 3.1's dialect), so it cannot drift from
 * what the emulator validates.
 */
import { z } from "zod";
import { routes, type RouteSpec } from "./api.js";
import { ErrorBody } from "./schemas/common.js";

type JsonSchema = Record<string, unknown>;

const schemaOf = (schema: z.ZodType, io: "input" | "output"): JsonSchema => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;
  return rest;
};

const REASONS: Record<number, string> = {
  400: "Unusable input (not JSON, path escaping the root, credentials of the wrong form)",
  401: "No key, not Bearer, or unknown key",
  402: "Instance limit reached",
  403: "Key expired, revoked, or not allowed here",
  404: "Unknown id, another organization's, or terminated",
  409: "Wrong state for the action, or path already exists",
  413: "Body or upload too large",
  422: "Failed validation: detail lists {loc, msg, type}",
  501: "Not implemented by the emulator",
  502: "The instance gateway failed",
};

export function buildOpenApiDocument(options: { version: string; serverUrl?: string; includeEmulator?: boolean }): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  const errorSchema = schemaOf(ErrorBody, "output");
  for (const [operationId, spec] of Object.entries(routes) as [string, RouteSpec][]) {
    if (spec.access.kind === "admin" && !options.includeEmulator) continue;
    const params = [...spec.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    const query: unknown[] = [];
    if (spec.query) {
      const q = schemaOf(spec.query, "input") as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {})) {
        query.push({ name, in: "query", required: q.required?.includes(name) ?? false, schema });
      }
    }
    const responses: Record<string, unknown> = {};
    if (spec.response === "empty") responses[spec.status] = { description: "Done" };
    else if (spec.response === "binary") responses[spec.status] = { description: "File contents", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } };
    else if (spec.response === "any") responses[spec.status] = { description: "JSON", content: { "application/json": { schema: {} } } };
    else {
      const content: Record<string, unknown> = { "application/json": { schema: schemaOf(spec.response, "output") } };
      if (spec.streams) content["text/event-stream"] = { schema: { type: "string", description: "Server-sent events when the body asks stream: true" } };
      responses[spec.status] = { description: "Success", content };
    }
    for (const status of spec.errors) {
      responses[status] = { description: REASONS[status] ?? "Error", content: { "application/json": { schema: errorSchema } } };
    }
    const operation: Record<string, unknown> = {
      operationId,
      summary: spec.summary,
      tags: [spec.tag],
      parameters: [...params, ...query],
      responses,
      security: spec.access.kind === "public" ? [] : spec.access.kind === "admin" ? [{ adminToken: [] }] : [{ apiKey: [] }],
    };
    if (spec.access.kind === "instance") operation["x-required-permission"] = spec.access.permission;
    if (spec.access.kind === "org") operation["x-required-key"] = "organization";
    if (spec.body) operation.requestBody = { required: true, content: { "application/json": { schema: schemaOf(spec.body, "input") } } };
    if (spec.multipart) {
      operation.requestBody = {
        required: true,
        content: {
          "multipart/form-data": {
            schema: { type: "object", required: ["path", "file"], properties: { path: { type: "string" }, file: { type: "string", format: "binary" } } },
          },
        },
      };
    }
    (paths[spec.path] ??= {})[spec.method.toLowerCase()] = operation;
  }
  return {
    openapi: "3.1.0",
    info: { title: "Agent instance hosting service", version: options.version },
    servers: options.serverUrl ? [{ url: options.serverUrl }] : [],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "svc_org_ organization key or svc_sk_ scoped key" },
        adminToken: { type: "http", scheme: "bearer", description: "The emulator's --admin-token (control plane only)" },
      },
    },
  };
}
