// Shared pieces of the operator's console: rendering (Preact + htm), the API
// helpers, the one events stream, and a hook that keeps a view's data live.
// What the emulator's console draws the same way comes from the shared module.
import { connectEventStream, useEvent, useLoad } from "../shared/console.js";

export * from "../shared/console.js";

/** The name the operator gave (kept in this browser): the daemon's log says who did what. */
export const operatorName = () => localStorage.getItem("operator") ?? "";
export const setOperatorName = (name) => localStorage.setItem("operator", name);

export async function api(method, path, body) {
  const headers = {};
  const name = operatorName();
  if (name) headers["x-operator"] = name;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`/ui/api/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const parsed = await res.json().catch(() => undefined);
  if (!res.ok) {
    // The contract's error body: `{detail}`, one sentence.
    const error = new Error(typeof parsed?.detail === "string" ? parsed.detail : `HTTP ${res.status}`);
    error.status = res.status;
    throw error;
  }
  return parsed;
}
export const get = (path) => api("GET", path);

// ---- the events stream ----------------------------------------------------
export const EVENT_TYPES = ["hello", "accepted", "replied", "delivered", "queue", "channel", "pairing", "session", "config", "overflow"];
/** The one stream per visible tab (shared/console.js says why a hidden tab lets go of it). */
export const connectEvents = () => connectEventStream("/ui/api/events", EVENT_TYPES);

/**
 * Data from `load`, loaded again on `hello`, on `overflow` (this reader fell behind and
 * events were dropped) and on any event of `types` that passes `when` (default: every
 * one); at most one load at a time, events during it cause one more.
 */
export function useLive(load, deps, types, when = () => true) {
  const [state, run] = useLoad(load, deps);
  useEvent(["hello", "overflow", ...types], (type, detail) => (type === "hello" || type === "overflow" || when(type, detail)) && run());
  return [state, run];
}

export const time = (ms) => (ms ? new Date(ms).toLocaleString() : "—");
export const seconds = (ms) => (ms === null || ms === undefined ? "—" : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`);
