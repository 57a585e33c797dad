/**
 * Each instance owns a real directory tree: `<root>/<instance id>/` holding
 * `runtime.json`, `workspace/` and `skills/`. Created with the instance,
 * removed when it is terminated. Uploads and atomic writes are first written
 * to `<root>/.staging/` (same filesystem, so the final rename is atomic and
 * half-written files never show in a listing).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, existsSync } from "node:fs";
import { writeFileAtomic } from "../../shared/durable-files.js";
import { join } from "node:path";
import type { InstanceRecord } from "../store/state.js";
import { isMintedId } from "../store/schema.js";

export interface Workspaces {
  readonly root: string;
  /** The instance's root directory (it may not exist for a terminated instance). */
  rootOf(instanceId: string): string;
  create(instance: InstanceRecord): Promise<void>;
  destroy(instanceId: string): void;
  /** Removes every instance tree (reset). */
  clear(): void;
  /** A fresh path in the staging folder for a file about to be renamed into a tree. */
  tempPath(): string;
}

/** Instance ids are UUIDs, so this name never collides with an instance tree. */
export const STAGING_DIR = ".staging";

export function initialRuntimeConfig(instance: InstanceRecord): Record<string, unknown> {
  return {
    runtime_version: instance.runtime_version,
    model_provider: instance.model_provider,
    channels: {},
    skills: { entries: {} },
  };
}

export function createWorkspaces(root: string): Workspaces {
  const staging = join(root, STAGING_DIR);
  // Leftovers of an upload cut short by a crash are worthless: start clean.
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const rootOf = (id: string) => {
    // The one place an instance id becomes a path: only an id of the minted form may.
    if (!isMintedId(id)) throw new Error(`Refusing a workspace path for instance id ${JSON.stringify(id.slice(0, 64))}.`);
    return join(root, id);
  };
  return {
    root,
    rootOf,
    async create(instance) {
      const dir = rootOf(instance.id);
      mkdirSync(join(dir, "workspace"), { recursive: true });
      mkdirSync(join(dir, "skills"), { recursive: true });
      const runtime = join(dir, "runtime.json");
      // Through the one durable writer, its temporary file in staging (out of listings).
      if (!existsSync(runtime)) await writeFileAtomic(runtime, `${JSON.stringify(initialRuntimeConfig(instance), null, 2)}\n`, 0o644, { tempDir: staging });
    },
    destroy(id) {
      if (!isMintedId(id)) return; // never had a tree
      rmSync(rootOf(id), { recursive: true, force: true });
    },
    clear() {
      rmSync(root, { recursive: true, force: true });
      mkdirSync(staging, { recursive: true });
    },
    // Not the emulator's seeded randomness: temporary names must not shift the ids a seed repeats.
    tempPath: () => join(staging, `${randomBytes(12).toString("hex")}.part`),
  };
}
