/**
 * A snapshot import is checked as strictly as the API checks its input:
 * every record against its schema (ids of the minted form), then every
 * reference between records. Anything wrong is a 422 listing where, and
 * nothing is replaced.
 */
import { ApiError, validationError } from "../errors.js";
import { SnapshotState } from "./schema.js";
import { type EmulatorState, headKey } from "./state.js";

type Issue = { loc: (string | number)[]; msg: string; type: string };

/** Most issues listed in one answer: a broken export can have thousands. */
const MAX_ISSUES = 50;

export function parseSnapshotState(value: unknown): EmulatorState {
  const parsed = SnapshotState.safeParse(value);
  if (!parsed.success) throw validationError("body", parsed.error, MAX_ISSUES);
  // The generator's position is the running emulator's own, not the snapshot's.
  const { random_position: _, ...state } = parsed.data;
  const issues = referenceIssues(state);
  if (issues.length) throw new ApiError(422, issues.slice(0, MAX_ISSUES));
  return state;
}

function referenceIssues(state: EmulatorState): Issue[] {
  const issues: Issue[] = [];
  const bad = (loc: (string | number)[], msg: string) => issues.push({ loc: ["body", ...loc], msg, type: "value_error" });
  const has = (map: object, id: string) => Object.hasOwn(map, id);

  for (const [id, org] of Object.entries(state.organizations)) {
    if (org.id !== id) bad(["organizations", id, "id"], "Must equal its key");
    org.instance_ids.forEach((instanceId, i) => {
      const instance = has(state.instances, instanceId) ? state.instances[instanceId] : undefined;
      if (!instance || instance.organization_id !== id || instance.status === "terminated") {
        bad(["organizations", id, "instance_ids", i], "Must name a live instance of this organization");
      }
    });
    org.key_ids.forEach((keyId, i) => {
      if (!has(state.keys, keyId) || state.keys[keyId]!.organization_id !== id)
        bad(["organizations", id, "key_ids", i], "Must name a key of this organization");
    });
  }
  for (const [id, org] of Object.entries(state.organizations)) {
    if (org.sandbox_id !== undefined && !state.sandboxes[org.sandbox_id]?.organization_ids.includes(id))
      bad(["organizations", id, "sandbox_id"], "Must name a sandbox that lists this organization");
  }
  for (const [id, sandbox] of Object.entries(state.sandboxes)) {
    if (sandbox.id !== id) bad(["sandboxes", id, "id"], "Must equal its key");
    sandbox.organization_ids.forEach((orgId, i) => {
      if (!has(state.organizations, orgId) || state.organizations[orgId]!.sandbox_id !== id)
        bad(["sandboxes", id, "organization_ids", i], "Must name an organization of this sandbox");
    });
  }
  for (const [id, instance] of Object.entries(state.instances)) {
    if (instance.id !== id) bad(["instances", id, "id"], "Must equal its key");
    if (!has(state.organizations, instance.organization_id)) bad(["instances", id, "organization_id"], "Unknown organization");
  }
  for (const [id, key] of Object.entries(state.keys)) {
    if (key.id !== id) bad(["keys", id, "id"], "Must equal its key");
    if (!has(state.organizations, key.organization_id)) bad(["keys", id, "organization_id"], "Unknown organization");
    for (const instanceId of Object.keys(key.grants)) {
      if (!has(state.instances, instanceId)) bad(["keys", id, "grants", instanceId], "Unknown instance");
    }
  }
  for (const [hash, credential] of Object.entries(state.credentials)) {
    if (credential.kind === "org" ? !has(state.organizations, credential.organization_id) : !has(state.keys, credential.key_id)) {
      bad(["credentials", hash], "Names an unknown organization or key");
    } else if (credential.kind === "scoped" && state.keys[credential.key_id]!.key_hash !== hash) {
      bad(["credentials", hash], "Must be the key's own hash");
    }
  }
  for (const [id, session] of Object.entries(state.billing)) {
    if (session.id !== id) bad(["billing", id, "id"], "Must equal its key");
    if (!has(state.organizations, session.organization_id)) bad(["billing", id, "organization_id"], "Unknown organization");
  }
  const { responses, heads } = state.gateway;
  for (const [id, response] of Object.entries(responses)) {
    if (response.id !== id) bad(["gateway", "responses", id, "id"], "Must equal its key");
    if (!has(state.instances, response.instance_id)) bad(["gateway", "responses", id, "instance_id"], "Unknown instance");
    if (response.parent_id !== null && (!has(responses, response.parent_id) || responses[response.parent_id]!.instance_id !== response.instance_id)) {
      bad(["gateway", "responses", id, "parent_id"], "Must name a response of the same instance");
    }
  }
  for (const [key, id] of Object.entries(heads)) {
    const response = has(responses, id) ? responses[id] : undefined;
    if (!response || headKey(response.instance_id, response.session) !== key)
      bad(["gateway", "heads", key], "Must name the latest response of that instance and session");
  }
  return issues;
}
