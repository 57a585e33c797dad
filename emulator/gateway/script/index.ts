/** Model scripts: their schema, loading, the registry by scope, matching and answers. */
import { describeProblems, loadScriptFile, parseScript } from "./load.js";
import { createScriptRegistry, type ScriptRegistry } from "./registry.js";
import type { ModelScriptInput } from "./schema.js";

export { describeProblems, loadScriptFile, parseScript, parseScriptText, type LoadedScript, type ScriptProblem } from "./load.js";
export { createScriptRegistry, type ScriptRegistry, type ScriptScope } from "./registry.js";
export { ModelScript, type ModelScriptInput } from "./schema.js";

/**
 * A registry with the start-up script in force globally: `source` is a file
 * (JSON with comments) or the script itself. A script with an error throws
 * one line per problem, each naming its place; nothing is half-loaded.
 */
export async function openScripts(source: string | ModelScriptInput | undefined, signal?: AbortSignal): Promise<ScriptRegistry> {
  const scripts = createScriptRegistry();
  if (source === undefined) return scripts;
  const loaded = typeof source === "string" ? await loadScriptFile(source, signal) : parseScript(source);
  if (!loaded.ok) {
    const where = typeof source === "string" ? source : "modelScript";
    throw new Error(`The model script ${where} was refused:\n${describeProblems(loaded.problems)}`);
  }
  scripts.set({ kind: "global" }, loaded.script);
  return scripts;
}
