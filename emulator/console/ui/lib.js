// Shared pieces of the console: rendering (Preact + htm), the API helpers,
// the one events stream, and hooks that keep a view's data live.
// What the daemon's console draws the same way comes from the shared module.
import { connectEventStream, useEvent, useLoad } from "../shared/console.js";

export * from "../shared/console.js";

/** An API error as the contract shapes it: `{detail}` turned into one sentence. */
export class ApiError extends Error {
  constructor(status, body) {
    const detail = body?.detail;
    const text =
      typeof detail === "string"
        ? detail
        : Array.isArray(detail)
          ? detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ")
          : detail?.error
            ? detail.error
            : `HTTP ${status}`;
    super(text);
    this.status = status;
  }
}

export async function api(method, path, body) {
  // Marks the console's own calls: the request log leaves them out.
  const init = { method, headers: { "x-emulator-console": "1" } };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  if (!res.ok) throw new ApiError(res.status, parsed);
  return parsed;
}
export const get = (path) => api("GET", path);
export const CONSOLE_HEADER = "x-emulator-console";

/** `/v1` routes called as the instance's organization (control-plane access). */
export const asOrg = (orgId, path) => `/_emulator/as/${encodeURIComponent(orgId)}${path}`;

// ---- the events stream ----------------------------------------------------
/** The one stream per visible tab (shared/console.js says why a hidden tab lets go of it). */
export const connectEvents = () => connectEventStream("/_emulator/events", ["hello", "request", "state", "turn", "overflow"]);

/**
 * Data loaded by `load` and loaded again when an event passes `when(type, detail)`
 * (and after every (re)connect or overflow, which may have lost events). At most
 * one load runs; events during it cause exactly one more.
 */
export function useLive(load, deps, when = () => false) {
  // Gone (deleted, reset away): stale data would pass for live, so it is dropped and the 404 shown.
  const [state, run, loading] = useLoad(load, deps, (error) => error.status === 404);
  useEvent(["hello", "overflow", "request", "state", "turn"], (type, detail) => {
    // A reset or a snapshot import replaced everything: whatever a view shows may be gone.
    if (type === "hello" || type === "overflow" || (type === "state" && detail.replaced) || when(type, detail)) run();
  });
  return [state, run, loading];
}

export const time = (iso) => (iso ? new Date(iso).toLocaleString() : "—");
export const short = (id) => (id ? `${id.slice(0, 8)}…` : "—");
export const origin = () => location.origin;
