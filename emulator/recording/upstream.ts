/**
 * One call to the upstream service, kept whole as an exchange: the answer's
 * body decompressed and a stream's events with the time each arrived. The
 * proxy relays the answer as it comes (`onHead`, `onChunk`, exactly the
 * upstream's bytes); a `record-if-missing` replay waits for the whole. A
 * connection that cannot be made throws (the caller reports it as
 * unreachable, never as drift).
 */
import { performance } from "node:perf_hooks";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { createParser } from "eventsource-parser";
import { type Dispatcher, request } from "undici";
import { mediaTypeOf, parseEventStream } from "../../shared/contract/index.js";
import type { Exchange } from "./capture.js";
import { RECORDING_HEADER } from "./format.js";

type HeaderMap = Record<string, string | string[]>;

/** Hop-by-hop headers (RFC 9110 7.6.1), what the client's connection sets itself, and the recording header (ours alone): never forwarded. */
const NOT_FORWARDED = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-authorization",
  "host",
  RECORDING_HEADER,
]);

/** Headers to pass on: defined ones, hop-by-hop ones dropped. */
export function forwardable(headers: Record<string, string | string[] | number | undefined>): HeaderMap {
  const out: HeaderMap = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined && !NOT_FORWARDED.has(name.toLowerCase())) out[name] = typeof value === "number" ? String(value) : value;
  return out;
}

export interface UpstreamCall {
  /** The upstream's base URL (a path prefix is kept). */
  base: string;
  method: string;
  /** Path and query, as the client asked. */
  url: string;
  /** The client's request headers (the hop-by-hop ones are dropped here). */
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  dispatcher: Dispatcher;
  signal?: AbortSignal;
  /** When the upstream's status and headers arrive (hop-by-hop ones dropped), before any of the body. */
  onHead?: (status: number, headers: HeaderMap) => void;
  /** Each piece of the body as it arrives, as it came; a returned promise holds the next piece back. */
  onChunk?: (chunk: Buffer) => void | Promise<void>;
  /** For `recordedAt`. */
  now: () => number;
}

export interface UpstreamResult {
  exchange: Exchange;
  /** The upstream broke the answer off before its end. */
  broken: boolean;
}

export async function callUpstream(call: UpstreamCall): Promise<UpstreamResult> {
  const started = performance.now();
  const answer = await request(call.base.replace(/\/+$/, "") + call.url, {
    method: call.method as Dispatcher.HttpMethod,
    headers: forwardable(call.headers),
    body: call.body.length ? call.body : null,
    dispatcher: call.dispatcher,
    ...(call.signal ? { signal: call.signal } : {}),
  });
  const headers = forwardable(answer.headers);
  call.onHead?.(answer.statusCode, headers);
  const headersAt = performance.now();
  const streamed = mediaTypeOf(String(answer.headers["content-type"] ?? "")) === "text/event-stream";
  // A compressed answer is kept decompressed (a stream's events then lose their times).
  const encoding = String(answer.headers["content-encoding"] ?? "identity").toLowerCase();
  const events: NonNullable<Exchange["events"]> = [];
  const parser =
    streamed && encoding === "identity"
      ? createParser({ onEvent: (m) => events.push({ at_ms: performance.now() - headersAt, event: m.event, data: m.data }) })
      : undefined;
  const decoder = new TextDecoder();
  const chunks: Buffer[] = [];
  let broken = false;
  try {
    for await (const chunk of answer.body) {
      const bytes = chunk as Buffer;
      chunks.push(bytes);
      parser?.feed(decoder.decode(bytes, { stream: true }));
      await call.onChunk?.(bytes);
    }
  } catch {
    broken = true;
  }
  const body = decoded(Buffer.concat(chunks), encoding);
  if (streamed && encoding !== "identity") events.push(...parseEventStream(body.toString("utf8")).map((e) => ({ at_ms: 0, ...e })));
  const exchange: Exchange = {
    method: call.method,
    url: call.url,
    requestHeaders: call.headers,
    requestBody: call.body,
    status: answer.statusCode,
    responseHeaders: encoding === "identity" ? headers : withoutEncoding(headers),
    responseBody: body,
    ...(streamed ? { events } : {}),
    recordedAt: new Date(call.now()).toISOString(),
    durationMs: performance.now() - started,
  };
  return { exchange, broken };
}

/** A failed call's reason, for reports and the 502's detail: the socket's code (ECONNREFUSED) or the error's name. */
export const failureCode = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? (error as Error).name;

/** The body as sent before compression; the bytes as they came when the encoding is unknown or broken. */
function decoded(body: Buffer, encoding: string): Buffer {
  try {
    if (encoding === "gzip" || encoding === "x-gzip") return gunzipSync(body);
    if (encoding === "deflate") return inflateSync(body);
    if (encoding === "br") return brotliDecompressSync(body);
  } catch {
    // kept as it came: a body that is not what its encoding says is drift worth seeing
  }
  return body;
}

/** Headers of a decompressed copy: no `content-encoding`, no stale `content-length`. */
function withoutEncoding(headers: HeaderMap): HeaderMap {
  const { "content-encoding": _e, "content-length": _l, ...rest } = headers;
  return rest;
}
