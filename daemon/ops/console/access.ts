/**
 * Who may use the operator's console, and who they are in the log. With
 * `ops.token` set, every console request carries it (a bearer, or the cookie
 * a page load with `?token=` sets: a browser cannot add a header to page
 * loads); without one the config only allows a loopback ops host, and then a
 * request must come from loopback and name a loopback host (a DNS-rebinding
 * page names its own). A state change is never taken from a page of another
 * origin (CSRF), token or not.
 */
import type { IncomingMessage } from "node:http";
import { cookieValue, isCrossOrigin, isLoopbackAddress, tokenMatches } from "../../../shared/console-access.js";

/** The cookie standing in for the bearer on page loads (HttpOnly: the page's scripts never see it). */
export const CONSOLE_COOKIE = "agent_bridge_console";

const LOOPBACK_HOST = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/i;
const BEARER = /^Bearer\s+(\S+)$/i;

/** Why a request was turned away: the HTTP status and a sentence for the operator. */
export interface Refusal {
  status: 401 | 403;
  error: string;
}

/** undefined when the request may go on; else why not. `token` is `ops.token`. */
export function refusalOf(req: IncomingMessage, token: string | undefined): Refusal | undefined {
  if (isCrossOrigin(req)) return { status: 403, error: "The console refuses changes sent by a page of another origin." };
  if (token !== undefined) {
    const given = BEARER.exec(req.headers.authorization ?? "")?.[1] ?? cookieValue(req.headers.cookie, CONSOLE_COOKIE);
    if (given === undefined) return { status: 401, error: "The console needs the ops token: open /ui/?token=... once, or send it as a bearer." };
    if (!tokenMatches(given, token)) return { status: 401, error: "That is not the ops token." };
    return undefined;
  }
  if (!isLoopbackAddress(req.socket.remoteAddress)) return { status: 401, error: "Without ops.token the console answers this machine only." };
  if (!LOOPBACK_HOST.test(req.headers.host ?? ""))
    return { status: 401, error: "Without ops.token the console answers requests addressed to a loopback host only." };
  return undefined;
}

const OPERATOR_NAME = /^[\p{L}\p{N} ._-]{1,40}$/u;

/**
 * Who did it, for the log: the name the page says its operator gave (self-declared,
 * `x-operator`; one token is shared, so this is a label, not a proof) and the address.
 */
export function actorOf(req: IncomingMessage): string {
  const raw = req.headers["x-operator"];
  const name = typeof raw === "string" && OPERATOR_NAME.test(raw.trim()) ? raw.trim() : "operator";
  return `console:${name}@${req.socket.remoteAddress ?? "unknown"}`;
}
