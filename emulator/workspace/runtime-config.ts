/**
 * `runtime.json`, the instance's gateway configuration in its workspace.
 * Channel connects and skill installs edit it; users may edit it too through
 * the files API. Edits of one instance are queued one after another (read,
 * change, write through a temporary file and an atomic rename), so two
 * concurrent connects never lose each other's change.
 */
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { writeFileAtomic } from "../../shared/durable-files.js";
import { conflict } from "../errors.js";
import type { Workspaces } from "./workspaces.js";

export const RUNTIME_CONFIG_FILE = "runtime.json";

export type RuntimeConfig = Record<string, unknown>;
export type Change = (config: RuntimeConfig) => (() => void) | void;

export interface RuntimeConfigs {
  /**
   * Applies `change` to the instance's runtime.json and writes it back;
   * resolves the new content. When `change` returns a function, it runs right
   * after the write succeeded, still in this instance's turn: the place to
   * update the state, so state and file change together and in the same order.
   */
  update(instanceId: string, change: Change): Promise<RuntimeConfig>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The object at `key` of `parent`, created when missing or not an object. */
export function objectAt(parent: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = parent[key];
  if (isObject(value)) return value;
  const fresh: Record<string, unknown> = {};
  parent[key] = fresh;
  return fresh;
}

export function createRuntimeConfigs(workspaces: Workspaces): RuntimeConfigs {
  const queues = new Map<string, Promise<unknown>>();

  async function apply(instanceId: string, change: Change): Promise<RuntimeConfig> {
    const file = join(workspaces.rootOf(instanceId), RUNTIME_CONFIG_FILE);
    let config: RuntimeConfig = {};
    let text: string | undefined;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      const code = error && typeof error === "object" && "code" in error ? error.code : undefined;
      // Deleted by the user: start again from an empty configuration.
      if (code !== "ENOENT") throw conflict(`${RUNTIME_CONFIG_FILE} cannot be read (${String(code ?? "error")}); rewrite it with PUT files/content.`);
    }
    if (text !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw conflict(`${RUNTIME_CONFIG_FILE} is not valid JSON; fix it with PUT files/content before changing channels or skills.`);
      }
      if (!isObject(parsed)) throw conflict(`${RUNTIME_CONFIG_FILE} must hold a JSON object; fix it with PUT files/content.`);
      config = parsed;
    }
    const after = change(config);
    // The one durable writer; its temporary file goes to staging, out of the listed tree.
    await writeFileAtomic(file, `${JSON.stringify(config, null, 2)}\n`, 0o644, { tempDir: dirname(workspaces.tempPath()) });
    after?.();
    return config;
  }

  return {
    update(instanceId, change) {
      const previous = queues.get(instanceId) ?? Promise.resolve();
      const next = previous.catch(() => {}).then(() => apply(instanceId, change));
      queues.set(instanceId, next);
      // Forget the queue once it is idle, so terminated instances leave nothing behind.
      const settled = () => {
        if (queues.get(instanceId) === next) queues.delete(instanceId);
      };
      next.then(settled, settled);
      return next;
    },
  };
}
