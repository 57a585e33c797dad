/**
 * Matrix failures as the core reads them: `toSendError` turns matrix-js-sdk's errors into the
 * one `SendError` (a 429 `M_LIMIT_EXCEEDED` carries its wait: the SDK reads `Retry-After`, else
 * `retry_after_ms`), and `describe` gives a log line with the access token scrubbed out.
 */
import { ConnectionError, type IRequestOpts, MatrixError } from "matrix-js-sdk";
import { SendError } from "../../vocabulary/adapter.js";

export type Scrub = (text: string) => string;

export function describe(error: unknown, scrub: Scrub): string {
  if (error instanceof MatrixError) return scrub(`${error.httpStatus ?? "?"} ${error.errcode ?? ""}: ${error.data.error ?? error.message}`);
  if (error instanceof ConnectionError) return scrub(`network: ${error.message}`);
  return scrub(error instanceof Error ? error.message : String(error));
}

/** The wait a rate-limited answer asks for, ms; undefined for any other failure. */
export function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof MatrixError) || !error.isRateLimitError()) return undefined;
  try {
    return error.getRetryAfterMs() ?? undefined;
  } catch {
    return undefined;
  }
}

/** The access token was refused (401 `M_UNKNOWN_TOKEN`, `M_MISSING_TOKEN`): the channel cannot go on. */
export const isTokenRefused = (error: unknown): boolean =>
  error instanceof MatrixError && error.httpStatus === 401 && (error.errcode === "M_UNKNOWN_TOKEN" || error.errcode === "M_MISSING_TOKEN");

/** A failed call `what`, as the error the core's retry policy reads. */
export function toSendError(what: string, error: unknown, scrub: Scrub): SendError {
  if (error instanceof SendError) return error;
  const status = error instanceof MatrixError ? error.httpStatus : undefined;
  const wait = retryAfterMs(error);
  // 4xx other than a rate limit or a timeout will fail the same way again (not in the room, too large, forbidden).
  const permanent = status !== undefined && status >= 400 && status < 500 && status !== 429 && status !== 408;
  return new SendError(`matrix ${what} failed: ${describe(error, scrub)}`, {
    permanent,
    ...(wait !== undefined ? { retryAfterMs: wait } : {}),
    ...(status !== undefined ? { status } : {}),
  });
}

/**
 * matrix-js-sdk's request options; its type picks `priority` from the DOM's `RequestInit`,
 * which Node's types lack (so it reads as required): left to the default.
 */
export const requestOpts = (opts: Omit<IRequestOpts, "priority">): IRequestOpts => ({ ...opts, priority: undefined });
