// What both consoles' pages share: rendering (Preact + htm), the events bus and
// its live status, and in-app links. Served by each console under its own
// `<base>/shared/`, so the vendor modules and the base path are found relative
// to this file's URL.
import { h, render } from "../vendor/preact.mjs";
import { useCallback, useEffect, useRef, useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";

export const html = htm.bind(h);
export { render, useCallback, useEffect, useRef, useState };

/** The console's root path (`/ui` or `/_emulator/ui`): this file lives at `<base>/shared/`. */
export const BASE = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

// ---- the events bus ---------------------------------------------------------
/** Where the console's events stream dispatches its events (and `status` changes). */
export const bus = new EventTarget();
let status = "connecting";
/** The stream's state now: "connecting", "live" (attached: nothing after this is missed), "reconnecting" (or "paused"). */
export const liveStatus = () => status;
export const setStatus = (next) => {
  status = next;
  bus.dispatchEvent(new CustomEvent("status", { detail: next }));
};

let source;
let started = false;
function openStream(url, types) {
  source = new EventSource(url);
  for (const type of types) {
    source.addEventListener(type, (e) => {
      // `hello` arrives once the server attached this stream: from then on nothing is missed.
      if (type === "hello") setStatus("live");
      bus.dispatchEvent(new CustomEvent(type, { detail: JSON.parse(e.data) }));
    });
  }
  source.addEventListener("error", () => setStatus("reconnecting"));
}
/**
 * The console's events stream at `url`, its `types` dispatched on the bus: one
 * stream per tab while it is visible. A browser gives an origin only six
 * HTTP/1.1 connections and each open stream holds one (and the server serves
 * a bounded number of streams), so a hidden tab lets go of its stream (a
 * seventh console tab would otherwise never load); when it shows again it
 * reconnects, and `hello` makes every view load again.
 */
export function connectEventStream(url, types) {
  if (started) return;
  started = true;
  if (document.visibilityState !== "hidden") openStream(url, types);
  else setStatus("paused");
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") {
      source?.close();
      source = undefined;
      setStatus("paused");
    } else if (!source) {
      setStatus("connecting");
      openStream(url, types);
    }
  });
}

export function useEvent(types, handler) {
  const ref = useRef(handler);
  ref.current = handler;
  useEffect(() => {
    const on = (e) => ref.current(e.type, e.detail);
    for (const t of types) bus.addEventListener(t, on);
    return () => {
      for (const t of types) bus.removeEventListener(t, on);
    };
  }, [types.join()]);
}

/**
 * Data from `load`, loaded on mount and whenever `deps` change, and again on
 * each `run()`: at most one load at a time, calls during it cause exactly one
 * more. A failed load keeps the data shown unless `drop(error)` says it is gone.
 * Returns `[state, run, loading]`; `loading()` says whether a load is under way
 * (what it read may predate an event that has just come in).
 */
export function useLoad(load, deps, drop = () => false) {
  const [state, setState] = useState({ data: undefined, error: undefined });
  const control = useRef({ inflight: false, again: false, alive: true });
  const loadRef = useRef(load);
  loadRef.current = load;
  const dropRef = useRef(drop);
  dropRef.current = drop;
  const run = useCallback(async () => {
    const c = control.current;
    if (c.inflight) {
      c.again = true;
      return;
    }
    c.inflight = true;
    try {
      const data = await loadRef.current();
      if (c.alive) setState({ data, error: undefined });
    } catch (error) {
      if (c.alive) setState((s) => ({ data: dropRef.current(error) ? undefined : s.data, error }));
    } finally {
      c.inflight = false;
      if (c.again && c.alive) {
        c.again = false;
        run();
      }
    }
  }, []);
  useEffect(() => {
    control.current = { inflight: false, again: false, alive: true };
    setState({ data: undefined, error: undefined });
    run();
    return () => {
      control.current.alive = false;
    };
  }, deps);
  const loading = useCallback(() => control.current.inflight, []);
  return [state, run, loading];
}

// ---- the router ------------------------------------------------------------
/** The path below BASE the address bar shows ("/" at the root). */
export const currentPath = () => (location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : "/") || "/";

/** What the first of `routes` (`[pattern, view]`) that matches `path` draws; undefined for none (or a malformed escape). */
export function routed(routes, path) {
  for (const [pattern, view] of routes) {
    const m = pattern.exec(path);
    if (m) {
      try {
        return view(...m.slice(1).map(decodeURIComponent));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** The current path, following the history (`navigate` and the back button). */
export function usePath() {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const onPop = () => setPath(currentPath());
    addEventListener("popstate", onPop);
    return () => removeEventListener("popstate", onPop);
  }, []);
  return path;
}

/** The events stream's status, kept current. */
export function useLiveStatus() {
  const [now, setNow] = useState(liveStatus());
  useEvent(["status"], (_t, detail) => setNow(detail));
  // The stream may have attached between the first render and the subscription above.
  useEffect(() => setNow(liveStatus()), []);
  return now;
}

// ---- small shared components ---------------------------------------------
export const link = (path) => `${BASE}${path}`;

export function navigate(path) {
  history.pushState(null, "", link(path));
  dispatchEvent(new PopStateEvent("popstate"));
}

export function Link({ to, children, ...rest }) {
  const onClick = (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return html`<a href=${link(to)} onClick=${onClick} ...${rest}>${children}</a>`;
}

export function Loading({ state, children }) {
  if (state.error && state.data === undefined) return html`<p class="error" role="alert">${state.error.message}</p>`;
  if (state.data === undefined) return html`<p class="muted">Loading…</p>`;
  return children(state.data);
}

/**
 * A button that runs an async action, shows it is busy, and reports a failure.
 * With `confirm` (the question: what it will do), it asks first: focus goes to Cancel (Enter twice must not
 * destroy anything), Escape cancels, and focus comes back to the button.
 */
export function Action({ run, children, confirm: question, ...rest }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState();
  const [asking, setAsking] = useState(false);
  const trigger = useRef();
  const cancel = useRef();
  const asked = useRef(false);
  useEffect(() => {
    if (asking) cancel.current?.focus();
    else if (asked.current) trigger.current?.focus();
    asked.current = asking;
  }, [asking]);
  const go = async () => {
    setBusy(true);
    setError(undefined);
    setAsking(false);
    try {
      await run();
    } catch (e) {
      setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  if (asking)
    return html`<span class="confirm" role="group" aria-label="Confirm" onKeyDown=${(e) => e.key === "Escape" && setAsking(false)}>
      <span>${question}</span>
      <button class="danger" onClick=${go}>Yes</button>
      <button ref=${cancel} onClick=${() => setAsking(false)}>Cancel</button>
    </span>`;
  return html`<span class="action"
    ><button ref=${trigger} disabled=${busy} onClick=${() => (question ? setAsking(true) : go())} ...${rest}>${children}</button
    >${error && html`<span class="error" role="alert">${error}</span>`}</span
  >`;
}
