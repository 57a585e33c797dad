/**
 * Who is calling and whether they may: SHA-256 of the bearer key looked up in
 * the credentials map, then the route's access rule. 401 for no usable key,
 * 403 for a key that exists but may not, 404 for what the caller cannot see.
 */
import type { Request } from "express";
import type { Access } from "../../shared/api.js";
import { isoAt } from "../../shared/clock.js";
import type { EmulatorEnv } from "../env.js";
import { forbidden, notFound, unauthorized } from "../errors.js";
import type { InstanceRecord, KeyRecord, OrganizationRecord } from "../store/state.js";
import { hashKey } from "../rules/credentials.js";
import { cookieValue, isCrossOrigin, isLoopbackAddress, tokenMatches } from "../../shared/console-access.js";

export type Caller = { kind: "org"; organization: OrganizationRecord } | { kind: "scoped"; organization: OrganizationRecord; key: KeyRecord };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function authenticate(env: EmulatorEnv, header: string | undefined): Caller {
  if (!header) throw unauthorized("Missing API key: send Authorization: Bearer <key>.");
  const match = BEARER.exec(header);
  if (!match) throw unauthorized("Malformed Authorization header: expected Bearer <key>.");
  const state = env.store.data;
  const credential = state.credentials[hashKey(match[1]!)];
  if (!credential) throw unauthorized("Invalid API key.");
  if (credential.kind === "org") {
    const organization = state.organizations[credential.organization_id];
    if (!organization) throw unauthorized("Invalid API key.");
    return { kind: "org", organization };
  }
  const key = state.keys[credential.key_id];
  const organization = key && state.organizations[key.organization_id];
  if (!key || !organization) throw unauthorized("Invalid API key.");
  if (key.revoked_at) throw forbidden("API key has been revoked.");
  const now = env.clock.now();
  if (key.expires_at && Date.parse(key.expires_at) <= now) throw forbidden("API key has expired.");
  // Bookkeeping only: written with the next flush, never a write per request.
  key.last_used_at = isoAt(now);
  env.store.touch();
  return { kind: "scoped", organization, key };
}

/** Finds the instance the caller names, applying the contract's 404/403 split. */
export function authorizeInstance(env: EmulatorEnv, caller: Caller, access: Access, instanceId: string): InstanceRecord {
  const instance = env.store.data.instances[instanceId];
  if (!instance || instance.organization_id !== caller.organization.id || instance.status === "terminated") {
    throw notFound(`Instance ${instanceId} not found.`);
  }
  if (caller.kind === "org") return instance;
  if (access.kind !== "instance") throw forbidden("This operation requires an organization key.");
  const granted = caller.key.grants[instanceId];
  if (!granted) throw forbidden("This API key has no access to this instance.");
  if (!granted.includes(access.permission)) {
    throw forbidden(`This API key lacks the '${access.permission}' permission on this instance.`);
  }
  return instance;
}

export function requireOrgKey(caller: Caller): void {
  if (caller.kind !== "org") throw forbidden("This operation requires an organization key.");
}

const LOOPBACK_HOST = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\])$/i;

/** A whole `Host` header: a name or a bracketed IPv6 address, then an optional port; nothing else. */
const HOST_HEADER = /^(\[[^\]]*\]|[^:[\]]*)(?::\d{1,5})?$/;

/**
 * The host part of a `Host` header (`name`, `name:port`, `[v6]`, `[v6]:port`),
 * lowercased. Anything else (`[::1].evil`, `localhost:80@evil`) is returned
 * whole, so it matches no allowed name.
 */
export function hostName(header: string): string {
  const value = header.trim().toLowerCase();
  return HOST_HEADER.exec(value)?.[1] ?? value;
}

/**
 * Without an admin token, a page on another site could reach the control plane
 * through a name that resolves to 127.0.0.1 (DNS rebinding): its requests then
 * carry that name in `Host`. Only loopback names and the configured listen
 * host are answered.
 */
export function isAllowedHost(header: string | undefined, configuredHost: string | undefined): boolean {
  if (!header) return false;
  const name = hostName(header);
  if (LOOPBACK_HOST.test(name)) return true;
  // A wildcard listen address is no name: `http://0.0.0.0:port/` reaches loopback from some browsers.
  if (!configuredHost || configuredHost === "0.0.0.0" || configuredHost === "::") return false;
  const configured = configuredHost.includes(":") && !configuredHost.startsWith("[") ? `[${configuredHost}]` : configuredHost;
  return name === configured.toLowerCase();
}

/**
 * The authority of an absolute-form target (`GET http://name/path`), which
 * RFC 9112 (3.2.2) puts before `Host`; null for the usual origin form.
 */
export function absoluteTargetHost(req: Request): string | null {
  const target = req.originalUrl;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) return null;
  try {
    return new URL(target).host;
  } catch {
    return "";
  }
}

/** The console's browser cannot send a bearer on page loads: it may carry the token in this cookie. */
export const ADMIN_COOKIE = "emulator_admin";

/**
 * The control plane: token when one is set, else loopback callers naming a
 * loopback (or the configured) host only; and a state change never from a
 * page of another origin.
 */
export function authorizeAdmin(env: EmulatorEnv, req: Request): void {
  if (isCrossOrigin(req)) throw forbidden("The control plane refuses state changes sent by a page of another origin (Origin / Sec-Fetch-Site).");
  const token = env.settings.adminToken;
  if (token) {
    const bearer = BEARER.exec(req.headers.authorization ?? "")?.[1];
    const given = bearer ?? cookieValue(req.headers.cookie, ADMIN_COOKIE) ?? "";
    if (!tokenMatches(given, token)) throw unauthorized("The control plane needs the admin token.");
    return;
  }
  if (!isLoopbackAddress(req.socket.remoteAddress)) {
    throw unauthorized("The control plane answers loopback callers only; start with --admin-token to open it.");
  }
  // Both must name us: `Host`, and an absolute-form target's authority when there is one.
  const absolute = absoluteTargetHost(req);
  if (!isAllowedHost(req.headers.host, env.settings.listenHost) || (absolute !== null && !isAllowedHost(absolute, env.settings.listenHost))) {
    throw unauthorized("The control plane answers only requests addressed to a loopback host (Host header); start with --admin-token to open it.");
  }
}
