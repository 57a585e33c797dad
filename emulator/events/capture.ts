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
import type { RawCapture, RequestEvent, RequestLog } from "./request-log.js";
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
  const { at, method, path, status, key_kind, ms, request_id } = c;
  return {
    id,
    at,
    method,
    path,
    status,
    key_kind,
    ms,
    request_id,
    request: requestView(c.requestType, c.requestBody, c.requestLength),
    response: describe(c.responseType, c.responseBytes, c.responseTruncated),
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
}

export function captureRequests(deps: CaptureDeps) {
  let nextId = 1;
  return (req: Request, res: Response, next: NextFunction) => {
    const started = performance.now();
    // The console's own traffic goes to the journal only: its bodies are not kept.
    const body = isConsoleTraffic(req) ? undefined : keepResponseBody(res);
    const done = (finished: boolean) => {
      res.off("finish", onFinish);
      res.off("close", onClose);
      const capture: RawCapture = {
        ...(body ? { id: nextId++ } : {}),
        finished,
        at: new Date(deps.clock.now()).toISOString(),
        method: req.method,
        // A raw key pasted into a URL is a secret like any other.
        path: redactText(req.path),
        status: res.statusCode,
        key_kind: (res.locals.keyKind as RawCapture["key_kind"] | undefined) ?? "none",
        ms: Math.round((performance.now() - started) * 100) / 100,
        request_id: (res.locals.requestId as string | undefined) ?? "",
        requestType: headerOf(req.headers["content-type"]),
        // Kept only when small: a reference to a 1 GiB snapshot import must not outlive its request.
        requestBody: body && requestLength(req) <= BODY_LIMIT ? (req.body as unknown) : undefined,
        requestLength: requestLength(req),
        responseType: headerOf(res.getHeader("content-type")),
        responseBytes: body ? Buffer.concat(body.chunks) : Buffer.alloc(0),
        responseTruncated: body ? body.truncated() : false,
      };
      deps.log.record(capture);
      if (finished) journalInSandbox(deps, req, res, capture);
      if (capture.id !== undefined) {
        const { id, at, method, path, status, key_kind, ms, request_id } = capture;
        deps.hub.publish({ type: "request", data: { id, at, method, path, status, key_kind, ms, request_id } });
      }
      deps.onAnswered?.(req, res);
    };
    const onFinish = () => done(true);
    // A reset or a hung fault never finishes: the console's line still appears when the socket goes.
    const onClose = () => done(false);
    res.on("finish", onFinish);
    res.on("close", onClose);
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
  const at = sandboxId === undefined ? capture.at : new Date(deps.sandboxClocks.run(sandboxId, () => deps.clock.now())).toISOString();
  if (unmatched !== undefined) {
    const closest = closestRoute(req.method, req.path);
    deps.journals.recordUnmatched(sandboxId, {
      at,
      method: capture.method,
      path: capture.path,
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
    path: capture.path,
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

/** Wraps `write`/`end` to keep the first `BODY_LIMIT` bytes of what is sent. */
function keepResponseBody(res: Response): { chunks: Buffer[]; truncated: () => boolean } {
  const chunks: Buffer[] = [];
  let kept = 0;
  let total = 0;
  const keep = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === "function") return;
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : chunk instanceof Uint8Array
        ? Buffer.from(chunk)
        : Buffer.from(String(chunk), typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
    total += buf.length;
    if (kept >= BODY_LIMIT) return;
    const part = buf.subarray(0, BODY_LIMIT - kept);
    chunks.push(part);
    kept += part.length;
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  res.write = ((...args: unknown[]) => {
    keep(args[0], args[1]);
    return write(...args);
  }) as Response["write"];
  res.end = ((...args: unknown[]) => {
    keep(args[0], args[1]);
    return end(...args);
  }) as Response["end"];
  return { chunks, truncated: () => total > kept };
}

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
