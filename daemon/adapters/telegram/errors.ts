/**
 * How the Telegram adapter names what went wrong: the one error class it
 * throws (the core's `SendError`), the Bot API answers it branches on, and
 * `describe`, which turns any failure into a line for logs and status with
 * the bot token scrubbed out.
 */
import { GrammyError, HttpError } from "grammy";
import { SendError } from "../../vocabulary/adapter.js";

/** What a `TelegramAdapterError` is built from. */
export interface TelegramAdapterErrorInit {
  /** Says where it failed (`telegram sendMessage failed: 403: Forbidden: bot was blocked by the user`); never holds the token. */
  message: string;
  /** Telegram's error code; absent when no answer came (network, timeout) or the adapter refused on its own. */
  status?: number | undefined;
  /** A 429's `retry_after`, in ms: the core's retry policy waits at least this long. */
  retryAfterMs?: number | undefined;
  /** The error it wraps; never one whose text may hold the token (grammY's carry the request URL). Default none. */
  cause?: unknown;
}

/**
 * A Bot API call that failed, as the core's `SendError`: 4xx other than 429
 * is permanent (403 "bot was blocked by the user", 400 "chat not found"); a
 * 429 carries its `retry_after`, which the core's retry policy waits out.
 */
export class TelegramAdapterError extends SendError {
  constructor(init: TelegramAdapterErrorInit) {
    const { status } = init;
    super(init.message, {
      permanent: status !== undefined && status >= 400 && status < 500 && status !== 429,
      ...(status !== undefined ? { status } : {}),
      ...(init.retryAfterMs !== undefined ? { retryAfterMs: init.retryAfterMs } : {}),
      ...(init.cause !== undefined ? { cause: init.cause } : {}),
    });
  }
}

/** Removes the secrets (the bot token) from a text before it is logged or thrown. */
export type Scrub = (text: string) => string;

/** One line saying what failed, for logs, status details and error messages; scrubbed. */
export function describe(error: unknown, scrub: Scrub): string {
  if (error instanceof GrammyError) return scrub(`${error.error_code}: ${error.description}`);
  // grammY's network errors wrap the fetch error, whose text can carry the URL (with the token in it).
  if (error instanceof HttpError) return scrub(`network: ${error.error instanceof Error ? error.error.message : String(error.error)}`);
  return scrub(error instanceof Error ? error.message : String(error));
}

/** A failed Bot API call `method`, as the error the core reads. */
export function toAdapterError(method: string, error: unknown, scrub: Scrub): TelegramAdapterError {
  const status = error instanceof GrammyError ? error.error_code : undefined;
  const retryAfter = error instanceof GrammyError ? error.parameters.retry_after : undefined;
  return new TelegramAdapterError({
    message: `telegram ${method} failed: ${describe(error, scrub)}`,
    status,
    retryAfterMs: retryAfter === undefined ? undefined : retryAfter * 1000,
    // No `cause`: grammY's errors hold the request URL (with the token), and a logged error prints its cause.
  });
}

/** Telegram does not know the bot token (revoked, mistyped): retrying cannot help. */
export const isTokenRefused = (error: unknown): error is GrammyError => error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404);

/** Another client polls this bot, or a webhook is set (getUpdates answers 409). */
export const isPollConflict = (error: unknown): error is GrammyError => error instanceof GrammyError && error.error_code === 409;

/** Telegram refused the HTML the Markdown became: the text goes again as plain text. */
export const isEntityError = (error: unknown): boolean =>
  error instanceof GrammyError && error.error_code === 400 && /can't parse entities|unsupported start tag|can't find end tag/i.test(error.description);

/** The message already shows this text: the edit's purpose is met. */
export const isNotModified = (error: unknown): boolean =>
  error instanceof GrammyError && error.error_code === 400 && /message is not modified/i.test(error.description);

/** The Bot API serves files up to 20 MB; a larger one is refused as "file is too big". */
export const isFileTooBig = (error: unknown): boolean => error instanceof GrammyError && /too big/i.test(error.description);
