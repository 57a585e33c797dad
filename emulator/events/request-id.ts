/**
 * Every answer carries an `x-request-id`: the caller's own when it sends a
 * usable one (a correlation id from its own logs), else one minted here. The
 * same id names the request in the log line of an unexpected error, in the
 * 500's `detail`, in the request journal and on the events stream.
 */
import { randomBytes } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import { redactText } from "./redact.js";

export const REQUEST_ID_HEADER = "x-request-id";

/**
 * A caller's id is kept when it is a short token of letters, digits and `._:-`:
 * nothing that could split a log line or a header, and never something shaped
 * like a secret (a key pasted there must not reach the log).
 */
const CALLER_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function callerRequestId(header: unknown): string | undefined {
  return typeof header === "string" && CALLER_ID.test(header) && redactText(header) === header ? header : undefined;
}

export function assignRequestIds() {
  // Not from the emulator's seeded generator: a diagnostic id must not shift the ids a seed repeats.
  const prefix = randomBytes(4).toString("hex");
  let count = 0;
  return (req: Request, res: Response, next: NextFunction) => {
    const id = callerRequestId(req.headers[REQUEST_ID_HEADER]) ?? `req_${prefix}${(++count).toString(36).padStart(6, "0")}`;
    res.locals.requestId = id;
    res.setHeader(REQUEST_ID_HEADER, id);
    next();
  };
}
