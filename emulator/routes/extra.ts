/**
 * Emulator part 2: workspace files, skills, channels and the control plane's
 * scan. One `runtime.json` editor is shared by skills and channels, so their
 * edits of one instance queue behind each other.
 */
import type { EmulatorEnv } from "../env.js";
import type { Handlers } from "../http/router.js";
import { createRuntimeConfigs } from "../workspace/runtime-config.js";
import { channelHandlers } from "./channels.js";
import { fileHandlers } from "./files.js";
import { skillHandlers } from "./skills.js";

export function extraHandlers(env: EmulatorEnv): Partial<Handlers> {
  const runtime = createRuntimeConfigs(env.workspaces);
  return {
    ...fileHandlers(env),
    ...skillHandlers(env, runtime),
    ...channelHandlers(env, runtime),
  };
}
