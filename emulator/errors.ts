/**
 * Errors are values with a status. Handlers throw `ApiError`s; `sendError`
 * (the only place that knows HTTP) turns them into the contract's bodies.
 */
import type { Response } from "express";
import type { z } from "zod";

export type Detail = string | { error: string } | { loc: (string | number)[]; msg: string; type: string }[];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: Detail,
    /** A body to send as is instead of `{detail}` (gateway 4xx passed through). */
    readonly rawBody?: unknown,
  ) {
    super(typeof detail === "string" ? detail : JSON.stringify(detail));
  }
}

export const badRequest = (detail: string) => new ApiError(400, detail);
export const unauthorized = (detail = "Invalid or missing API key.") => new ApiError(401, detail);
export const forbidden = (detail: string) => new ApiError(403, detail);
export const notFound = (detail: string) => new ApiError(404, detail);
export const conflict = (detail: string) => new ApiError(409, detail);
export const tooLarge = (detail: string) => new ApiError(413, detail);
export const methodNotAllowed = (allow: string) => new ApiError(405, `Method not allowed here. Allowed: ${allow}.`);
export const badGateway = (error: string) => new ApiError(502, { error });
export const notImplemented = (what: string) => new ApiError(501, `${what} is not implemented by this emulator.`);

/**
 * zod issues in the contract's 422 form: `[{loc, msg, type}]`, `loc` starting with body or query.
 * `limit` caps how many are listed (default: all).
 */
export function validationError(where: "body" | "query" | "path", error: z.ZodError, limit = Infinity): ApiError {
  return new ApiError(
    422,
    error.issues.slice(0, limit).map((issue) => ({
      loc: [where, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))],
      msg: issue.message,
      type: issue.code === "unrecognized_keys" ? "extra_forbidden" : issue.code,
    })),
  );
}

/**
 * Maps anything thrown to a response; unknown errors become a 500 without
 * internals whose `detail` names the request id. An unknown error is kept in
 * `res.locals.unexpectedError` for the one place that logs it once the answer
 * is over (events/error-log.ts).
 */
export function sendError(res: Response, error: unknown): void {
  if (res.headersSent) {
    if (!(error instanceof ApiError)) res.locals.unexpectedError = error;
    res.destroy();
    return;
  }
  if (error instanceof ApiError) {
    res.status(error.status).json(error.rawBody ?? { detail: error.detail });
    return;
  }
  const status = httpStatusOf(error);
  if (status === 413) return void res.status(413).json({ detail: "Request body too large." });
  if (fieldOf(error, "type") === "entity.parse.failed") return void res.status(400).json({ detail: "Request body is not valid JSON." });
  // Other client errors (a path that is not valid percent-encoding, an unsupported
  // charset or encoding): the library's sentence is about the caller's own input.
  if (status && status >= 400 && status < 500) {
    const message = fieldOf(error, "message");
    return void res.status(status).json({ detail: typeof message === "string" && message ? `${message}.`.replace(/\.\.$/, ".") : "Bad request." });
  }
  res.locals.unexpectedError = error;
  res.status(500).json({ detail: internalErrorDetail(res.locals.requestId as string | undefined) });
}

/** The 500's sentence: the id to quote, which finds the emulator's log line. */
export const internalErrorDetail = (requestId: string | undefined): string =>
  requestId === undefined ? "Internal error." : `Internal error (request id ${requestId}).`;

/** body-parser and friends mark their errors with `status`/`type`. */
function httpStatusOf(error: unknown): number | undefined {
  const status = fieldOf(error, "status");
  return typeof status === "number" ? status : undefined;
}

function fieldOf(error: unknown, name: string): unknown {
  return error && typeof error === "object" && name in error ? (error as Record<string, unknown>)[name] : undefined;
}
