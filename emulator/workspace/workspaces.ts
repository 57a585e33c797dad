/**
 * Each instance owns a real directory tree: `<root>/<instance id>/` holding
 * `runtime.json`, `workspace/` and `skills/`. Created with the instance,
 * removed when it is terminated.
 */
import { mkdirSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import type { InstanceRecord } from "../store/state.js";

export interface Workspaces {
  readonly root: string;
  /** The instance's root directory (it may not exist for a terminated instance). */
  rootOf(instanceId: string): string;
  create(instance: InstanceRecord): void;
  destroy(instanceId: string): void;
  /** Removes every instance tree (reset). */
  clear(): void;
}

export function initialRuntimeConfig(instance: InstanceRecord): Record<string, unknown> {
  return {
    runtime_version: instance.runtime_version,
    model_provider: instance.model_provider,
    channels: {},
    skills: { entries: {} },
  };
}

export function createWorkspaces(root: string): Workspaces {
  mkdirSync(root, { recursive: true });
  const rootOf = (id: string) => join(root, id);
  return {
    root,
    rootOf,
    create(instance) {
      const dir = rootOf(instance.id);
      mkdirSync(join(dir, "workspace"), { recursive: true });
      mkdirSync(join(dir, "skills"), { recursive: true });
      const runtime = join(dir, "runtime.json");
      if (!existsSync(runtime)) writeFileSync(runtime, `${JSON.stringify(initialRuntimeConfig(instance), null, 2)}\n`);
    },
    destroy(id) {
      rmSync(rootOf(id), { recursive: true, force: true });
    },
    clear() {
      rmSync(root, { recursive: true, force: true });
      mkdirSync(root, { recursive: true });
    },
  };
}
