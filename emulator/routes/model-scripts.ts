/**
 * The control plane's model-script routes (`/_emulator/model-script`, per
 * sandbox and per instance): set, read and clear the scripts of a
 * {@link ScriptRegistry}.
 */
import type { EmulatorEnv } from "../env.js";
import { ApiError, notFound } from "../errors.js";
import type { Handlers } from "../http/router.js";
import type { ModelScriptView } from "../../shared/schemas/model-script.js";
import { parseScript } from "../gateway/script/load.js";
import type { ScriptRegistry, ScriptScope } from "../gateway/script/registry.js";

type ScriptHandlers = Pick<
  Handlers,
  | "adminGetModelScript"
  | "adminSetModelScript"
  | "adminClearModelScript"
  | "adminGetInstanceModelScript"
  | "adminSetInstanceModelScript"
  | "adminClearInstanceModelScript"
  | "adminGetSandboxModelScript"
  | "adminSetSandboxModelScript"
  | "adminClearSandboxModelScript"
>;

export function modelScriptHandlers(env: EmulatorEnv, scripts: ScriptRegistry): ScriptHandlers {
  const global: ScriptScope = { kind: "global" };
  const instanceScope = (instanceId: string): ScriptScope => {
    const instance = Object.hasOwn(env.store.data.instances, instanceId) ? env.store.data.instances[instanceId] : undefined;
    if (!instance || instance.status === "terminated") throw notFound(`Instance ${instanceId} not found.`);
    return { kind: "instance", instanceId };
  };
  const sandboxScope = (sandboxId: string): ScriptScope => {
    if (!Object.hasOwn(env.store.data.sandboxes, sandboxId)) throw notFound(`Sandbox ${sandboxId} not found.`);
    return { kind: "sandbox", sandboxId };
  };
  const view = (scope: ScriptScope): ModelScriptView => ({
    scope: scope.kind,
    ...(scope.kind === "instance" ? { instance_id: scope.instanceId } : {}),
    ...(scope.kind === "sandbox" ? { sandbox_id: scope.sandboxId } : {}),
    script: scripts.get(scope) ?? null,
    hits: scripts.hits(scope),
  });
  /** Checks the whole script before it replaces anything. */
  const set = (scope: ScriptScope, body: unknown): ModelScriptView => {
    const loaded = parseScript(body);
    if (!loaded.ok) {
      throw new ApiError(
        422,
        loaded.problems.map((p) => ({ loc: ["body", ...p.at], msg: p.message, type: "model_script" })),
      );
    }
    scripts.set(scope, loaded.script);
    return view(scope);
  };

  return {
    adminGetModelScript: () => view(global),
    adminSetModelScript: ({ body }) => set(global, body),
    adminClearModelScript() {
      scripts.clear(global);
    },
    adminGetInstanceModelScript: ({ params }) => view(instanceScope(params.instance_id)),
    adminSetInstanceModelScript: ({ params, body }) => set(instanceScope(params.instance_id), body),
    adminClearInstanceModelScript({ params }) {
      scripts.clear(instanceScope(params.instance_id));
    },
    adminGetSandboxModelScript: ({ params }) => view(sandboxScope(params.sandbox_id)),
    adminSetSandboxModelScript: ({ params, body }) => set(sandboxScope(params.sandbox_id), body),
    adminClearSandboxModelScript({ params }) {
      scripts.clear(sandboxScope(params.sandbox_id));
    },
  };
}
