/**
 * Sandboxes: create, look at, reset, remove, move the clock of. Each step
 * touches only what the sandbox's record lists, so removing or resetting one
 * costs in proportion to what it holds and leaves every other record alone.
 */
import { isoAt } from "../../shared/clock.js";
import type { SandboxClockRequest, SandboxCreateRequest } from "../../shared/schemas/sandboxes.js";
import { hex, uuid } from "../../shared/random.js";
import type { EmulatorEnv } from "../env.js";
import type { ScriptRegistry } from "../gateway/script/registry.js";
import { applyFixture, type LoadedFixture } from "../seed/apply.js";
import type { Fixture } from "../seed/schema.js";
import { conflict, notFound } from "../errors.js";
import { hashKey } from "../rules/credentials.js";
import type { OrganizationRecord, SandboxRecord } from "../store/state.js";

export interface SandboxView {
  id: string;
  name: string;
  organization_id: string;
  organization_ids: string[];
  instance_count: number;
  request_count: number;
  clock: { now: string; offset_ms: number };
  created_at: string;
}

export interface ClockMove {
  now: string;
  offset_ms: number;
  happened: { kind: "instance_running" | "instance_error" | "key_expired"; id: string; at: string }[];
}

export interface SandboxService {
  create(options?: Omit<SandboxCreateRequest, "fixtures">): SandboxView & { api_key: string };
  get(id: string): SandboxView;
  remove(id: string): void;
  reset(id: string): SandboxView;
  /** Loads a checked fixture into the sandbox: its organizations join it (and go with its removal). */
  loadFixture(id: string, fixture: Fixture): Promise<LoadedFixture>;
  /** Moves the sandbox's clock forward by `advance_ms` or to `set`; 409 for a time before its now. */
  moveClock(id: string, move: SandboxClockRequest): ClockMove;
}

/** `scripts`: the model scripts, whose sandbox scope goes with the sandbox's reset and removal. */
export function createSandboxService(env: EmulatorEnv, scripts?: ScriptRegistry): SandboxService {
  const state = () => env.store.data;
  const find = (id: string): SandboxRecord => {
    const sandbox = Object.hasOwn(state().sandboxes, id) ? state().sandboxes[id] : undefined;
    if (!sandbox) throw notFound(`Sandbox ${id} not found.`);
    return sandbox;
  };
  const nowOf = (sandbox: SandboxRecord) => env.sandboxClocks.run(sandbox.id, () => env.clock.now());
  const view = (sandbox: SandboxRecord): SandboxView => ({
    id: sandbox.id,
    name: sandbox.name,
    organization_id: sandbox.organization_id,
    organization_ids: [...sandbox.organization_ids],
    instance_count: sandbox.instance_ids.filter((id) => state().instances[id]?.status !== "terminated").length,
    request_count: env.journals.count(sandbox.id),
    clock: { now: isoAt(nowOf(sandbox)), offset_ms: sandbox.clock_offset_ms },
    created_at: sandbox.created_at,
  });

  /** Removes the sandbox's instances (files, conversations), keys, billing, model script and organizations but `keep`. */
  const empty = (sandbox: SandboxRecord, keep?: OrganizationRecord) => {
    const data = state();
    for (const id of sandbox.instance_ids) {
      const instance = data.instances[id];
      if (instance && instance.status !== "terminated") {
        env.gateway.forgetInstance(id);
        env.workspaces.destroy(id);
      }
      delete data.instances[id];
    }
    for (const id of sandbox.billing_ids) delete data.billing[id];
    for (const orgId of sandbox.organization_ids) {
      const org = data.organizations[orgId];
      for (const keyId of org?.key_ids ?? []) {
        const key = data.keys[keyId];
        if (key) delete data.credentials[key.key_hash];
        delete data.keys[keyId];
      }
      if (org !== keep) delete data.organizations[orgId];
    }
    const keptHash = keep && sandbox.credential_hashes[sandbox.organization_ids.indexOf(keep.id)];
    for (const hash of sandbox.credential_hashes) if (hash !== keptHash) delete data.credentials[hash];
    env.faults.removeSandbox(sandbox.id);
    // A script set after creation is part of what the sandbox did, not of how it was made.
    scripts?.clear({ kind: "sandbox", sandboxId: sandbox.id });
    env.journals.drop(sandbox.id);
    env.sandboxClocks.forget(sandbox.id);
    sandbox.instance_ids = [];
    sandbox.billing_ids = [];
    sandbox.organization_ids = keep ? [keep.id] : [];
    sandbox.credential_hashes = keptHash ? [keptHash] : [];
  };

  return {
    create(options = {}) {
      const id = `sbx_${hex(env.random, 12)}`;
      const base = env.clock.now();
      const at = isoAt(base);
      const org: OrganizationRecord = {
        id: uuid(env.random),
        name: options.name ?? id,
        tier: "shrimp",
        provider_keys: {},
        instance_ids: [],
        key_ids: [],
        sandbox_id: id,
        created_at: at,
        updated_at: at,
      };
      const apiKey = `svc_org_${hex(env.random, 32)}`;
      const offset = options.clock_start === undefined ? 0 : Date.parse(options.clock_start) - base;
      const sandbox: SandboxRecord = {
        id,
        name: options.name ?? id,
        organization_id: org.id,
        organization_ids: [org.id],
        credential_hashes: [hashKey(apiKey)],
        instance_ids: [],
        billing_ids: [],
        clock_offset_ms: offset,
        initial_clock_offset_ms: offset,
        created_at: at,
      };
      state().sandboxes[id] = sandbox;
      state().organizations[org.id] = org;
      state().credentials[hashKey(apiKey)] = { kind: "org", organization_id: org.id };
      env.store.commit();
      return { ...view(sandbox), api_key: apiKey };
    },

    get: (id) => view(find(id)),

    loadFixture: (id, fixture) => applyFixture(env, fixture, find(id)),

    remove(id) {
      const sandbox = find(id);
      empty(sandbox);
      delete state().sandboxes[id];
      env.store.commit();
    },

    reset(id) {
      const sandbox = find(id);
      const first = state().organizations[sandbox.organization_id];
      empty(sandbox, first);
      if (first) {
        Object.assign(first, { tier: "shrimp", provider_keys: {}, instance_ids: [], key_ids: [], updated_at: isoAt(env.clock.now()) });
      }
      sandbox.clock_offset_ms = sandbox.initial_clock_offset_ms;
      env.store.commit();
      return view(sandbox);
    },

    moveClock(id, move) {
      const sandbox = find(id);
      const from = nowOf(sandbox);
      const to = move.set !== undefined ? Date.parse(move.set) : from + (move.advance_ms ?? 0);
      if (to < from) throw conflict(`A sandbox's clock only moves forward: it is ${isoAt(from)}, ${move.set} is earlier.`);
      sandbox.clock_offset_ms += to - from;
      const happened = env.sandboxClocks.run(sandbox.id, () => whatHappened(env, sandbox, from, to));
      env.sandboxClocks.fireDue(sandbox.id);
      env.store.commit();
      return { now: isoAt(to), offset_ms: sandbox.clock_offset_ms, happened };
    },
  };
}

/** Settles the sandbox's instances whose provisioning ended by `to`, and lists keys that expired in (from, to]. */
function whatHappened(env: EmulatorEnv, sandbox: SandboxRecord, from: number, to: number): ClockMove["happened"] {
  const data = env.store.data;
  const happened: (ClockMove["happened"][number] & { ms: number })[] = [];
  for (const id of sandbox.instance_ids) {
    const instance = data.instances[id];
    if (instance?.status !== "provisioning" || instance.ready_at === null || instance.ready_at > to) continue;
    const at = instance.ready_at;
    const kind = env.settle(instance).status === "running" ? "instance_running" : "instance_error";
    happened.push({ kind, id, at: isoAt(at), ms: at });
  }
  for (const orgId of sandbox.organization_ids) {
    for (const keyId of data.organizations[orgId]?.key_ids ?? []) {
      const expires = data.keys[keyId]?.expires_at;
      const ms = expires ? Date.parse(expires) : Number.NaN;
      if (ms > from && ms <= to) happened.push({ kind: "key_expired", id: keyId, at: isoAt(ms), ms });
    }
  }
  return happened.sort((a, b) => a.ms - b.ms).map(({ ms: _, ...event }) => event);
}
