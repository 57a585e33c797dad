/**
 * One exchange, as it passed through, turned into a recording's interaction:
 * credentials dropped, secrets scrubbed, a JSON body kept as a value, a
 * stream kept as its events with their times, a binary body as base64. Pure:
 * the proxy and the replayer's `record-if-missing` both hand it what they saw.
 */
import { outputTextOf, ResponseObject } from "../../shared/schemas/responses.js";
import type { ScriptRule } from "../gateway/script/schema.js";
import { HttpMethod, type Interaction, RecordedEvent, type RecordedRequest, type RecordedResponse } from "./format.js";
import type { Scrubber } from "./scrub.js";

/** What was seen of one exchange. */
export interface Exchange {
  method: string;
  /** Path and query, as requested. */
  url: string;
  requestHeaders: Record<string, string | string[] | undefined>;
  requestBody: Buffer;
  status: number;
  responseHeaders: Record<string, string | string[] | undefined>;
  responseBody: Buffer;
  /** For a streamed answer: each event with the ms since the answer's headers. */
  events?: { at_ms: number; event?: string | undefined; data: string }[];
  recordedAt: string;
  durationMs: number;
}

/** Request headers that change an answer and carry nothing secret. */
const REQUEST_HEADERS = new Set(["content-type", "accept"]);
/** Answer headers a replay has no use for, must compute itself, or that change on every call (noise in a diff). */
const DROPPED_RESPONSE_HEADERS = new Set([
  "x-request-id",
  "request-id",
  "server-timing",
  "x-envoy-upstream-service-time",
  "cf-ray",
  "authorization",
  "cookie",
  "set-cookie",
  "proxy-authorization",
  "date",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-length",
  "content-encoding",
]);

const headerValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(", ") : v);

const parseJson = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
};

const isText = (contentType: string | undefined): boolean =>
  !contentType || /^(text\/|application\/(json|problem\+json|x-www-form-urlencoded|xml))/i.test(contentType);

function recordedRequest(exchange: Exchange, method: HttpMethod, scrub: Scrubber): RecordedRequest {
  const url = new URL(exchange.url, "http://recorded");
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key).map(scrub.text);
    query[key] = values.length === 1 ? values[0]! : values;
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(exchange.requestHeaders)) {
    const v = headerValue(value);
    if (v !== undefined && REQUEST_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = scrub.text(v);
  }
  const out: RecordedRequest = { method, path: scrub.text(url.pathname) };
  if (Object.keys(query).length) out.query = query;
  if (Object.keys(headers).length) out.headers = headers;
  if (exchange.requestBody.length) {
    const text = exchange.requestBody.toString("utf8");
    const json = /json/i.test(headers["content-type"] ?? "") ? parseJson(text) : ({ ok: false } as const);
    if (json.ok) out.body = scrub.json(json.value);
    else out.body_text = scrub.text(text);
  }
  return out;
}

function recordedResponse(exchange: Exchange, scrub: Scrubber): RecordedResponse {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(exchange.responseHeaders)) {
    const v = headerValue(value);
    if (v !== undefined && !DROPPED_RESPONSE_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = scrub.text(v);
  }
  const out: RecordedResponse = { status: exchange.status, headers };
  const contentType = headers["content-type"];
  if (exchange.events) {
    const data = scrub.events(
      exchange.events.map((e) => {
        const json = parseJson(e.data);
        return json.ok ? json.value : e.data;
      }),
    );
    out.events = exchange.events.map((e, i) =>
      RecordedEvent.parse({ at_ms: Math.max(0, Math.round(e.at_ms)), ...(e.event ? { event: e.event } : {}), data: data[i] }),
    );
    return out;
  }
  if (!exchange.responseBody.length) return out;
  if (!isText(contentType)) {
    out.body_base64 = exchange.responseBody.toString("base64");
    return out;
  }
  const text = exchange.responseBody.toString("utf8");
  const json = /json/i.test(contentType ?? "") ? parseJson(text) : ({ ok: false } as const);
  if (json.ok) out.body = scrub.json(json.value);
  else out.body_text = scrub.text(text);
  return out;
}

/** The interaction to record; undefined for a method the service has none of (HEAD, OPTIONS). */
export function interactionOf(exchange: Exchange, scrub: Scrubber): Interaction | undefined {
  const method = HttpMethod.safeParse(exchange.method.toUpperCase());
  if (!method.success) return undefined;
  return {
    request: recordedRequest(exchange, method.data, scrub),
    response: recordedResponse(exchange, scrub),
    recorded_at: exchange.recordedAt,
    duration_ms: Math.max(0, Math.round(exchange.durationMs)),
  };
}

const MESSAGE_ROUTE = /^\/v1\/instances\/[^/]+(?:\/session\/([^/]+))?\/responses$/;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The newest user input of a Responses request, as the model script matches it (every user text part, newline-joined). */
export function userTextOf(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined;
  if (typeof body.input === "string") return body.input;
  if (!Array.isArray(body.input)) return undefined;
  const user = body.input.filter((item) => isRecord(item) && item.role === "user").at(-1);
  if (!isRecord(user)) return undefined;
  if (typeof user.content === "string") return user.content;
  if (!Array.isArray(user.content)) return undefined;
  return user.content
    .filter((p): p is Record<string, unknown> => isRecord(p) && typeof p.text === "string")
    .map((p) => p.text as string)
    .join("\n");
}

/** The response object a recorded message answer ends with: the body, or a stream's `response.completed`. */
export function finalResponseOf(response: RecordedResponse): ResponseObject | undefined {
  const candidate = response.events
    ? response.events.map((e) => e.data).find((d) => isRecord(d) && d.type === "response.completed" && isRecord(d.response))
    : response.body;
  const parsed = ResponseObject.safeParse(isRecord(candidate) && candidate.type === "response.completed" ? candidate.response : candidate);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The model's answer on a message call as a model-script rule (the format of
 * `--model-script`): matched on the user's input and session, answering the
 * recorded text (a streamed answer keeps its length in `stream_ms`), or the
 * gateway's own error. Undefined for anything else.
 */
export function modelRuleOf(interaction: Interaction, name: string): ScriptRule | undefined {
  const { request, response } = interaction;
  const route = MESSAGE_ROUTE.exec(request.path);
  const input = userTextOf(request.body);
  if (request.method !== "POST" || !route || input === undefined) return undefined;
  const match = { input, session: route[1] !== undefined ? decodeURIComponent(route[1]) : "main" };
  if (response.status === 200) {
    const final = finalResponseOf(response);
    if (!final) return undefined;
    const last = response.events?.at(-1)?.at_ms;
    return { name, match, answer: { text: outputTextOf(final), ...(last ? { stream_ms: Math.min(last, 120_000) } : {}) } };
  }
  const error = isRecord(response.body) && isRecord(response.body.error) ? response.body.error : undefined;
  if (response.status >= 400 && error && typeof error.type === "string") {
    const retry = Number(response.headers["retry-after"]);
    return {
      name,
      match,
      answer: {
        error: {
          status: response.status,
          type: error.type,
          code: typeof error.code === "string" ? error.code : null,
          param: typeof error.param === "string" ? error.param : null,
          ...(typeof error.message === "string" ? { message: error.message } : {}),
          ...(Number.isFinite(retry) && retry >= 0 && retry <= 86_400 ? { retry_after: retry } : {}),
        },
      },
    };
  }
  return undefined;
}
