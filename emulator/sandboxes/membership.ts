/**
 * Which sandbox a record or a request belongs to. Organizations carry their
 * sandbox's id; keys and instances belong to their organization's sandbox; a
 * request belongs to the sandbox of its API key, or, without a key (a signup),
 * to the one its `X-Emulator-Sandbox` header names.
 */
import type { Request } from "express";
import { notFound } from "../errors.js";
import { hashKey } from "../rules/credentials.js";
import type { EmulatorState, OrganizationRecord, SandboxRecord } from "../store/state.js";

/** Places a request with no API key (a signup) in a sandbox. */
export const SANDBOX_HEADER = "x-emulator-sandbox";

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const own = <T>(map: Record<string, T>, id: string): T | undefined => (Object.hasOwn(map, id) ? map[id] : undefined);

export function sandboxOfOrganization(state: EmulatorState, org: OrganizationRecord | undefined): SandboxRecord | undefined {
  return org?.sandbox_id === undefined ? undefined : own(state.sandboxes, org.sandbox_id);
}

export function sandboxOfInstance(state: EmulatorState, instanceId: string): SandboxRecord | undefined {
  const instance = own(state.instances, instanceId);
  return instance && sandboxOfOrganization(state, own(state.organizations, instance.organization_id));
}

/** The sandbox id a request belongs to, if any: from its key, else from the header. */
export function sandboxOfRequest(state: EmulatorState, req: Request): string | undefined {
  const raw = BEARER.exec(req.headers.authorization ?? "")?.[1];
  if (raw !== undefined) {
    const credential = own(state.credentials, hashKey(raw));
    const orgId = credential?.kind === "org" ? credential.organization_id : credential && own(state.keys, credential.key_id)?.organization_id;
    const org = orgId === undefined ? undefined : own(state.organizations, orgId);
    if (org) return org.sandbox_id;
  }
  const named = req.headers[SANDBOX_HEADER];
  return typeof named === "string" && Object.hasOwn(state.sandboxes, named) ? named : undefined;
}

/** A new organization joins the sandbox the signup named (404 when it names none that exists). */
export function adoptOrganization(state: EmulatorState, req: Request, org: OrganizationRecord, keyHash: string): void {
  const named = req.headers[SANDBOX_HEADER];
  if (named === undefined) return;
  const sandbox = typeof named === "string" ? own(state.sandboxes, named) : undefined;
  if (!sandbox) throw notFound(`Sandbox ${String(named).slice(0, 64)} (header ${SANDBOX_HEADER}) not found.`);
  org.sandbox_id = sandbox.id;
  sandbox.organization_ids.push(org.id);
  sandbox.credential_hashes.push(keyHash);
}
