/**
 * The store's change tracking keeps the plain state free of its proxies at
 * every depth, whatever shape the assignment has, so the state can always
 * be copied (`structuredClone`, the snapshot export) and written.
 */
import { types } from "node:util";
import { expect, it } from "vitest";
import { emptyState, type EmulatorState } from "../../emulator/store/state.js";
import { DirtyRecords, trackState } from "../../emulator/store/tracked.js";

const ORG = "00000000-0000-4000-8000-000000000001";

/** Every proxy reachable in `value`, by path. */
function proxiesIn(value: unknown, path = "state"): string[] {
  if (typeof value !== "object" || value === null) return [];
  if (types.isProxy(value)) return [path];
  return Object.entries(value).flatMap(([key, child]) => proxiesIn(child, `${path}.${key}`));
}

function tracked(): { plain: EmulatorState; state: EmulatorState; dirty: DirtyRecords } {
  const plain = emptyState();
  const dirty = new DirtyRecords();
  const state = trackState(plain, dirty);
  state.organizations[ORG] = {
    id: ORG,
    name: "acme",
    tier: "shrimp",
    provider_keys: { anthropic: { fingerprint: "f", set_at: "2026-01-01T00:00:00.000Z" } },
    instance_ids: [],
    key_ids: [],
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z",
  };
  dirty.take();
  return { plain, state, dirty };
}

it("stores a spread of a tracked record without the proxies its nested objects were read as", () => {
  const { plain, state, dirty } = tracked();
  const org = state.organizations[ORG]!;
  // The copy's nested objects are the proxies the read handed out.
  state.organizations[ORG] = { ...org, name: "renamed" };
  org.instance_ids = [...org.instance_ids];
  expect(proxiesIn(plain)).toEqual([]);
  expect(() => structuredClone(plain)).not.toThrow();
  expect(dirty.take().changed.get("organizations")).toEqual(new Set([ORG]));
});

it("unwraps proxies inside new arrays and objects, and through defineProperty", () => {
  const { plain, state, dirty } = tracked();
  const org = state.organizations[ORG]!;
  const keys = org.provider_keys;
  Object.defineProperty(org, "provider_keys", { value: { nested: { again: keys } }, enumerable: true, writable: true, configurable: true });
  expect(dirty.take().changed.get("organizations")).toEqual(new Set([ORG]));
  (org as unknown as { list: unknown[] }).list = [keys, [keys]];
  state.organizations[ORG] = { ...state.organizations[ORG]! };
  expect(proxiesIn(plain)).toEqual([]);
  expect(structuredClone(plain).organizations[ORG]!.provider_keys).toEqual({
    nested: { again: { anthropic: { fingerprint: "f", set_at: "2026-01-01T00:00:00.000Z" } } },
  });
});

it("unwraps a tracked object from a state replaced since", () => {
  const { state } = tracked();
  const old = state.organizations[ORG]!;
  const next = emptyState();
  const replaced = trackState(next, new DirtyRecords());
  replaced.organizations[ORG] = old;
  replaced.organizations[ORG] = { ...replaced.organizations[ORG]! };
  expect(proxiesIn(next)).toEqual([]);
});
