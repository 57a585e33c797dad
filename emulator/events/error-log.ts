/**
 * The one place an unexpected error (anything `sendError` could not map: a bug)
 * is reported, once its answer is over: one log line with the request id, the
 * method, the route, the path and the sandbox, and an `error` event on
 * `/_emulator/events` carrying the same id. A caller quotes the id from the
 * 500's `detail` or its `x-request-id` header; the line with it says what broke.
 */
import type { Request, Response } from "express";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import type { ErrorEvent, EventHub } from "./hub.js";
import { redactText } from "./redact.js";

/** What the emulator needs of a logger: pino's `error` (a pino logger fits). */
export type EmulatorLogger = Pick<Logger, "error">;

export interface ErrorLogDeps {
  logger: EmulatorLogger;
  hub: EventHub;
  clock: Clock;
}

/** Called once per request when its answer is over (or its socket went). */
export function reportUnexpectedErrors(deps: ErrorLogDeps): (req: Request, res: Response) => void {
  return (req, res) => {
    const error: unknown = res.locals.unexpectedError;
    if (error === undefined) return;
    res.locals.unexpectedError = undefined;
    const event: ErrorEvent = {
      request_id: (res.locals.requestId as string | undefined) ?? "",
      at: new Date(deps.clock.now()).toISOString(),
      method: req.method,
      // A raw key pasted into a URL is a secret like any other.
      path: redactText(req.path),
      route: (res.locals.route as string | undefined) ?? null,
      sandbox_id: (res.locals.sandboxId as string | undefined) ?? null,
      status: res.statusCode,
    };
    deps.logger.error({ ...event, error: describeError(error) }, `unexpected error answering ${event.method} ${event.path}`);
    deps.hub.publish({ type: "error", data: event });
  };
}

/** The error's type, message and stack, with anything shaped like a secret cut out. */
function describeError(error: unknown): { type: string; message: string; stack?: string } {
  if (!(error instanceof Error)) return { type: typeof error, message: redactText(String(error)) };
  return { type: error.name, message: redactText(error.message), ...(error.stack ? { stack: redactText(error.stack) } : {}) };
}
