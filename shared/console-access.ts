/**
 * The access checks both consoles (the emulator's control plane and the
 * daemon's operator console) make alike: the token compared in constant time,
 * the cookie a browser carries it in (a page load cannot add a bearer header),
 * a caller on this machine, and a state change never taken from a page of
 * another origin. Which host names each one answers stays with it.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

const LOOPBACK_ADDRESS = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Constant-time: compares digests, so neither length nor content leaks through timing. */
export const tokenMatches = (given: string, token: string): boolean => timingSafeEqual(digest(given), digest(token));

/** Whether the peer's address is this machine (IPv4, IPv6, or IPv4-mapped loopback). */
export const isLoopbackAddress = (address: string | undefined): boolean => LOOPBACK_ADDRESS.test(address ?? "");

/** The value of cookie `name` (URI-decoded), or undefined when absent or not decodable. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/**
 * A state change a browser marks as sent by a page of another origin
 * (`Sec-Fetch-Site`, `Origin`): a form POST or no-cors fetch from another site
 * passes the loopback and Host checks, and a SameSite cookie still rides along
 * from another port of the same host. curl, supertest and server-side clients
 * send neither header, so they are unaffected. The same rule as Go's CrossOriginProtection.
 */
export function isCrossOrigin(req: IncomingMessage): boolean {
  if (SAFE_METHODS.has(req.method ?? "GET")) return false;
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined) return site !== "same-origin" && site !== "none";
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return true; // "null" (sandboxed frames, file:) or garbage
  }
  return host === "" || host !== (req.headers.host ?? "").trim().toLowerCase();
}
