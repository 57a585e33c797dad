/** Checks route handlers share before they touch an instance's files, skills or channels. */
import { conflict } from "../errors.js";
import type { InstanceRecord } from "../store/state.js";

/** Workspace files, skills and channels exist only while the instance runs: anything else is a 409. */
export function requireRunning(instance: InstanceRecord): void {
  if (instance.status !== "running") throw conflict(`Instance is not running (status: ${instance.status}).`);
}
