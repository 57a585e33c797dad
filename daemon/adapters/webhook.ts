/**
 * The one HTTP endpoint a platform posts its events to (Telegram's webhook,
 * Slack's Events API, and every platform that calls its bot over HTTP). It
 * owns what each such endpoint must do the same way: listen on host and
 * port, answer only its path, a health answer to GET for a load balancer
 * (when asked for), 405 to other methods, the body read up to a limit (413
 * beyond it, and nothing more read), a handler's failure logged without the
 * request and answered 500, and on close the requests under way awaited (their
 * events still reach the core, or the platform delivers them again; a route's
 * downloads are cut, as a client that stopped reading would hold them forever).
 *
 * What stays the platform's is `handle`: it gets the raw bytes before anything
 * is parsed, so a signature over them can be checked first, and answers the
 * status, headers and body the platform expects. `routes` serve other paths
 * on the same server (the reply files a platform fetches by URL, file-links/).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { readBody } from "../../shared/http/read-body.js";

/** What a platform posts: everything `handle` may read, the body as the bytes that came. */
export interface WebhookRequest {
  readonly method: string;
  /** The path without the query. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** Aborted when the connection closes before the answer was written (the platform gave up waiting). */
  readonly signal: AbortSignal;
  /** A header's value when it came once; undefined when absent or repeated. */
  header(name: string): string | undefined;
}

/** What to answer. */
export interface WebhookAnswer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  /**
   * Told once whether the answer was written out in full (true) or the connection closed
   * first (false): for an answer that carries something the platform must not lose (a
   * reply given in the HTTP response itself), so it can be sent another way instead.
   */
  readonly sent?: (written: boolean) => void;
}

/** Every request whose path is below `prefix` (`<prefix>/...`), answered by `serve` with the rest of the path. */
export interface PrefixRoute {
  readonly prefix: string;
  serve(req: IncomingMessage, res: ServerResponse, rest: string): Promise<void>;
  /** Called as the endpoint closes: ends what `serve` has under way that could last as long as a client likes (a download the client stopped reading). */
  close?(): void;
}

export interface WebhookOptions {
  readonly host: string;
  /** 0 takes a free port (`url` says which). */
  readonly port: number;
  /** The one path served; any other answers 404. */
  readonly path: string;
  /** The largest body read; larger ones are answered 413 unread. Default 1 MiB. */
  readonly maxBytes?: number;
  /**
   * How long a client may take to send a request's headers, and the whole request, before the
   * connection is answered 408 and closed. Defaults 10 s and 30 s: the endpoint is public, and
   * Node's own (60 s, 300 s, checked every 30 s) let a client that sends a byte now and then hold
   * a socket for minutes; the platforms send a webhook's few KiB at once.
   */
  readonly headersTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  /** Answered 200 with this text to GET and HEAD on the path (a load balancer's health check). Absent: 405. */
  readonly health?: string;
  /** Other paths served by the same server, each below its prefix. */
  readonly routes?: readonly PrefixRoute[];
  /** For the log line of a failed request, e.g. "slack events". */
  readonly name: string;
  readonly log: Logger;
  /**
   * Optional: looks at a POST's headers before its body is read, and answers
   * at once (a missing or wrong secret header) or returns undefined to go on.
   */
  checkHeaders?(header: (name: string) => string | undefined): WebhookAnswer | undefined;
  /** One POST on the path, body read; resolves with what to answer. A throw is logged and answered 500. */
  handle(request: WebhookRequest): Promise<WebhookAnswer>;
}

export interface WebhookEndpoint {
  /** `http://host:port` as bound (the real port when 0 was asked for). */
  readonly url: string;
  /** Stops listening, then waits for requests under way. */
  close(): Promise<void>;
}

const DEFAULT_MAX_BYTES = 1024 * 1024;
const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Listens; rejects when the port cannot be had. */
export async function listenWebhook(options: WebhookOptions): Promise<WebhookEndpoint> {
  const inFlight = new Set<Promise<unknown>>();
  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const requestTimeout = Math.max(headersTimeout, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
  // Node enforces both only when it checks its connections (every 30 s by default): checked often enough that a limit means what it says.
  const timeouts = { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.min(1_000, Math.max(10, Math.floor(headersTimeout / 4))) };
  const server = createServer(timeouts, (req, res) => {
    const work = serve(options, req, res).catch((error: unknown) => {
      options.log.error({ err: error instanceof Error ? error.message : String(error) }, `${options.name} request failed`);
      if (!res.headersSent) res.writeHead(500).end();
    });
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  });
  await listen(server, options);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      for (const route of options.routes ?? []) route.close?.();
      await Promise.allSettled([...inFlight]);
      // The connections those requests kept alive are idle now: without this, close waits out their keep-alive.
      server.closeIdleConnections();
      await closed;
    },
  };
}

/** Answers JSON. */
export const jsonAnswer = (status: number, value: unknown): WebhookAnswer => ({
  status,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(value),
});

/** Answers plain text (empty when `text` is absent). */
export const textAnswer = (status: number, text?: string): WebhookAnswer =>
  text === undefined ? { status } : { status, headers: { "content-type": "text/plain" }, body: text };

/** The body as JSON, or undefined when it is not JSON. */
export function parseJsonBody(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

function listen(server: Server, options: WebhookOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

async function serve(options: WebhookOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://endpoint");
  const route = options.routes?.find((r) => url.pathname.startsWith(`${r.prefix}/`));
  if (route) return route.serve(req, res, url.pathname.slice(route.prefix.length + 1));
  if (url.pathname !== options.path) return void res.writeHead(404).end();
  const method = req.method ?? "";
  if ((method === "GET" || method === "HEAD") && options.health !== undefined) return send(res, textAnswer(200, options.health));
  if (method !== "POST") return void res.writeHead(405, { allow: options.health === undefined ? "POST" : "GET, HEAD, POST" }).end();
  const header = (name: string): string | undefined => {
    const value = req.headers[name.toLowerCase()];
    return typeof value === "string" ? value : undefined;
  };
  const early = options.checkHeaders?.(header);
  // Node discards the unread body of a request answered early.
  if (early) return send(res, early);
  const read = await readBody(req, { maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES });
  if (!read.ok) {
    if (read.reason === "too_large") res.writeHead(413).end();
    // Read no further.
    return void req.destroy();
  }
  const gone = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) gone.abort();
  });
  const request: WebhookRequest = {
    signal: gone.signal,
    method,
    path: url.pathname,
    query: url.searchParams,
    headers: req.headers,
    body: read.body,
    header,
  };
  send(res, await options.handle(request));
}

function send(res: ServerResponse, answer: WebhookAnswer): void {
  const { sent } = answer;
  if (sent) {
    // The connection went while the answer was being made: nothing will be written.
    if (!res.socket || res.socket.destroyed) return void sent(false);
    res.once("finish", () => sent(true));
    res.once("close", () => {
      if (!res.writableFinished) sent(false);
    });
  }
  res.writeHead(answer.status, answer.headers).end(answer.body);
}
