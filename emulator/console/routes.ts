/**
 * The web console: its page and assets under `/_emulator/ui/` (any path below
 * answers the page, which routes in the browser), Preact and htm served from
 * node_modules by path (no CDN, no build). Its data routes
 * (`/_emulator/console/...`) are in the route table (`handlers.ts`). Everything is behind the control plane's
 * access rule; with an admin token, `?token=` on a page load sets a cookie
 * that stands in for the bearer (a browser cannot add one to page loads).
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { EmulatorEnv } from "../env.js";
import { notFound, sendError, unauthorized } from "../errors.js";
import { ADMIN_COOKIE, authorizeAdmin } from "../http/auth.js";
import { tokenMatches } from "../../shared/console-access.js";
import { CONSOLE_SECURITY_HEADERS, CONSOLE_SHARED_DIR, vendorModules } from "../../shared/web-console.js";

const UI_DIR = join(dirname(fileURLToPath(import.meta.url)), "ui");

export function mountConsole(app: Express, env: EmulatorEnv): void {
  const vendor = vendorModules();
  const index = readFileSync(join(UI_DIR, "index.html"), "utf8");

  const admin = (req: Request, res: Response, next: NextFunction) => {
    try {
      authorizeAdmin(env, req);
      res.set(CONSOLE_SECURITY_HEADERS);
      next();
    } catch (error) {
      sendError(res, error);
    }
  };
  const param = (req: Request, name: string) => String(req.params[name]);

  // Token exchange first: it is how a browser gets past `admin` when a token is set.
  app.get(["/_emulator/ui", "/_emulator/ui/{*rest}"], (req, res, next) => {
    const token = env.settings.adminToken;
    const given = typeof req.query.token === "string" ? req.query.token : undefined;
    if (!token || given === undefined) return next();
    if (!tokenMatches(given, token)) return sendError(res, unauthorized("The control plane needs the admin token."));
    res.cookie(ADMIN_COOKIE, given, { httpOnly: true, sameSite: "strict", path: "/_emulator" });
    // The same page without the token (it must not stay in the address bar or history), other parameters kept.
    const rest = new URLSearchParams(req.originalUrl.includes("?") ? req.originalUrl.slice(req.originalUrl.indexOf("?") + 1) : "");
    rest.delete("token");
    const query = rest.toString();
    res.redirect(303, query ? `${req.path}?${query}` : req.path);
  });
  // Routing is not strict: `/_emulator/ui` also matches `/_emulator/ui/`, which must not redirect.
  app.get("/_emulator/ui", admin, (req, res, next) => (req.originalUrl.split("?")[0] === "/_emulator/ui" ? res.redirect(301, "/_emulator/ui/") : next()));
  app.get("/_emulator/ui/vendor/:name", admin, (req, res) => {
    const body = vendor.get(param(req, "name"));
    if (body === undefined) return sendError(res, notFound("No such vendor module."));
    res.type("text/javascript").set("cache-control", "no-cache").send(body);
  });
  app.use(
    "/_emulator/ui/shared",
    admin,
    express.static(CONSOLE_SHARED_DIR, { index: false, fallthrough: false, dotfiles: "deny", cacheControl: true, maxAge: 0 }),
  );
  app.use("/_emulator/ui/assets", admin, express.static(UI_DIR, { index: false, fallthrough: false, dotfiles: "deny", cacheControl: true, maxAge: 0 }));
  // Every other page path is the app: the browser router reads the location.
  app.get("/_emulator/ui/{*rest}", admin, (_req, res) => void res.type("html").set("cache-control", "no-cache").send(index));
}
