/**
 * Who is calling and whether they may: SHA-256 of the bearer key looked up in
 * the credentials map, then the route's access rule. 401 for no usable key,
 * 403 for a key that exists but may not, 404 for what the caller cannot see.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Request } from "express";
import type { Access } from "../../shared/api.js";
import { isoAt } from "../../shared/clock.js";
import type { EmulatorEnv } from "../env.js";
import { forbidden, notFound, unauthorized } from "../errors.js";
import type { InstanceRecord, KeyRecord, OrganizationRecord } from "../store/state.js";

export type Caller =
  | { kind: "org"; organization: OrganizationRecord }
  | { kind: "scoped"; organization: OrganizationRecord; key: KeyRecord };

export const hashKey = (raw: string): string => createHash("sha256").update(raw).digest("hex");

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

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/** The control plane: token when one is set, else loopback callers only. */
export function authorizeAdmin(env: EmulatorEnv, req: Request): void {
  const token = env.settings.adminToken;
  if (token) {
    const given = BEARER.exec(req.headers.authorization ?? "")?.[1] ?? "";
    const a = Buffer.from(hashKey(given));
    const b = Buffer.from(hashKey(token));
    if (!timingSafeEqual(a, b)) throw unauthorized("The control plane needs the admin token.");
    return;
  }
  if (!LOOPBACK.test(req.socket.remoteAddress ?? "")) {
    throw unauthorized("The control plane answers loopback callers only; start with --admin-token to open it.");
  }
}
