/**
 * Files, skills, channels and the scan control route (emulator part 2) are
 * mounted here; until then they answer 501.
 */
import type { EmulatorEnv } from "../env.js";
import type { Handlers } from "../http/router.js";

export function extraHandlers(_env: EmulatorEnv): Partial<Handlers> {
  return {};
}
