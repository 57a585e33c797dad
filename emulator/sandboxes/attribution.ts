/**
 * Puts each request in its sandbox before anything else looks at it (fault
 * rules, routes, the clock): by its API key, so code under test sends nothing
 * extra; a request with no key (a signup) by the `X-Emulator-Sandbox` header.
 */
import type { NextFunction, Request, Response } from "express";
import type { EmulatorEnv } from "../env.js";
import { sandboxOfRequest } from "./membership.js";

export function attributeToSandbox(env: EmulatorEnv) {
  return (req: Request, res: Response, next: NextFunction) => {
    // The control plane acts on sandboxes by id; it never runs inside one.
    const id = req.path.startsWith("/_emulator/") ? undefined : sandboxOfRequest(env.store.data, req);
    res.locals.sandboxId = id;
    env.sandboxClocks.enter(id);
    next();
  };
}
