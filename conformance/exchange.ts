/**
 * One HTTP exchange with the server under test, addressed by the route table's
 * operation id (so the path, the method and the contract that judges the
 * answer come from one place), read whole: JSON, bytes, or server-sent events
 * with the time each arrived. Nothing here judges; checks and the validator do.
 */
import { createParser } from "eventsource-parser";
import { type OperationId, routes } from "../shared/api.js";

export interface CallOptions {
  params?: Record<string, string>;
  query?: Record<string, string>;
  /** A JSON body. */
  body?: unknown;
  /** A body sent as is (malformed JSON, multipart), with its content type. */
  raw?: { contentType?: string; data: string | FormData };
  /** The key to send; `null` sends no `Authorization`; default: the run's key. */
  key?: string | null;
  /** An `Authorization` header sent as is (a malformed one). */
  authorization?: string;
}

/** A server-sent event as it arrived: its `event:` name, its data parsed when it is JSON, and when. */
export interface StreamEvent {
  event: string | undefined;
  data: unknown;
  /** Milliseconds after the answer's headers. */
  atMs: number;
}

export interface Exchange {
  operation: OperationId;
  method: string;
  /** The route as the table writes it, e.g. `/v1/instances/{instance_id}`. */
  route: string;
  /** The path sent, with its query. */
  path: string;
  status: number;
  headers: Record<string, string>;
  /** The body parsed as JSON when the answer says JSON (undefined when it does not parse). */
  json: unknown;
  /** The body as text (a stream's too, as it came). */
  text: string;
  bytes: Buffer;
  /** The events of a `text/event-stream` answer, in order. */
  events?: StreamEvent[];
  ms: number;
}

export interface Http {
  call(operation: OperationId, options: CallOptions, signal: AbortSignal): Promise<Exchange>;
}

export interface HttpOptions {
  baseUrl: string;
  key: string;
  /** Longest one exchange may take, ms. */
  timeoutMs: number;
  /** Sees every exchange that completed (the validator, the report). */
  onExchange?: (exchange: Exchange) => void;
}

/** Fills `{name}` placeholders; a missing parameter is a bug in a check, said as such. */
export function fillPath(template: string, params: Record<string, string> = {}): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`path parameter ${name} missing for ${template}`);
    return encodeURIComponent(value);
  });
}

export function createHttp(options: HttpOptions): Http {
  const base = options.baseUrl.replace(/\/+$/, "");
  return {
    async call(operation, call, signal) {
      const spec = routes[operation];
      const query = call.query && Object.keys(call.query).length ? `?${new URLSearchParams(call.query)}` : "";
      const path = `${fillPath(spec.path, call.params)}${query}`;
      const headers: Record<string, string> = { accept: "application/json, text/event-stream, */*" };
      const key = call.key === undefined ? options.key : call.key;
      if (call.authorization !== undefined) headers.authorization = call.authorization;
      else if (key !== null) headers.authorization = `Bearer ${key}`;
      let body: string | FormData | null = null;
      if (call.raw) {
        body = call.raw.data;
        if (call.raw.contentType) headers["content-type"] = call.raw.contentType;
      } else if (call.body !== undefined) {
        body = JSON.stringify(call.body);
        headers["content-type"] = "application/json";
      }
      const started = performance.now();
      const response = await fetch(`${base}${path}`, {
        method: spec.method,
        headers,
        body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]),
      });
      const responseHeaders = Object.fromEntries(response.headers);
      const contentType = responseHeaders["content-type"] ?? "";
      const exchange: Exchange = {
        operation,
        method: spec.method,
        route: spec.path,
        path,
        status: response.status,
        headers: responseHeaders,
        json: undefined,
        text: "",
        bytes: Buffer.alloc(0),
        ms: 0,
      };
      if (contentType.startsWith("text/event-stream")) {
        const read = await readEvents(response, performance.now());
        exchange.events = read.events;
        exchange.text = read.text;
      } else {
        exchange.bytes = Buffer.from(await response.arrayBuffer());
        exchange.text = exchange.bytes.toString("utf8");
        if (/\bjson\b/.test(contentType)) exchange.json = parseJson(exchange.text);
      }
      exchange.ms = Math.round(performance.now() - started);
      options.onExchange?.(exchange);
      return exchange;
    },
  };
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

async function readEvents(response: Response, headersAt: number): Promise<{ events: StreamEvent[]; text: string }> {
  const events: StreamEvent[] = [];
  const parser = createParser({
    onEvent: (message) => {
      const data = parseJson(message.data);
      events.push({ event: message.event, data: data === undefined ? message.data : data, atMs: Math.round(performance.now() - headersAt) });
    },
  });
  let text = "";
  if (!response.body) return { events, text };
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    const piece = decoder.decode(chunk, { stream: true });
    text += piece;
    parser.feed(piece);
  }
  return { events, text };
}
