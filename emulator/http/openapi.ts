/**
 * The two OpenAPI documents: `GET /v1/openapi.json` is exactly the service's
 * API (what a client generated for the real service would have: no `/_emulator`
 * operation, so a fuzzer built from it cannot reset the emulator or hang on its
 * event stream), and `GET /_emulator/openapi.json` is the control plane's own,
 * behind the control plane's access rule.
 */
import type { Express, Request, Response } from "express";
import { buildOpenApiDocument } from "../../shared/openapi.js";
import type { EmulatorEnv } from "../env.js";
import { sendError } from "../errors.js";
import { authorizeAdmin } from "./auth.js";

/** A Host header worth echoing: a name or address and a port, nothing else. */
const PLAIN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * `listening()` gives the URL the emulator listens on, or undefined when it
 * listens on every address (or is driven in-process, as supertest does): then
 * `servers` names the address the caller used.
 */
export function mountOpenApi(app: Express, env: EmulatorEnv, listening: () => string | undefined): void {
  const service = documentServer(env.settings.version, "service", listening);
  const control = documentServer(env.settings.version, "control", listening);
  app.get("/v1/openapi.json", service);
  app.get("/_emulator/openapi.json", (req, res) => {
    try {
      authorizeAdmin(env, req);
    } catch (error) {
      return sendError(res, error);
    }
    control(req, res);
  });
}

/** One document per part, kept and rebuilt only when the server URL it names changes. */
function documentServer(version: string, part: "service" | "control", listening: () => string | undefined) {
  let cached: { url: string; body: string } | undefined;
  return (req: Request, res: Response) => {
    const host = req.get("host");
    const url = listening() ?? (host && PLAIN_HOST.test(host) ? `${req.protocol}://${host}` : "http://localhost");
    if (cached?.url !== url) {
      const document = buildOpenApiDocument({ version, serverUrl: url, serviceOnly: part === "service", controlPlaneOnly: part === "control" });
      cached = { url, body: JSON.stringify(document) };
    }
    res.type("application/json").send(cached.body);
  };
}
