/**
 * Several middlewares as one express layer. Every request passes the same
 * steps before its route (request id, request log, sandbox, faults, body);
 * as separate `app.use` layers each step cost a round of express's router
 * (path matching, parameter processing, URL trimming) on every request.
 * A step calls `next()` to go on, `next(error)` or throws to leave for
 * express's error handling, or answers and stops, as in express.
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";

export function inOrder(...steps: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    let index = 0;
    const next = (error?: unknown) => {
      if (error) return done(error);
      const step = steps[index++];
      if (!step) return done();
      // As express's own layer: a step that throws (also in a later callback, such as a parsed body's) goes to the error handler.
      try {
        step(req, res, next);
      } catch (thrown) {
        done(thrown);
      }
    };
    next();
  };
}
