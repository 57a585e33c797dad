/**
 * The operator's console on the ops server: the page and its assets under
 * `/ui/` (any other path below answers the page, which routes in the
 * browser), Preact and htm from node_modules, the API under `/ui/api/` (one
 * route table, each answer parsed by its schema in shared/schemas/ops-console.ts),
 * and the live events at `/ui/api/events` (server-sent events, bounded:
 * event-stream.ts). Every request passes access.ts first; the page is held to
 * its own scripts (CSP).
 */
import { readBody } from "../../../shared/http/read-body.js";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import type { z } from "zod";
import { tokenMatches } from "../../../shared/console-access.js";
import { RouteTable } from "../../../shared/http/route-table.js";
import * as schemas from "../../../shared/schemas/ops-console.js";
import { CONSOLE_SECURITY_HEADERS, CONSOLE_SHARED_DIR, vendorModules } from "../../../shared/web-console.js";
import { LeaseLostError } from "../../vocabulary/state-errors.js";
import { CONSOLE_COOKIE, actorOf, refusalOf } from "./access.js";
import { ConsoleApi, problem, type Answer, type ConsoleDeps, type Problem } from "./api.js";
import { createEventStream } from "./event-stream.js";
import { platformName } from "../../adapters/platform-names.js";

/** The page's files; `ops-ui` (not `ui`) so the bundled command line can keep them beside the emulator console's. */
const UI_DIR = join(dirname(fileURLToPath(import.meta.url)), "ops-ui");
const TYPES: Record<string, string> = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8" };
/** The largest request body the API reads (its bodies are a channel id and a code). */
const MAX_BODY = 16 * 1024;

export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/** What a route is given: its path parameters, the body (read only by routes that take one) and who asks. */
interface RouteContext {
  params: Record<string, string>;
  body(): Promise<unknown>;
  actor: string;
}
/** A route of the API: its answer's schema (every 200 is parsed by it before it is sent) and its handler. */
interface ApiRoute {
  response: z.ZodType;
  handle(ctx: RouteContext): Answer<unknown> | Promise<Answer<unknown>>;
}
/** Ties a handler's answer to its schema's type, then forgets the type for the table. */
const route = <S extends z.ZodType>(response: S, handle: (ctx: RouteContext) => Answer<z.input<S>> | Promise<Answer<z.input<S>>>): ApiRoute => ({
  response,
  handle,
});

/** The console's API, one table (the emulator's route matcher): `{name}` is a percent-decoded path parameter. */
function apiRoutes(api: ConsoleApi): RouteTable<ApiRoute | "events"> {
  const table = new RouteTable<ApiRoute | "events">();
  table.add(
    "GET",
    "/ui/api/overview",
    route(schemas.OpsOverview, () => api.overview()),
  );
  table.add(
    "GET",
    "/ui/api/pairing",
    route(schemas.OpsPairing, () => api.pairingList()),
  );
  table.add(
    "POST",
    "/ui/api/pairing/approve",
    route(schemas.OpsDone, async (c) => api.approve(await c.body(), c.actor)),
  );
  table.add(
    "POST",
    "/ui/api/pairing/revoke",
    route(schemas.OpsDone, async (c) => api.revoke(await c.body(), c.actor)),
  );
  table.add(
    "GET",
    "/ui/api/chats",
    route(schemas.OpsChats, () => api.chats()),
  );
  table.add(
    "GET",
    "/ui/api/chats/{key}",
    route(schemas.OpsChat, (c) => api.chat(c.params.key!, c.actor)),
  );
  table.add(
    "POST",
    "/ui/api/chats/{key}/fresh-session",
    route(schemas.OpsFreshSession, (c) => api.freshSession(c.params.key!, c.actor)),
  );
  table.add(
    "GET",
    "/ui/api/links",
    route(schemas.OpsLinks, () => api.links()),
  );
  table.add(
    "POST",
    "/ui/api/links/{channel}/relink",
    route(schemas.OpsDone, (c) => api.relink(c.params.channel!, c.actor)),
  );
  table.add(
    "GET",
    "/ui/api/cluster",
    route(schemas.OpsCluster, () => api.cluster()),
  );
  table.add(
    "POST",
    "/ui/api/cluster/units/{unit}/hand-over",
    route(schemas.OpsDone, (c) => api.handOver(c.params.unit!, c.actor)),
  );
  table.add("GET", "/ui/api/events", "events");
  return table;
}

/** The console's request handler: true when it took the request (a path under `/ui`). */
export function createConsole(deps: ConsoleDeps & { token: string | undefined }): ConsoleHandler {
  const api = new ConsoleApi(deps);
  const table = apiRoutes(api);
  const stream = createEventStream({
    clock: deps.clock,
    subscribe: (listener) => deps.feed.subscribe(listener),
    // Each chat named as the lists name it, each platform as a person says it; parsed by the shared schema
    // (an event it does not describe is left out and logged: a reader must not break the relay that emits).
    view: (event) => {
      const parsed = schemas.OpsEvent.safeParse(
        "chat" in event
          ? { ...event, chat: { ...event.chat, name: api.nameOf(event.chat) } }
          : event.type === "channel"
            ? { ...event, platformName: platformName(event.platform) }
            : event,
      );
      if (!parsed.success) deps.logger.warn({ type: event.type }, "console event left out: it does not fit its schema");
      return parsed.success ? parsed.data : undefined;
    },
  });
  const vendor = vendorModules();
  const index = readFileSync(join(UI_DIR, "index.html"), "utf8");

  const send = (res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...CONSOLE_SECURITY_HEADERS, "content-type": type, "cache-control": "no-store", ...extra });
    res.end(body);
  };
  const json = (res: ServerResponse, answer: { status: number; body: unknown }) =>
    send(res, answer.status, "application/json; charset=utf-8", JSON.stringify(answer.body));

  /** `?token=` on a page load: checked, kept in an HttpOnly cookie, and taken out of the address bar. */
  const exchangeToken = (req: IncomingMessage, res: ServerResponse, url: URL): boolean => {
    const given = url.searchParams.get("token");
    if (deps.token === undefined || given === null) return false;
    if (!tokenMatches(given, deps.token)) {
      json(res, problem(401, "That is not the ops token."));
      return true;
    }
    url.searchParams.delete("token");
    const rest = url.searchParams.toString();
    res.writeHead(303, {
      "set-cookie": `${CONSOLE_COOKIE}=${encodeURIComponent(given)}; HttpOnly; SameSite=Strict; Path=/ui`,
      location: rest ? `${url.pathname}?${rest}` : url.pathname,
      "cache-control": "no-store",
    });
    res.end();
    deps.logger.info({ by: actorOf(req) }, "console signed in with the ops token");
    return true;
  };

  const dispatch = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const method = req.method ?? "GET";
    const found = table.match(method, path);
    if (!found) return json(res, problem(404, "No such console route."));
    if (found.kind === "wrong_method") {
      res.setHeader("allow", found.allow);
      return json(res, problem(405, `That console route takes ${found.allow} only.`));
    }
    if (found.value === "events") {
      if (!stream.open(res))
        json(res, problem(503, "Too many console event streams are open: close a console tab, or wait: a stalled one is let go within two minutes."));
      return;
    }
    const { response, handle } = found.value;
    const answer = await handle({ params: found.params, body: () => readJson(req), actor: actorOf(req) });
    json(res, answer.status === 200 ? { status: 200, body: response.parse(answer.body) } : answer);
  };

  const asset = (res: ServerResponse, dir: string, name: string) => {
    const file = normalize(join(dir, name));
    if (!file.startsWith(`${dir}/`) || !TYPES[extname(file)]) return json(res, problem(404, "No such asset."));
    let body: string;
    try {
      body = readFileSync(file, "utf8");
    } catch {
      return json(res, problem(404, "No such asset."));
    }
    send(res, 200, TYPES[extname(file)]!, body, { "cache-control": "no-cache" });
  };

  return (req, res) => {
    const url = new URL(req.url ?? "/", "http://ops.invalid");
    const path = url.pathname;
    if (path !== "/ui" && !path.startsWith("/ui/")) return false;
    if (req.method === "GET" && exchangeToken(req, res, url)) return true;
    const refusal = refusalOf(req, deps.token);
    if (refusal) {
      if (req.method !== "GET" || path.startsWith("/ui/api/")) deps.logger.warn({ by: actorOf(req), path, status: refusal.status }, "console request refused");
      json(res, problem(refusal.status, refusal.error));
      return true;
    }
    if (path === "/ui") {
      res.writeHead(301, { location: "/ui/" });
      res.end();
    } else if (path.startsWith("/ui/api/")) {
      dispatch(req, res, url.pathname).catch((error: unknown) => {
        if (!res.headersSent) json(res, failureAnswer(error, path, deps.logger));
        else res.end();
      });
    } else if (path.startsWith("/ui/vendor/")) {
      const body = vendor.get(path.slice("/ui/vendor/".length));
      if (body === undefined) json(res, problem(404, "No such vendor module."));
      else send(res, 200, TYPES[".js"]!, body, { "cache-control": "no-cache" });
    } else if (path.startsWith("/ui/assets/")) asset(res, UI_DIR, path.slice("/ui/assets/".length));
    else if (path.startsWith("/ui/shared/")) asset(res, CONSOLE_SHARED_DIR, path.slice("/ui/shared/".length));
    else if (req.method === "GET" || req.method === "HEAD") send(res, 200, TYPES[".html"]!, index, { "cache-control": "no-cache" });
    else json(res, problem(405, "method not allowed"));
    return true;
  };
}

/** A request body that is not the JSON asked for. */
class BodyError extends Error {}

/** The one place a console failure becomes an HTTP answer (the log keeps the detail; the page gets a sentence). */
function failureAnswer(error: unknown, path: string, logger: ConsoleDeps["logger"]): Problem {
  if (error instanceof BodyError) return problem(400, error.message);
  if (error instanceof URIError) return problem(400, "A path parameter is not well encoded.");
  // Several machines: the account moved to another node (or never was on this one).
  if (error instanceof LeaseLostError) return problem(409, "This node does not own that account now: open the console of the node that does (see Nodes).");
  logger.error({ err: error instanceof Error ? error.message : String(error), path }, "console request failed");
  return problem(500, "The console request failed (see the daemon's log).");
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const read = await readBody(req, { maxBytes: MAX_BODY });
  if (!read.ok) throw new BodyError(read.reason === "too_large" ? "The request body is too large." : "The request body could not be read.");
  try {
    return JSON.parse(read.body.toString("utf8"));
  } catch {
    throw new BodyError("The request body is not JSON.");
  }
}
