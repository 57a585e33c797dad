/**
 * The contract as a checker: given what a server answered on a route (status,
 * headers, parsed body or a stream's events) or what a client sent, every
 * place it departs from the contract. The contract is the OpenAPI document
 * built from the route table (shared/openapi.ts), so the emulator, its
 * published document, the validating proxy and the conformance kit all judge
 * by one set of schemas; streamed events are judged by the event schemas the
 * typed client parses with (shared/schemas/responses.ts).
 */
import { createParser } from "eventsource-parser";
import { z } from "zod";
import { buildOpenApiDocument } from "../openapi.js";
import { KnownStreamEvent } from "../schemas/responses.js";
import type { Drift } from "./drift.js";
import { checkAgainstSchema, describeValue, jsonTypeOf, type SchemaDrift } from "./schema-check.js";

type Schema = Record<string, unknown>;
const isRecord = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** Header values as node (`IncomingHttpHeaders`) or fetch (`Headers`) give them. */
export type HeadersInput = Headers | Record<string, string | string[] | number | undefined>;

/** One server-sent event as it came: its `event:` name (if any) and its `data:` text. */
export interface StreamEventInput {
  event?: string | undefined;
  data: string;
}

export interface RouteMatch {
  /** `METHOD /template`, the `route` of every drift on it. */
  route: string;
  method: string;
  /** The path template, e.g. `/v1/instances/{instance_id}`. */
  template: string;
  params: Record<string, string>;
}

export interface RequestInput {
  method: string;
  /** The path template (or the route string `METHOD /template`). */
  route: string;
  headers?: HeadersInput;
  query?: URLSearchParams | Record<string, string | string[] | undefined>;
  /** The parsed JSON body; undefined when there is none. */
  body?: unknown;
}

export interface ResponseInput {
  method: string;
  route: string;
  status: number;
  headers?: HeadersInput;
  /** The parsed JSON body; undefined when there is none. */
  body?: unknown;
}

export interface StreamInput {
  method: string;
  route: string;
  events: readonly StreamEventInput[];
  /** The stream ended (the server closed it); then it must have ended with a terminal event. Default true. */
  ended?: boolean;
}

export interface ResponseTextInput {
  method: string;
  route: string;
  status: number;
  headers?: HeadersInput;
  /** The whole body as text, however it is framed (JSON, server-sent events, empty). */
  text: string;
}

export interface ContractValidator {
  /** The OpenAPI document it judges by (walk `paths` for every operation). */
  readonly document: Schema;
  /** The route a concrete request path falls on; undefined when the contract has no such method and path. */
  matchRoute(method: string, path: string): RouteMatch | undefined;
  /** A request's body and query against the route's request schemas. Drifts carry `side: "request"`. */
  checkRequest(input: RequestInput): Drift[];
  /** An answer's status, content type, named headers and JSON body. A streamed answer's events go to `checkStream`. */
  checkResponse(input: ResponseInput): Drift[];
  /** A streamed answer's events, one by one, then the stream as a whole. */
  checkStream(input: StreamInput): Drift[];
  /** An answer given as text: parsed by its content type (JSON, server-sent events, none), then checked as the two above do. */
  checkResponseText(input: ResponseTextInput): Drift[];
}

export interface ContractValidatorOptions {
  /** The OpenAPI document to judge by; default the one built from the route table (service and control plane). */
  document?: Schema;
}

const TERMINAL_EVENTS = ["response.completed", "response.failed", "response.incomplete", "error"];
const METHODS = ["get", "post", "put", "patch", "delete"];

/** Lower-cased header name -> value (several values joined by `, `). */
export function normalizeHeaders(headers: HeadersInput | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!headers) return out;
  if (headers instanceof Headers) {
    for (const [name, value] of headers) out.set(name.toLowerCase(), value);
    return out;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out.set(name.toLowerCase(), Array.isArray(value) ? value.join(", ") : String(value));
  }
  return out;
}

/** The media type of a `content-type` value, lower-cased, without parameters. */
export const mediaTypeOf = (contentType: string | undefined): string | undefined => contentType?.split(";")[0]?.trim().toLowerCase() || undefined;

/** Splits a server-sent event stream's text into its events (the parser the typed client uses). */
export function parseEventStream(text: string): StreamEventInput[] {
  const events: StreamEventInput[] = [];
  const parser = createParser({ onEvent: (message) => events.push({ event: message.event, data: message.data }) });
  parser.feed(text);
  // A last event without its blank line still counts: the stream's end closes it.
  parser.feed("\n\n");
  return events;
}

/** One JSON Schema per known event `type`, generated from the same zod schemas the client parses events with. */
function eventSchemas(): Map<string, Schema> {
  const out = new Map<string, Schema>();
  for (const option of KnownStreamEvent.options) {
    out.set(option.shape.type.value, z.toJSONSchema(option, { io: "output", unrepresentable: "any" }) as Schema);
  }
  return out;
}

let defaultDocument: Schema | undefined;

export function createContractValidator(options: ContractValidatorOptions = {}): ContractValidator {
  defaultDocument ??= options.document ? undefined : buildOpenApiDocument({ version: "contract", serverUrl: "http://localhost" });
  const document = options.document ?? defaultDocument!;
  const paths = isRecord(document.paths) ? document.paths : {};
  const events = eventSchemas();

  /** `#/components/...` in the document, `#/$defs/...` in `root` (a standalone event schema). */
  const resolverFor =
    (root?: Schema) =>
    (ref: string): Schema | undefined => {
      const parts = ref.replace(/^#\//, "").split("/").map(decodePointer);
      let node: unknown = ref.startsWith("#/components/") ? document : root;
      if (ref === "#") return root;
      for (const part of parts) node = isRecord(node) ? node[part] : undefined;
      return isRecord(node) ? node : undefined;
    };
  const resolve = resolverFor();
  const deref = (node: unknown): Schema | undefined => {
    let current = node;
    for (let i = 0; i < 8 && isRecord(current) && typeof current.$ref === "string"; i++) current = resolve(current.$ref);
    return isRecord(current) ? current : undefined;
  };

  const templates = Object.keys(paths)
    .map((template) => {
      const names = [...template.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!);
      const source = template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{([a-z_]+)\}/g, (_, name: string) => (name === "view" ? "(.+)" : "([^/]+)"));
      return { template, names, re: new RegExp(`^${source}$`) };
    })
    // A literal segment wins over a parameter: fewer parameters first.
    .sort((a, b) => a.names.length - b.names.length || b.template.length - a.template.length);

  const split = (method: string, route: string): { method: string; template: string; label: string } => {
    const m = /^([A-Za-z]+)\s+(\/.*)$/.exec(route);
    const verb = (m ? m[1]! : method).toUpperCase();
    const template = m ? m[2]! : route;
    return { method: verb, template, label: `${verb} ${template}` };
  };
  const operationOf = (method: string, template: string): Schema | undefined => {
    const item = paths[template];
    const op = isRecord(item) ? item[method.toLowerCase()] : undefined;
    return isRecord(op) ? op : undefined;
  };
  const noRoute = (label: string, side?: "request"): Drift => ({
    route: label,
    jsonPath: "route",
    expected: "a route of the contract",
    actual: label,
    kind: "route",
    ...(side ? { side } : {}),
  });
  const tag = (label: string, drifts: SchemaDrift[], side?: "request"): Drift[] => drifts.map((d) => ({ route: label, ...d, ...(side ? { side } : {}) }));

  const matchRoute = (method: string, path: string): RouteMatch | undefined => {
    const verb = method.toUpperCase();
    const pathname = path.split("?")[0]!;
    for (const { template, names, re } of templates) {
      const m = re.exec(pathname);
      if (!m || !operationOf(verb, template)) continue;
      const params: Record<string, string> = {};
      names.forEach((name, i) => {
        params[name] = safeDecode(m[i + 1]!);
      });
      return { route: `${verb} ${template}`, method: verb, template, params };
    }
    return undefined;
  };

  const checkRequest = (input: RequestInput): Drift[] => {
    const { method, template, label } = split(input.method, input.route);
    const op = operationOf(method, template);
    if (!op) return [noRoute(label, "request")];
    const out: SchemaDrift[] = [];
    const query = input.query instanceof URLSearchParams ? Object.fromEntries(input.query) : (input.query ?? {});
    for (const parameter of Array.isArray(op.parameters) ? op.parameters : []) {
      if (!isRecord(parameter) || parameter.in !== "query" || typeof parameter.name !== "string") continue;
      const raw = query[parameter.name];
      const value = Array.isArray(raw) ? raw[0] : raw;
      const at = `query.${parameter.name}`;
      if (value === undefined) {
        if (parameter.required === true) out.push({ jsonPath: at, expected: "present", actual: "absent", kind: "missing" });
      } else out.push(...checkAgainstSchema(parameter.schema, value, { resolve, at }));
    }
    const requestBody = isRecord(op.requestBody) ? op.requestBody : undefined;
    const content = requestBody && isRecord(requestBody.content) ? requestBody.content : {};
    const json = isRecord(content["application/json"]) ? content["application/json"] : undefined;
    if (json && input.body === undefined && requestBody?.required === true) {
      out.push({ jsonPath: "$", expected: "a JSON body", actual: "absent", kind: "body" });
    } else if (json && input.body !== undefined) out.push(...checkAgainstSchema(json.schema, input.body, { resolve }));
    return tag(label, out, "request");
  };

  /** The response object for a status: its own, else `default`, resolved through `$ref`. */
  const responseSpec = (op: Schema, status: number): Schema | undefined => {
    const responses = isRecord(op.responses) ? op.responses : {};
    return deref(responses[String(status)] ?? responses.default);
  };

  const checkHeaders = (spec: Schema, headers: Map<string, string>, out: SchemaDrift[]): void => {
    const named = isRecord(spec.headers) ? spec.headers : {};
    for (const [name, raw] of Object.entries(named)) {
      const header = deref(raw);
      if (!header) continue;
      const value = headers.get(name.toLowerCase());
      const at = `headers.${name.toLowerCase()}`;
      if (value === undefined) {
        if (header.required === true) out.push({ jsonPath: at, expected: "present", actual: "absent", kind: "header" });
        continue;
      }
      const schema = deref(header.schema) ?? {};
      const numeric = schema.type === "integer" || schema.type === "number";
      const parsed = numeric && value.trim() !== "" && Number.isFinite(Number(value)) ? Number(value) : value;
      for (const d of checkAgainstSchema(schema, parsed, { resolve, at })) out.push({ ...d, kind: "header" });
    }
  };

  /** Status, then content type and headers; returns the content entry the body must match (or undefined when it must be empty). */
  const checkEnvelope = (
    op: Schema,
    status: number,
    headers: Map<string, string>,
    hasBody: boolean,
    out: SchemaDrift[],
  ): { content?: Schema; mediaType?: string; stop: boolean } => {
    const spec = responseSpec(op, status);
    if (!spec) {
      const listed = Object.keys(isRecord(op.responses) ? op.responses : {}).join(", ");
      out.push({ jsonPath: "status", expected: listed, actual: String(status), kind: "status" });
      return { stop: true };
    }
    checkHeaders(spec, headers, out);
    const content = isRecord(spec.content) ? spec.content : undefined;
    if (!content || Object.keys(content).length === 0) {
      if (hasBody) out.push({ jsonPath: "$", expected: "no body", actual: "a body", kind: "body" });
      return { stop: true };
    }
    const mediaType = mediaTypeOf(headers.get("content-type"));
    const entries = Object.entries(content);
    const binary = entries.find(([, c]) => isRecord(c) && isRecord(c.schema) && c.schema.format === "binary");
    if (binary) return { stop: true }; // a file's bytes: any type, any body
    const entry = mediaType ? content[mediaType] : undefined;
    if (!mediaType || !isRecord(entry)) {
      out.push({ jsonPath: "headers.content-type", expected: Object.keys(content).join(" or "), actual: mediaType ?? "absent", kind: "content_type" });
      return { stop: true };
    }
    if (!hasBody) {
      out.push({ jsonPath: "$", expected: `a ${mediaType} body`, actual: "empty", kind: "body" });
      return { stop: true };
    }
    return { content: entry, mediaType, stop: false };
  };

  const checkResponse = (input: ResponseInput): Drift[] => {
    const { method, template, label } = split(input.method, input.route);
    const op = operationOf(method, template);
    if (!op) return [noRoute(label)];
    const out: SchemaDrift[] = [];
    const headers = normalizeHeaders(input.headers);
    const envelope = checkEnvelope(op, input.status, headers, input.body !== undefined, out);
    if (!envelope.stop && envelope.content) {
      if (envelope.mediaType === "application/json") out.push(...checkAgainstSchema(envelope.content.schema, input.body, { resolve }));
      else if (typeof input.body !== "string")
        out.push({ jsonPath: "$", expected: `${envelope.mediaType} text`, actual: jsonTypeOf(input.body), kind: "body" });
    }
    return tag(label, out);
  };

  const checkStream = (input: StreamInput): Drift[] => {
    const { label } = split(input.method, input.route);
    const out: SchemaDrift[] = [];
    let lastSequence = Number.NEGATIVE_INFINITY;
    let terminal: number | undefined;
    input.events.forEach((message, i) => {
      const at = `events[${i}]`;
      let data: unknown;
      try {
        data = JSON.parse(message.data);
      } catch {
        out.push({ jsonPath: at, expected: "a JSON event", actual: describeValue(message.data), kind: "body" });
        return;
      }
      const type = isRecord(data) && typeof data.type === "string" ? data.type : undefined;
      if (type === undefined) {
        out.push({ jsonPath: `${at}.type`, expected: "string", actual: isRecord(data) ? "absent" : jsonTypeOf(data), kind: "missing" });
        return;
      }
      const schema = events.get(type);
      if (!schema) {
        out.push({ jsonPath: at, expected: "a known event type", actual: JSON.stringify(type), kind: "unknown_event" });
        return;
      }
      if (message.event !== undefined && message.event !== type) {
        out.push({ jsonPath: `${at}.event`, expected: JSON.stringify(type), actual: JSON.stringify(message.event), kind: "stream" });
      }
      out.push(...checkAgainstSchema(schema, data, { resolve: resolverFor(schema), at }));
      const sequence = isRecord(data) ? data.sequence_number : undefined;
      if (typeof sequence === "number") {
        if (sequence <= lastSequence)
          out.push({ jsonPath: `${at}.sequence_number`, expected: `more than ${lastSequence}`, actual: String(sequence), kind: "stream" });
        lastSequence = sequence;
      }
      if (TERMINAL_EVENTS.includes(type)) terminal ??= i;
    });
    if (terminal !== undefined && terminal < input.events.length - 1) {
      out.push({ jsonPath: `events[${terminal + 1}]`, expected: "nothing after the terminal event", actual: "more events", kind: "stream" });
    }
    if (input.ended !== false && terminal === undefined) {
      out.push({ jsonPath: "events", expected: `a terminal event (${TERMINAL_EVENTS.join(", ")})`, actual: "none", kind: "stream" });
    }
    return tag(label, out);
  };

  const checkResponseText = (input: ResponseTextInput): Drift[] => {
    const { method, template, label } = split(input.method, input.route);
    const op = operationOf(method, template);
    if (!op) return [noRoute(label)];
    const headers = normalizeHeaders(input.headers);
    const out: SchemaDrift[] = [];
    const envelope = checkEnvelope(op, input.status, headers, input.text.length > 0, out);
    if (envelope.stop || !envelope.content) return tag(label, out);
    if (envelope.mediaType === "text/event-stream")
      return [...tag(label, out), ...checkStream({ method, route: template, events: parseEventStream(input.text) })];
    if (envelope.mediaType === "application/json") {
      let body: unknown;
      try {
        body = JSON.parse(input.text);
      } catch {
        out.push({ jsonPath: "$", expected: "JSON", actual: describeValue(input.text), kind: "body" });
        return tag(label, out);
      }
      out.push(...checkAgainstSchema(envelope.content.schema, body, { resolve }));
    }
    return tag(label, out);
  };

  return { document, matchRoute, checkRequest, checkResponse, checkStream, checkResponseText };
}

const decodePointer = (part: string): string => decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~");

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The verbs a document's path item may hold, for callers walking every operation. */
export const OPERATION_METHODS: readonly string[] = METHODS;
