/**
 * Mattermost's REST API through @mattermost/client's Client4 (its routes and
 * its request options: the bearer token, the JSON content type), answered as
 * values: Client4's own fetch throws errors without the response headers, so
 * the request it builds (`getOptions`) is sent here and the status and the
 * rate-limit headers are read.
 *
 * Rate limits (server/channels/app/ratelimit.go): every answer carries
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`
 * (seconds until the window refills); a refused request is a 429 with
 * `Retry-After` (seconds) and the text body "limit exceeded".
 */
import mattermost from "@mattermost/client";
import type { Clock } from "../../../shared/clock.js";
import { SendError } from "../../vocabulary/adapter.js";

const { Client4 } = mattermost;
export type MattermostClient = InstanceType<typeof Client4>;

export type RestResult = { ok: true; status: number; data: unknown } | { ok: false; status: number; message: string; retryAfterMs: number | undefined };

export interface RestDeps {
  baseUrl: string;
  token: string;
  clock: Clock;
}

export interface MattermostRest {
  readonly client: MattermostClient;
  /** One call; rejects only when no answer came (network). Waits first while the last answer said the window is spent. */
  call(url: string, init: { method: string; body?: string | FormData }): Promise<RestResult>;
}

export function createRest(deps: RestDeps): MattermostRest {
  const client = new Client4();
  client.setUrl(deps.baseUrl);
  client.setToken(deps.token);
  client.setIncludeCookies(false);
  /** When the window the server last spoke of refills, if it said none is left (epoch ms). */
  let spentUntil = 0;

  return {
    client,
    async call(url, init) {
      const wait = spentUntil - deps.clock.now();
      if (wait > 0) await deps.clock.sleep(wait);
      const { headers } = client.getOptions(init);
      const response = await fetch(url, { method: init.method, headers, ...(init.body !== undefined ? { body: init.body } : {}) });
      const data = await bodyOf(response);
      spentUntil = spentWindow(response.headers, deps.clock.now()) ?? 0;
      if (response.ok) return { ok: true, status: response.status, data };
      return { ok: false, status: response.status, message: messageOf(data, response.status), retryAfterMs: retryAfterMs(response.headers) };
    },
  };
}

/** `Retry-After` (seconds), else `X-RateLimit-Reset` (seconds until the refill), as ms. */
export function retryAfterMs(headers: Headers): number | undefined {
  for (const name of ["retry-after", "x-ratelimit-reset"]) {
    const value = Number(headers.get(name) ?? Number.NaN);
    if (Number.isFinite(value) && value >= 0) return Math.max(1, value) * 1000;
  }
  return undefined;
}

/** When `X-RateLimit-Remaining` is 0: the time the window refills, so the next call waits instead of earning a 429. */
function spentWindow(headers: Headers, now: number): number | undefined {
  if (headers.get("x-ratelimit-remaining") !== "0") return undefined;
  const reset = Number(headers.get("x-ratelimit-reset") ?? Number.NaN);
  return Number.isFinite(reset) && reset > 0 ? now + Math.min(reset, 60) * 1000 : undefined;
}

async function bodyOf(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").includes("json")) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function messageOf(data: unknown, status: number): string {
  if (typeof data === "object" && data !== null && "message" in data && typeof data.message === "string") return data.message;
  if (typeof data === "string" && data.trim()) return data.trim().slice(0, 200);
  return `HTTP ${status}`;
}

/** A failed call as the core's one error: 429 and 5xx are retried (after `Retry-After`), other 4xx never. */
export function sendErrorOf(what: string, result: Extract<RestResult, { ok: false }>): SendError {
  const permanent = result.status >= 400 && result.status < 500 && result.status !== 429 && result.status !== 408;
  return new SendError(`mattermost ${what} failed: ${result.message} (HTTP ${result.status})`, {
    permanent,
    status: result.status,
    ...(result.retryAfterMs !== undefined && !permanent ? { retryAfterMs: result.retryAfterMs } : {}),
  });
}

/** A call that never answered (network): transient. */
export function networkError(what: string, error: unknown): SendError {
  const detail = error instanceof Error ? error.message : String(error);
  return new SendError(`mattermost ${what} failed: ${detail}`, { permanent: false, cause: error });
}
