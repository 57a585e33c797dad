import { headKey } from "../store/state.js";
import type { GatewayState, StoredResponse } from "./types.js";

/**
 * Conversation bookkeeping over the store's plain objects. Every request-path
 * operation is a key lookup; only history directives walk a parent chain.
 * `Object.hasOwn` everywhere: ids come from clients, and "constructor" must
 * not find Object.prototype.
 */

/** The response with that id if it belongs to the instance. */
export function responseOf(state: GatewayState, instanceId: string, id: string): StoredResponse | undefined {
  const found = Object.hasOwn(state.responses, id) ? state.responses[id] : undefined;
  return found && found.instance_id === instanceId ? found : undefined;
}

/** The session's latest response id, or null when the session is new (or its head is gone). */
export function sessionHead(state: GatewayState, instanceId: string, session: string): string | null {
  const key = headKey(instanceId, session);
  const id = Object.hasOwn(state.heads, key) ? state.heads[key] : undefined;
  return id !== undefined && responseOf(state, instanceId, id) ? id : null;
}

/** User inputs of the chain ending at `lastId`, oldest first. */
export function chainInputs(state: GatewayState, lastId: string | null): string[] {
  const inputs: string[] = [];
  const seen = new Set<string>();
  // `seen` guards against a cycle in imported state.
  for (let id = lastId; id !== null && !seen.has(id); ) {
    seen.add(id);
    const response = Object.hasOwn(state.responses, id) ? state.responses[id] : undefined;
    if (!response) break;
    inputs.push(response.input_text);
    id = response.parent_id;
  }
  return inputs.reverse();
}

/** Stores the response and makes it its session's head. */
export function record(state: GatewayState, response: StoredResponse): void {
  state.responses[response.id] = response;
  state.heads[headKey(response.instance_id, response.session)] = response.id;
}

/** Removes every response and head of the instance; true when something was removed. */
export function forget(state: GatewayState, instanceId: string): boolean {
  // A scan, but only on instance deletion, never on the request path.
  let removed = false;
  for (const [id, response] of Object.entries(state.responses)) {
    if (response.instance_id === instanceId) {
      delete state.responses[id];
      removed = true;
    }
  }
  const prefix = `${instanceId}\u0000`;
  for (const key of Object.keys(state.heads)) {
    if (key.startsWith(prefix)) {
      delete state.heads[key];
      removed = true;
    }
  }
  return removed;
}
