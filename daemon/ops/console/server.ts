/**
 * The operator's console on the ops server: the page and its assets under
 * `/ui/` (any other path below answers the page, which routes in the
 * browser), Preact and htm from node_modules, the API under `/ui/api/`, and
 * the live events at `/ui/api/events` (server-sent events). Every request
 * passes access.ts first; the page is held to its own scripts (CSP).
 */
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { tokenMatches } from "../../../shared/console-access.js";
import { CONSOLE_SECURITY_HEADERS, CONSOLE_SHARED_DIR, vendorModules } from "../../../shared/web-console.js";
import { LeaseLostError } from "../../vocabulary/state-errors.js";
import { CONSOLE_COOKIE, actorOf, refusalOf } from "./access.js";
import { ConsoleApi, type Answer, type ConsoleDeps } from "./api.js";

/** The page's files; `ops-ui` (not `ui`) so the bundled command line can keep them beside the emulator console's. */
const UI_DIR = join(dirname(fileURLToPath(import.meta.url)), "ops-ui");
const TYPES: Record<string, string> = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8" };
/** The largest request body the API reads (its bodies are a channel id and a code). */
const MAX_BODY = 16 * 1024;
/** Bytes an events reader may fall behind by before its stream is closed. */
const MAX_BUFFERED = 1024 * 1024;
/** A comment line on the events stream this often keeps proxies from closing it. */
const KEEPALIVE_MS = 25_000;

export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/** The console's request handler: true when it took the request (a path under `/ui`). */
export function createConsole(deps: ConsoleDeps & { token: string | undefined }): ConsoleHandler {
  const api = new ConsoleApi(deps);
  const vendor = vendorModules();
  const index = readFileSync(join(UI_DIR, "index.html"), "utf8");

  const send = (res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...CONSOLE_SECURITY_HEADERS, "content-type": type, "cache-control": "no-store", ...extra });
    res.end(body);
  };
  const json = (res: ServerResponse, answer: Answer) => send(res, answer.status, "application/json; charset=utf-8", JSON.stringify(answer.body));

  /** `?token=` on a page load: checked, kept in an HttpOnly cookie, and taken out of the address bar. */
  const exchangeToken = (req: IncomingMessage, res: ServerResponse, url: URL): boolean => {
    const given = url.searchParams.get("token");
    if (deps.token === undefined || given === null) return false;
    if (!tokenMatches(given, deps.token)) {
      json(res, { status: 401, body: { error: "That is not the ops token." } });
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

  const events = (req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { ...CONSOLE_SECURITY_HEADERS, "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" });
    const write = (type: string, data: unknown) => {
      // A reader that stopped reading is let go rather than buffered without end: it reconnects and reloads on `hello`.
      if (res.writableLength > MAX_BUFFERED) return void res.destroy();
      res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    // Attached before `hello`: nothing after it is missed.
    const off = deps.feed.subscribe((event) => write(event.type, event));
    write("hello", { at: deps.clock.now() });
    let keepalive = { cancel() {} };
    const beat = () => {
      keepalive = deps.clock.setTimeout(() => {
        res.write(": keepalive\n\n");
        beat();
      }, KEEPALIVE_MS);
    };
    beat();
    req.on("close", () => {
      off();
      keepalive.cancel();
    });
  };

  const route = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const method = req.method ?? "GET";
    const actor = actorOf(req);
    const api_ = path.slice("/ui/api/".length);
    const chat = /^chats\/([^/]+)(\/fresh-session)?$/.exec(api_);
    if (method === "GET" && api_ === "overview") return json(res, await api.overview());
    if (method === "GET" && api_ === "pairing") return json(res, api.pairingList());
    if (method === "POST" && api_ === "pairing/approve") return json(res, await api.approve(await readJson(req), actor));
    if (method === "POST" && api_ === "pairing/revoke") return json(res, await api.revoke(await readJson(req), actor));
    if (method === "GET" && api_ === "chats") return json(res, api.chats());
    if (chat && method === "GET" && !chat[2]) return json(res, api.chat(decodeURIComponent(chat[1]!), actor));
    if (chat && method === "POST" && chat[2]) return json(res, await api.freshSession(decodeURIComponent(chat[1]!), actor));
    if (method === "GET" && api_ === "links") return json(res, await api.links());
    const relink = /^links\/([^/]+)\/relink$/.exec(api_);
    if (relink && method === "POST") return json(res, await api.relink(decodeURIComponent(relink[1]!), actor));
    if (method === "GET" && api_ === "cluster") return json(res, await api.cluster());
    const handOver = /^cluster\/units\/([^/]+)\/hand-over$/.exec(api_);
    if (handOver && method === "POST") return json(res, await api.handOver(decodeURIComponent(handOver[1]!), actor));
    if (method === "GET" && api_ === "events") return events(req, res);
    return json(res, { status: 404, body: { error: "No such console route." } });
  };

  const asset = (res: ServerResponse, dir: string, name: string) => {
    const file = normalize(join(dir, name));
    if (!file.startsWith(`${dir}/`) || !TYPES[extname(file)]) return json(res, { status: 404, body: { error: "No such asset." } });
    let body: string;
    try {
      body = readFileSync(file, "utf8");
    } catch {
      return json(res, { status: 404, body: { error: "No such asset." } });
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
      json(res, { status: refusal.status, body: { error: refusal.error } });
      return true;
    }
    if (path === "/ui") {
      res.writeHead(301, { location: "/ui/" });
      res.end();
    } else if (path.startsWith("/ui/api/")) {
      route(req, res, path).catch((error: unknown) => {
        if (!res.headersSent) json(res, failureAnswer(error, path, deps.logger));
        else res.end();
      });
    } else if (path.startsWith("/ui/vendor/")) {
      const body = vendor.get(path.slice("/ui/vendor/".length));
      if (body === undefined) json(res, { status: 404, body: { error: "No such vendor module." } });
      else send(res, 200, TYPES[".js"]!, body, { "cache-control": "no-cache" });
    } else if (path.startsWith("/ui/assets/")) asset(res, UI_DIR, path.slice("/ui/assets/".length));
    else if (path.startsWith("/ui/shared/")) asset(res, CONSOLE_SHARED_DIR, path.slice("/ui/shared/".length));
    else if (req.method === "GET" || req.method === "HEAD") send(res, 200, TYPES[".html"]!, index, { "cache-control": "no-cache" });
    else json(res, { status: 405, body: { error: "method not allowed" } });
    return true;
  };
}

/** A request body that is not the JSON asked for. */
class BodyError extends Error {}

/** The one place a console failure becomes an HTTP answer (the log keeps the detail; the page gets a sentence). */
function failureAnswer(error: unknown, path: string, logger: ConsoleDeps["logger"]): Answer {
  if (error instanceof BodyError) return { status: 400, body: { error: error.message } };
  // Several machines: the account moved to another node (or never was on this one).
  if (error instanceof LeaseLostError)
    return { status: 409, body: { error: "This node does not own that account now: open the console of the node that does (see Nodes)." } };
  logger.error({ err: error instanceof Error ? error.message : String(error), path }, "console request failed");
  return { status: 500, body: { error: "The console request failed (see the daemon's log)." } };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new BodyError("The request body is too large.");
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new BodyError("The request body is not JSON.");
  }
}
