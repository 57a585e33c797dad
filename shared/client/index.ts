/**
 * A typed client for the whole `/v1` API, derived from the route table in
 * `shared/api.ts`: one method per operation, named by its operation id. Path
 * parameters go by name, with `body` and `query` beside them.
 *
 *   const api = createServiceClient({ baseUrl, apiKey });
 *   const reply = await api.createSessionResponse({ instance_id, session_id: "alice", body: { model, input: "hi" } });
 *
 * Every method takes an optional `signal` beside its arguments: aborting it
 * closes the request (undici destroys the socket), and the call rejects with
 * the signal's reason. Other failures throw `ServiceError`, typed by where the
 * call failed (`kind`: service, gateway, network, stream; see errors.ts).
 */
import { Readable } from "node:stream";
import { Agent, request, type Dispatcher } from "undici";
import type { z } from "zod";
import { routes, type OperationId, type PathParams, type RouteSpec, type Routes } from "../api.js";
import { createParser } from "eventsource-parser";
import { ServiceError } from "./errors.js";
import type { ResponseRequest } from "../schemas/responses.js";
import { readResponseStream, type ResponseStreamEvent } from "./stream.js";
import { withoutUndefined } from "../util/without-undefined.js";

export { ServiceError, type ServiceErrorInit, type ServiceErrorKind } from "./errors.js";
export { parseStreamEvent, readResponseStream, type ResponseStreamEvent, type UnknownStreamEvent } from "./stream.js";
export type { OperationId } from "../api.js";
export type { Instance, InstanceStatus } from "../schemas/instances.js";
export type { ScopedKey } from "../schemas/keys.js";
export type { Organization, OrganizationUpdate } from "../schemas/organization.js";
export { type GatewayErrorBody, outputTextOf, type ResponseObject, type ResponseRequest } from "../schemas/responses.js";

/** What a client method takes for an operation (path parameters, `body`, `query`), e.g. `RequestOf<"createInstance">`. */
export type RequestOf<Op extends OperationId> = ArgsOf<Routes[Op]>;
/** What a client method resolves with for an operation, e.g. `ResponseOf<"getInstance">`. */
export type ResponseOf<Op extends OperationId> = ResultOf<Routes[Op]>;

// `body` and `query` are optional members of a route spec: strip `undefined` before looking.
type BodyArg<S> = S extends { body?: infer B }
  ? [NonNullable<B>] extends [never]
    ? unknown
    : NonNullable<B> extends z.ZodType
      ? { body: z.input<NonNullable<B>> }
      : unknown
  : unknown;
type QueryArg<S> = S extends { query?: infer Q }
  ? [NonNullable<Q>] extends [never]
    ? unknown
    : NonNullable<Q> extends z.ZodType
      ? { query?: z.input<NonNullable<Q>> }
      : unknown
  : unknown;
type ParamArg<S> = S extends { path: infer P extends string } ? { [K in PathParams<P>]: string } : unknown;
export type ArgsOf<S> = ParamArg<S> & BodyArg<S> & QueryArg<S>;

/** What every client method takes beside its route's arguments. */
export interface RequestOptions {
  /**
   * Aborts the call at any point: the request is closed (the service sees the
   * client leave) and the call rejects with `signal.reason`. An already
   * aborted signal sends nothing. Default: none (the call runs until it ends
   * or `timeoutMs` passes).
   */
  signal?: AbortSignal;
}

/** A generated method's argument: the route's path parameters, `body` and `query`, and a `signal`. */
export type MethodArgs<S> = ArgsOf<S> & RequestOptions;

export interface Download {
  body: Readable;
  contentType: string;
  fileName: string | undefined;
  size: number | undefined;
}

export type ResultOf<S> = S extends { response: infer R }
  ? R extends z.ZodType
    ? z.output<R>
    : R extends "binary"
      ? Download
      : R extends "any"
        ? unknown
        : void
  : never;

type Generated = {
  // biome-ignore lint/complexity/noBannedTypes: `{} extends Args` is the check for "every argument is optional".
  [K in Exclude<OperationId, "uploadFile">]: {} extends ArgsOf<Routes[K]>
    ? (args?: MethodArgs<Routes[K]>) => Promise<ResultOf<Routes[K]>>
    : (args: MethodArgs<Routes[K]>) => Promise<ResultOf<Routes[K]>>;
};

export interface UploadArgs extends RequestOptions {
  instance_id: string;
  /** Destination path inside the instance root. */
  path: string;
  data: Buffer | Uint8Array | Readable;
  fileName?: string;
  contentType?: string;
}

/** One raw server-sent event (`parseEventStream`). */
export interface StreamEvent {
  event: string;
  data: unknown;
}

export interface StreamArgs extends RequestOptions {
  instance_id: string;
  /** A named session (the `createSessionResponse` route); omitted: the default session. */
  session_id?: string;
  /** The request body; `stream: true` is set by the client. */
  body: z.input<typeof ResponseRequest>;
}

export interface ServiceClient extends Generated {
  uploadFile(args: UploadArgs): Promise<void>;
  /**
   * `stream: true` on either responses route: yields schema-checked events as
   * the gateway sends them, and ends after `response.completed` (its
   * `response` is the full answer). An HTTP error before the stream is a
   * `ServiceError` of kind `service` or `gateway` with that status; a
   * connection that cannot be opened is kind `network`; a stream that breaks,
   * ends before a terminal event, carries an `error`/`response.failed` event
   * or a malformed event is kind `stream`. Aborting `signal` closes the
   * connection (the gateway stops) and the iteration throws `signal.reason`.
   * The client's `timeoutMs` bounds the wait for the headers and every gap
   * between two pieces of the body, not the whole stream.
   */
  streamResponse(args: StreamArgs): AsyncGenerator<ResponseStreamEvent, void, undefined>;
  /** `streamResponse` on a named session. */
  streamSessionResponse(args: StreamArgs & { session_id: string }): AsyncGenerator<ResponseStreamEvent, void, undefined>;
  /** The same client with another key (same connection pool). */
  withKey(apiKey: string | undefined): ServiceClient;
  readonly baseUrl: string;
}

export interface ClientOptions {
  baseUrl: string;
  apiKey?: string;
  /** One keep-alive pool per service is the point: pass it to share it. Default: a new pool of 128 connections, kept alive 30 s. */
  dispatcher?: Dispatcher;
  /** Headers and body timeout for each call, ms. Default: 120 000 (120 s). */
  timeoutMs?: number;
}

export function createServiceClient(options: ClientOptions): ServiceClient {
  const dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 128 });
  return buildClient({ ...options, dispatcher, baseUrl: options.baseUrl.replace(/\/+$/, "") });
}

function buildClient(options: ClientOptions & { dispatcher: Dispatcher }): ServiceClient {
  const timeout = options.timeoutMs ?? 120_000;
  const root = splitBase(options.baseUrl);

  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({
    ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
    ...extra,
  });

  async function send(
    method: string,
    path: string,
    hdrs: Record<string, string>,
    body?: string | Buffer | Readable | AsyncIterable<Uint8Array>,
    signal?: AbortSignal,
  ) {
    try {
      const call = {
        method: method as Dispatcher.HttpMethod,
        headers: hdrs,
        // undici streams any async iterable; its option type names only Readable.
        body: body === undefined ? null : body instanceof Readable || typeof body === "string" || Buffer.isBuffer(body) ? body : Readable.from(body),
        headersTimeout: timeout,
        bodyTimeout: timeout,
        ...(signal ? { signal } : {}),
      };
      // The origin and path go to the dispatcher as they are: undici's `request(url)` parsed a URL per call.
      return await (root
        ? options.dispatcher.request({ ...call, origin: root.origin, path: `${root.prefix}${path}` })
        : request(`${options.baseUrl}${path}`, { ...call, dispatcher: options.dispatcher }));
    } catch (cause) {
      if (signal?.aborted) throw signal.reason;
      const message = cause instanceof Error ? cause.message : String(cause);
      throw new ServiceError({ kind: "network", message, cause });
    }
  }

  async function fail(res: Dispatcher.ResponseData): Promise<never> {
    const text = await res.body.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: keep the text.
    }
    throw ServiceError.fromAnswer(res.statusCode, body, requestIdOf(res.headers));
  }

  /** The call's path after the base URL: path parameters read by name from `args`, `args.query` as the query string. */
  function pathFor(spec: RouteSpec, args: object): string {
    const path = spec.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
      const value: unknown = Object.getOwnPropertyDescriptor(args, name)?.value;
      if (typeof value !== "string" || !value) throw new TypeError(`missing path parameter ${name}`);
      return encodeURIComponent(value);
    });
    const query: unknown = "query" in args ? args.query : undefined;
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) search.set(k, String(v));
    const qs = search.toString();
    return `${path}${qs ? `?${qs}` : ""}`;
  }

  async function call(spec: RouteSpec, args: Record<string, unknown> & RequestOptions = {}): Promise<unknown> {
    const { signal } = args;
    signal?.throwIfAborted();
    const hasBody = "body" in args && args.body !== undefined;
    const res = await send(
      spec.method,
      pathFor(spec, args),
      headers(hasBody ? { "content-type": "application/json" } : {}),
      hasBody ? JSON.stringify(args.body) : undefined,
      signal,
    );
    try {
      return await answerOf(spec, res);
    } catch (error) {
      // Aborted while the body was read: the caller's reason, as before the headers.
      if (signal?.aborted) throw signal.reason;
      throw error;
    }
  }

  async function answerOf(spec: RouteSpec, res: Dispatcher.ResponseData): Promise<unknown> {
    if (res.statusCode >= 400) return fail(res);
    if (spec.response === "binary") {
      const disposition = String(res.headers["content-disposition"] ?? "");
      // Prefer the RFC 5987 name (exact, any script) over the quoted ASCII fallback.
      const extended = /filename\*=UTF-8''([^;]+)/i.exec(disposition)?.[1];
      const quoted = /filename="((?:[^"\\]|\\.)*)"/i.exec(disposition)?.[1]?.replace(/\\(.)/g, "$1");
      const length = res.headers["content-length"];
      return {
        body: res.body,
        contentType: String(res.headers["content-type"] ?? "application/octet-stream"),
        fileName: extended !== undefined ? decodeURIComponent(extended) : quoted,
        size: length === undefined ? undefined : Number(length),
      } satisfies Download;
    }
    if (res.statusCode === 204 || spec.response === "empty") {
      await res.body.dump();
      return undefined;
    }
    return res.body.json();
  }

  const client: Record<string, unknown> = {};
  for (const [id, spec] of Object.entries(routes) as [string, RouteSpec][]) {
    client[id] = (args?: Record<string, unknown>) => call(spec, args);
  }

  client.uploadFile = async (args: UploadArgs): Promise<void> => {
    const { signal } = args;
    signal?.throwIfAborted();
    const boundary = `----agent-bridge-${Date.now().toString(16)}${Math.random().toString(16).slice(2)}`;
    const fileName = (args.fileName ?? args.path.split("/").pop() ?? "file").replace(/["\r\n]/g, "_");
    const data = args.data;
    async function* body(): AsyncIterable<Uint8Array> {
      yield Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="path"\r\n\r\n${args.path}\r\n` +
          `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${fileName}"\r\n` +
          `content-type: ${args.contentType ?? "application/octet-stream"}\r\n\r\n`,
      );
      if (data instanceof Readable) for await (const chunk of data) yield chunk as Uint8Array;
      else yield data;
      yield Buffer.from(`\r\n--${boundary}--\r\n`);
    }
    const res = await send("POST", pathFor(routes.uploadFile, args), headers({ "content-type": `multipart/form-data; boundary=${boundary}` }), body(), signal);
    try {
      if (res.statusCode >= 400) return await fail(res);
      await res.body.dump();
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw error;
    }
  };

  async function* stream(args: StreamArgs): AsyncGenerator<ResponseStreamEvent, void, undefined> {
    const spec = args.session_id !== undefined ? routes.createSessionResponse : routes.createResponse;
    const { signal } = args;
    signal?.throwIfAborted();
    const res = await send(
      "POST",
      pathFor(spec, args),
      headers({ "content-type": "application/json", accept: "text/event-stream" }),
      JSON.stringify({ ...args.body, stream: true }),
      signal,
    );
    if (res.statusCode >= 400) return fail(res);
    try {
      yield* readResponseStream(res.body, signal);
    } catch (error) {
      // A stream that failed after its 200 still names the request it came in.
      const requestId = requestIdOf(res.headers);
      if (!(error instanceof ServiceError) || error.kind !== "stream" || requestId === undefined) throw error;
      throw new ServiceError({ kind: "stream", message: error.message, body: error.body, code: error.code, cause: error.cause, requestId });
    }
  }
  client.streamResponse = stream;
  client.streamSessionResponse = stream;

  client.withKey = (apiKey: string | undefined) => {
    const { apiKey: _replaced, ...rest } = options;
    return buildClient({ ...rest, ...withoutUndefined({ apiKey }) });
  };
  Object.defineProperty(client, "baseUrl", { value: options.baseUrl, enumerable: true });
  return client as unknown as ServiceClient;
}

/** Splits a `text/event-stream` body into raw events (`eventsource-parser`); `data` is parsed as JSON when it is. */
export async function* parseEventStream(body: AsyncIterable<Uint8Array | string>): AsyncIterable<StreamEvent> {
  const ready: StreamEvent[] = [];
  const parser = createParser({
    onEvent(message) {
      let data: unknown = message.data;
      try {
        data = JSON.parse(message.data);
      } catch {
        // Not JSON (e.g. "[DONE]"): keep the text.
      }
      ready.push({ event: message.event ?? "message", data });
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true }));
    yield* ready.splice(0);
  }
}

/**
 * The base URL as undici's dispatchers take it: its origin, and its path (without a trailing
 * slash) to put before each route's. Undefined when it is not an http(s) URL: calls then go
 * through undici's `request(url)` and fail there, as a network error, as before.
 */
function splitBase(baseUrl: string): { origin: string; prefix: string } | undefined {
  if (!URL.canParse(baseUrl)) return undefined;
  const url = new URL(baseUrl);
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash || url.username || url.password) return undefined;
  return { origin: url.origin, prefix: url.pathname.replace(/\/+$/, "") };
}

/** The answer's `x-request-id` (the id its log line is under), when it sent one. */
function requestIdOf(headers: Dispatcher.ResponseData["headers"]): string | undefined {
  const value = headers["x-request-id"];
  return typeof value === "string" ? value : undefined;
}
