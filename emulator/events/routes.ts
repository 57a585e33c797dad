/** `GET /_emulator/events`: the hub's stream over HTTP, behind the control plane's access rule. */
import type { Express, Request, Response } from "express";
import type { EmulatorEnv } from "../env.js";
import { ApiError, sendError } from "../errors.js";
import { authorizeAdmin } from "../http/auth.js";
import type { EventHub } from "./hub.js";

export function mountEvents(app: Express, env: EmulatorEnv, hub: EventHub): void {
  app.get("/_emulator/events", (req: Request, res: Response) => {
    try {
      authorizeAdmin(env, req);
      if (hub.full) throw new ApiError(503, "Too many event streams are open; close one (or start the emulator with a larger eventsMaxClients).");
    } catch (error) {
      return sendError(res, error);
    }
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
    });
    // `retry` tells EventSource how soon to reconnect; `hello` says the stream is attached.
    res.write(`retry: 1000\nevent: hello\ndata: ${JSON.stringify({ version: env.settings.version, at: new Date(env.clock.now()).toISOString() })}\n\n`);
    const detach = hub.attach(res);
    res.on("close", detach);
  });
}
