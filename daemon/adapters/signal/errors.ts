/**
 * signal-cli's errors as the core's one `SendError`. Its JSON-RPC error codes
 * (SignalJsonRpcCommandHandler): -1 user error (e.g. "Failed to send message",
 * an unregistered recipient), -3 I/O error, -4 untrusted identity key, -5 rate
 * limited; the send's per-recipient `results` ride in `data.response`, with
 * `RATE_LIMIT_FAILURE`'s `retryAfterSeconds` and a proof-required failure's
 * challenge `token`. Proof required means Signal wants a captcha solved before
 * this account sends again: nothing the bridge can do, so the operator is told
 * how (signal-cli's `submitRateLimitChallenge`).
 */
import { z } from "zod";
import { SendError } from "../../vocabulary/adapter.js";

export const RPC_USER_ERROR = -1;
export const RPC_IO_ERROR = -3;
export const RPC_UNTRUSTED_KEY = -4;
export const RPC_RATE_LIMIT = -5;
/** JSON-RPC's own "invalid params" (an unknown account, a malformed argument). */
export const RPC_INVALID_PARAMS = -32602;

export class SignalRpcError extends Error {
  override readonly name = "SignalRpcError";
  readonly method: string;
  /** The JSON-RPC error code; undefined for an HTTP-level failure. */
  readonly code: number | undefined;
  readonly httpStatus: number | undefined;
  readonly data: unknown;
  constructor(method: string, init: { code?: number; httpStatus?: number; message: string; data?: unknown }) {
    super(`signal-cli ${method}: ${init.message}`);
    this.method = method;
    this.code = init.code;
    this.httpStatus = init.httpStatus;
    this.data = init.data;
  }
}

const SendResults = z.object({
  response: z.object({
    results: z
      .array(
        z.object({
          type: z.string(),
          token: z.string().optional(),
          retryAfterSeconds: z.number().optional(),
        }),
      )
      .default([]),
  }),
});

/** What a failed send's results say about limits: the longest wait asked, and a proof-required challenge's token. */
export function limitsOf(error: SignalRpcError): { retryAfterMs?: number; challenge?: string; types: string[] } {
  const parsed = SendResults.safeParse(error.data);
  if (!parsed.success) return { types: [] };
  const results = parsed.data.response.results;
  const waits = results.flatMap((r) => (r.retryAfterSeconds !== undefined ? [r.retryAfterSeconds * 1000] : []));
  const challenge = results.find((r) => r.token)?.token;
  return { ...(waits.length ? { retryAfterMs: Math.max(...waits) } : {}), ...(challenge ? { challenge } : {}), types: results.map((r) => r.type) };
}

/** The default wait after a rate limit that named none, ms. */
const RATE_LIMIT_DEFAULT_MS = 60_000;

/** A failed call as the core's `SendError`; anything that is not a signal-cli answer (no connection, timeout) is transient. */
export function toSendError(error: unknown, what: string): SendError {
  if (!(error instanceof SignalRpcError)) {
    return new SendError(`${what}: signal-cli did not answer (${error instanceof Error ? error.message : String(error)})`, { permanent: false, cause: error });
  }
  if (error.code === undefined) {
    // 4xx from the HTTP endpoint: a request it will never take (wrong path, Host refused); 5xx: try again.
    const status = error.httpStatus ?? 0;
    return new SendError(`${what}: ${error.message}`, { permanent: status >= 400 && status < 500, status, cause: error });
  }
  if (error.code === RPC_RATE_LIMIT) {
    const limits = limitsOf(error);
    if (limits.challenge) {
      return new SendError(
        `${what}: Signal asks for a proof (captcha) before this account sends again; solve one at https://signalcaptchas.org/challenge/generate.html and run signal-cli submitRateLimitChallenge --challenge ${limits.challenge} --captcha CAPTCHA`,
        { permanent: false, retryAfterMs: limits.retryAfterMs ?? RATE_LIMIT_DEFAULT_MS, status: error.code, cause: error },
      );
    }
    return new SendError(`${what}: rate limited by Signal`, {
      permanent: false,
      retryAfterMs: limits.retryAfterMs ?? RATE_LIMIT_DEFAULT_MS,
      status: error.code,
      cause: error,
    });
  }
  if (error.code === RPC_IO_ERROR) return new SendError(`${what}: ${error.message}`, { permanent: false, status: error.code, cause: error });
  // User errors (unregistered recipient, not a group member), untrusted keys, invalid params: the same request fails again.
  return new SendError(`${what}: ${error.message}`, { permanent: true, status: error.code, cause: error });
}

/** Whether a failure is Signal's proof-required challenge (the operator must act). */
export const isProofRequired = (error: unknown): boolean => error instanceof SignalRpcError && error.code === RPC_RATE_LIMIT && !!limitsOf(error).challenge;
