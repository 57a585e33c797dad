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
export const badGateway = (error: string) => new ApiError(502, { error });
export const notImplemented = (what: string) => new ApiError(501, `${what} is not implemented by this emulator.`);

/** zod issues in the contract's 422 form: `[{loc, msg, type}]`, `loc` starting with body or query. */
export function validationError(where: "body" | "query" | "path", error: z.ZodError): ApiError {
  return new ApiError(
    422,
    error.issues.map((issue) => ({
      loc: [where, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))],
      msg: issue.message,
      type: issue.code === "unrecognized_keys" ? "extra_forbidden" : issue.code,
    })),
  );
}

/** Maps anything thrown to a response; unknown errors become a 500 without internals. */
export function sendError(res: Response, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (error instanceof ApiError) {
    res.status(error.status).json(error.rawBody ?? { detail: error.detail });
    return;
  }
  const status = httpStatusOf(error);
  if (status === 413) return void res.status(413).json({ detail: "Request body too large." });
  if (status === 400) return void res.status(400).json({ detail: "Request body is not valid JSON." });
  if (status && status >= 400 && status < 500) return void res.status(status).json({ detail: "Bad request." });
  res.status(500).json({ detail: "Internal error." });
}

/** body-parser and friends mark their errors with `status`/`type`. */
function httpStatusOf(error: unknown): number | undefined {
  if (error && typeof error === "object" && "status" in error && typeof error.status === "number") return error.status;
  return undefined;
}
