/**
 * Fault rules aimed at the API itself (`target: "api"`): applied before any
 * route runs, so a test can make the service answer an error, reset the
 * connection, hang, or slow down, for chosen paths and instances.
 */
import type { NextFunction, Request, Response } from "express";
import type { EmulatorEnv } from "../env.js";
import { ApiError, sendError } from "../errors.js";
import { routeOf } from "../sandboxes/closest-route.js";
import { withoutUndefined } from "../../shared/util/without-undefined.js";

const INSTANCE_IN_PATH = /^\/v1\/instances\/([^/]+)/;

export function applyApiFault(env: EmulatorEnv) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.path.startsWith("/v1/")) return next();
    const rule = env.faults.take({
      target: "api",
      path: req.path,
      method: req.method,
      ...withoutUndefined({ instanceId: INSTANCE_IN_PATH.exec(req.path)?.[1], sandboxId: res.locals.sandboxId as string | undefined }),
    });
    if (!rule) return next();
    // Answered before the router: the journal still names the route and instance it was for.
    res.locals.route ??= routeOf(req.method, req.path);
    res.locals.instanceId ??= INSTANCE_IN_PATH.exec(req.path)?.[1];
    const act = () => {
      if (rule.error === "reset") return void req.socket.destroy();
      if (rule.error === "timeout") return; // never answer; the socket dies with the server
      if (rule.status) return sendError(res, new ApiError(rule.status, `Injected fault (HTTP ${rule.status}).`));
      next();
    };
    if (rule.latency_ms) env.clock.setTimeout(act, rule.latency_ms);
    else act();
  };
}
