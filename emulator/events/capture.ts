/**
 * Records each request in the one request log (request-log.ts): its line, and
 * the first bytes of its request and response bodies (redacted when read).
 * Clients' requests are numbered and published as `request` events; the
 * console's own traffic (its page, data, the events stream, and calls it marks
 * with `x-emulator-console`) is kept for the journal only, so the console's log
 * shows what clients did.
 */
import type { NextFunction, Request, Response } from "express";
import type { Clock } from "../../shared/clock.js";
import type { EventHub } from "./hub.js";
import { redactJson, redactText } from "./redact.js";
import { type RawCapture, type RequestEvent, type RequestLog, recordOf } from "./request-log.js";
import type { SandboxClocks } from "../sandboxes/clock.js";
import { closestRoute } from "../sandboxes/closest-route.js";
import type { SandboxJournals } from "../sandboxes/journal.js";

/** Bytes of each body kept (more is cut and marked). */
export const BODY_LIMIT = 16 * 1024;

export interface CapturedBody {
  content_type: string | null;
  /** Parsed JSON (redacted), redacted text, or a note such as `[binary, 120 bytes]`. */
  body: unknown;
  truncated: boolean;
}

export interface RequestDetail extends RequestEvent {
  request: CapturedBody;
  response: CapturedBody;
}

/** The console's view of one request: its line and both bodies, redacted. */
export function requestDetail(log: RequestLog, id: number): RequestDetail | undefined {
  const c = log.get(id);
  if (!c) return undefined;
  return {
    id,
    ...recordOf(c),
    request: requestView(c.requestType, c.requestBody, c.requestLength),
    response: describe(c.responseType, joined(c.responseChunks), c.responseTruncated),
  };
}

const CONSOLE_OWN = /^\/_emulator\/(ui(\/|$)|console\/|events$|as\/)/;
/** Sent by the console on its calls to other control-plane routes (faults, snapshot...). */
export const CONSOLE_HEADER = "x-emulator-console";

/**
 * The header counts on control-plane paths only: an API client that sends it
 * on `/v1` must not be able to hide its requests from the developer watching.
 */
export const isConsoleTraffic = (req: Request): boolean =>
  CONSOLE_OWN.test(req.path) || (req.headers[CONSOLE_HEADER] !== undefined && req.path.startsWith("/_emulator/"));

export interface CaptureDeps {
  clock: Clock;
  log: RequestLog;
  hub: EventHub;
  /** Each sandbox's journal: its requests with redacted bodies, and what matched nothing. */
  journals: SandboxJournals;
  sandboxClocks: SandboxClocks;
  /** Called once per request after it is recorded (the unexpected-error log). */
  onAnswered?: (req: Request, res: Response) => void;
  /** The app's response prototype (express's `app.response`): its `write`/`end` keep the bodies. */
  responses: object;
}

export function captureRequests(deps: CaptureDeps) {
  keepBodiesOf(deps.responses);
  let nextId = 1;
  return (req: Request, res: Response, next: NextFunction) => {
    const started = performance.now();
    // The console's own traffic goes to the journal only: its bodies are not kept.
    const body = isConsoleTraffic(req) ? undefined : keepResponseBody(res);
    let recorded = false;
    // The first of 'finish' (answered) and 'close' (a reset or a hung fault never finishes:
    // the console's line still appears when the socket goes) records it; the other is ignored.
    const done = (finished: boolean) => {
      if (recorded) return;
      recorded = true;
      const length = requestLength(req);
      const capture: RawCapture = {
        id: body ? nextId++ : undefined,
        finished,
        atMs: deps.clock.now(),
        method: req.method,
        rawPath: req.path,
        status: res.statusCode,
        key_kind: (res.locals.keyKind as RawCapture["key_kind"] | undefined) ?? "none",
        ms: Math.round((performance.now() - started) * 100) / 100,
        request_id: (res.locals.requestId as string | undefined) ?? "",
        requestType: headerOf(req.headers["content-type"]),
        // Kept only when small: a reference to a 1 GiB snapshot import must not outlive its request.
        requestBody: body && length <= BODY_LIMIT ? (req.body as unknown) : undefined,
        requestLength: length,
        responseType: headerOf(res.getHeader("content-type")),
        responseChunks: body ? body.chunks : [],
        responseTruncated: body ? body.truncated() : false,
      };
      deps.log.record(capture);
      if (capture.finished) journalInSandbox(deps, req, res, capture);
      if (capture.id !== undefined && deps.hub.clients > 0) deps.hub.publish({ type: "request", data: { id: capture.id, ...recordOf(capture) } });
      deps.onAnswered?.(req, res);
    };
    res.on("finish", () => done(true));
    res.on("close", () => done(false));
    next();
  };
}

/**
 * The sandbox's own journal line (its time, the route, instance, session and
 * redacted body), and a line among the unmatched when nothing matched.
 */
function journalInSandbox(deps: CaptureDeps, req: Request, res: Response, capture: RawCapture): void {
  const sandboxId = res.locals.sandboxId as string | undefined;
  const unmatched = res.locals.unmatched as "unknown_route" | "wrong_method" | "unknown_key" | undefined;
  if (sandboxId === undefined && unmatched === undefined) return;
  const at = new Date(sandboxId === undefined ? capture.atMs : deps.sandboxClocks.run(sandboxId, () => deps.clock.now())).toISOString();
  const path = redactText(capture.rawPath);
  if (unmatched !== undefined) {
    const closest = closestRoute(req.method, req.path);
    deps.journals.recordUnmatched(sandboxId, {
      at,
      method: capture.method,
      path,
      reason: unmatched,
      closest_route: closest,
      status: capture.status,
    });
  }
  if (sandboxId === undefined) return;
  const body = req.body !== undefined && req.body !== null && typeof req.body === "object" && !Buffer.isBuffer(req.body) ? redactJson(req.body) : null;
  deps.journals.record(sandboxId, {
    at,
    method: capture.method,
    path,
    route: (res.locals.route as string | undefined) ?? null,
    status: capture.status,
    instance_id: (res.locals.instanceId as string | undefined) ?? null,
    session: (res.locals.session as string | undefined) ?? null,
    key_kind: capture.key_kind,
    body,
    ms: capture.ms,
    request_id: capture.request_id,
  });
}

/** A response's kept body, while it is written: found by `write`/`end` in its `locals`. */
const KEPT = Symbol("kept response body");

interface KeptBody {
  chunks: (string | Buffer)[];
  kept: number;
  total: number;
}

/** Starts keeping the first `BODY_LIMIT` bytes `res` sends: by reference (UTF-8 strings as they are), joined only when read. */
function keepResponseBody(res: Response): { chunks: (string | Buffer)[]; truncated: () => boolean } {
  const body: KeptBody = { chunks: [], kept: 0, total: 0 };
  (res.locals as Record<symbol, KeptBody>)[KEPT] = body;
  return { chunks: body.chunks, truncated: () => body.total > body.kept };
}

/**
 * `write` and `end` that keep what a response asked to keep, defined once on
 * the app's response prototype: wrapping them on each response gave every
 * response its own function-valued fields, which cost more than the rest of
 * the request log together on a small GET.
 */
function keepBodiesOf(proto: object): void {
  const target = proto as { write: (...args: unknown[]) => boolean; end: (...args: unknown[]) => unknown };
  const { write, end } = target;
  const keptOf = (res: { locals?: Record<symbol, KeptBody> }) => res.locals?.[KEPT];
  target.write = function (this: { locals?: Record<symbol, KeptBody> }, ...args: unknown[]) {
    const body = keptOf(this);
    if (body) keep(body, args[0], args[1]);
    return write.apply(this, args);
  };
  target.end = function (this: { locals?: Record<symbol, KeptBody> }, ...args: unknown[]) {
    const body = keptOf(this);
    if (body) keep(body, args[0], args[1]);
    return end.apply(this, args);
  };
}

function keep(body: KeptBody, chunk: unknown, encoding?: unknown): void {
  if (chunk === undefined || chunk === null || typeof chunk === "function") return;
  let piece: string | Buffer;
  if (typeof chunk === "string" && (typeof encoding !== "string" || encoding === "utf8" || encoding === "utf-8")) piece = chunk;
  else if (Buffer.isBuffer(chunk)) piece = chunk;
  else if (chunk instanceof Uint8Array) piece = Buffer.from(chunk);
  else piece = Buffer.from(String(chunk), typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
  const size = typeof piece === "string" ? Buffer.byteLength(piece) : piece.length;
  body.total += size;
  if (body.kept >= BODY_LIMIT) return;
  if (body.kept + size > BODY_LIMIT) piece = (typeof piece === "string" ? Buffer.from(piece) : piece).subarray(0, BODY_LIMIT - body.kept);
  body.chunks.push(piece);
  body.kept += typeof piece === "string" ? size : piece.length;
}

/** The kept pieces of a body as one buffer. */
const joined = (chunks: readonly (string | Buffer)[]): Buffer =>
  chunks.length === 1 && Buffer.isBuffer(chunks[0]) ? chunks[0] : Buffer.concat(chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c)));

/** Declared body size; a body without one (chunked) counts as too big to keep. */
const requestLength = (req: Request): number => {
  const declared = req.headers["content-length"];
  if (declared === undefined) return req.headers["transfer-encoding"] ? Infinity : 0;
  const n = Number(declared);
  return Number.isFinite(n) && n >= 0 ? n : Infinity;
};

const headerOf = (value: unknown): string | null => (typeof value === "string" ? value : Array.isArray(value) ? String(value[0]) : null);

function requestView(type: string | null, body: unknown, length: number): CapturedBody {
  if (body !== undefined && body !== null && typeof body === "object" && !Buffer.isBuffer(body)) {
    const text = JSON.stringify(body);
    if (text.length > BODY_LIMIT) return { content_type: type, body: `[JSON, ${text.length} characters]`, truncated: true };
    return { content_type: type, body: redactJson(body), truncated: false };
  }
  const size = Number.isFinite(length) ? `${length} bytes` : "size not declared";
  if (type?.startsWith("multipart/")) return { content_type: type, body: `[multipart upload, ${size}]`, truncated: false };
  return { content_type: type, body: length > 0 ? `[${size}, not kept]` : null, truncated: length > 0 };
}

function describe(type: string | null, bytes: Buffer, truncated: boolean): CapturedBody {
  if (bytes.length === 0) return { content_type: type, body: null, truncated };
  if (type?.includes("json") && !truncated) {
    try {
      return { content_type: type, body: redactJson(JSON.parse(bytes.toString("utf8"))), truncated };
    } catch {
      // Not JSON after all: shown as text below.
    }
  }
  if (!type || /json|text|event-stream|xml|javascript/.test(type)) return { content_type: type, body: redactText(bytes.toString("utf8")), truncated };
  return { content_type: type, body: `[binary, ${bytes.length}${truncated ? "+" : ""} bytes]`, truncated };
}
