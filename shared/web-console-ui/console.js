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
