/**
 * One HTTP request a check sends (the service's, a channel's): its answer,
 * or in words why none came. Never carries the URL into a reason (it may
 * hold a token).
 */
import { request, type Dispatcher } from "undici";

/** How an HTTP probe ended: an answer, or why none came. */
export type ProbeOutcome =
  | {
      kind: "answer";
      status: number;
      body: unknown /** Response headers, lower-case names (empty when the client gives none). */;
      headers: Record<string, string>;
    }
  | { kind: "unreachable"; reason: string };

export interface HttpRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

/** One HTTP exchange: status and body text. Rejects when no answer came. */
export type HttpClient = (url: string, request: HttpRequest) => Promise<{ status: number; text: string; headers?: Record<string, string> }>;

/**
 * undici's `request`, as the daemon's own clients use: unlike `fetch` it
 * does not refuse the ports the fetch standard blocks (6000, 6667, ...), so
 * a check never fails where the daemon would work.
 */
export const undiciHttp: HttpClient = async (url, req) => {
  const res = await request(url, {
    method: (req.method ?? "GET") as Dispatcher.HttpMethod,
    ...(req.headers ? { headers: req.headers } : {}),
    ...(req.body !== undefined ? { body: req.body } : {}),
    signal: req.signal,
  });
  const headers = Object.fromEntries(Object.entries(res.headers).flatMap(([k, v]) => (typeof v === "string" ? [[k.toLowerCase(), v]] : [])));
  return { status: res.statusCode, text: await res.body.text(), headers };
};

export interface ProbeDeps {
  /** Default: undiciHttp. */
  http: HttpClient;
  /** Per request. */
  timeoutMs: number;
}

/** A probe's request without its abort signal (the probe sets its own timeout); spelled by what it keeps, so no platform name appears as a string. */
export type ProbeInit = Pick<HttpRequest, "method" | "headers" | "body">;

/** Sends one request and reads its JSON body (if any); network failures become `unreachable`. */
export async function probe(deps: ProbeDeps, url: string, init: ProbeInit = {}): Promise<ProbeOutcome> {
  let res: Awaited<ReturnType<HttpClient>>;
  try {
    res = await deps.http(url, { ...init, signal: AbortSignal.timeout(deps.timeoutMs) });
  } catch (error) {
    return { kind: "unreachable", reason: networkReason(error, deps.timeoutMs) };
  }
  let body: unknown = res.text;
  try {
    body = JSON.parse(res.text);
  } catch {
    // not JSON: keep the text
  }
  return { kind: "answer", status: res.status, body, headers: res.headers ?? {} };
}

/** "connection refused", "no answer within 10000 ms": never the URL (it may hold a token). */
function networkReason(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return `no answer within ${timeoutMs} ms`;
  // undici puts the code on the error itself; fetch on its cause. Happy eyeballs
  // tries several addresses: an AggregateError holds each one's error.
  type Coded = NodeJS.ErrnoException & { errors?: NodeJS.ErrnoException[] };
  const candidates = [error, error instanceof Error ? error.cause : undefined] as (Coded | undefined)[];
  const code = candidates.map((e) => e?.code ?? e?.errors?.find((x) => x.code)?.code).find((c) => c !== undefined);
  const words: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "host name lookup failed",
    ECONNRESET: "connection reset",
    ETIMEDOUT: "connection timed out",
    EHOSTUNREACH: "host unreachable",
    UND_ERR_CONNECT_TIMEOUT: "connection timed out",
    UND_ERR_SOCKET: "connection closed",
  };
  if (code && words[code]) return words[code];
  if (code) return code;
  return "no connection";
}
