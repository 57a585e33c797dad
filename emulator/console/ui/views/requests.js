// The request log: every API request as it finishes (bounded window),
// filterable, with the redacted bodies of the selected one.
import { appendWindow, REQUEST_WINDOW, windowSize } from "../window.js";
import { get, html, useEffect, useEvent, useRef, useState } from "../lib.js";

export function matchesFilter(entry, text, errorsOnly) {
  if (errorsOnly && entry.status < 400) return false;
  if (!text) return true;
  const hay = `${entry.method} ${entry.path} ${entry.status} ${entry.key_kind}`.toLowerCase();
  return text
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => hay.includes(word));
}

function Body({ title, captured }) {
  const body = captured.body;
  const text = body === null || body === undefined ? "(empty)" : typeof body === "string" ? body : JSON.stringify(body, null, 2);
  return html`<div class="body"><h3>${title} <small class="muted">${captured.content_type ?? ""}${captured.truncated ? " · cut at 16 KiB" : ""}</small></h3><pre>${text}</pre></div>`;
}

function Detail({ id }) {
  const [state, setState] = useState({});
  useEffect(() => {
    let alive = true;
    setState({});
    get(`/_emulator/console/requests/${id}`).then(
      (data) => alive && setState({ data }),
      (error) => alive && setState({ error }),
    );
    return () => (alive = false);
  }, [id]);
  if (state.error) return html`<p class="error" role="alert">${state.error.message}</p>`;
  if (!state.data) return html`<p class="muted">Loading…</p>`;
  const d = state.data;
  return html`<div class="detail" data-testid="request-detail">
    <h2><code>${d.method} ${d.path}</code> → ${d.status}</h2>
    <p class="muted">${d.at} · ${d.ms} ms · key: ${d.key_kind}</p>
    <${Body} title="Request body" captured=${d.request} />
    <${Body} title="Response body" captured=${d.response} />
  </div>`;
}

export function RequestLog() {
  const max = windowSize(location.search, REQUEST_WINDOW);
  const [entries, setEntries] = useState([]);
  const [filter, setFilter] = useState("");
  const [errorsOnly, setErrorsOnly] = useState(false);
  const [selected, setSelected] = useState();
  const [error, setError] = useState();
  const listRef = useRef();
  const load = () =>
    get("/_emulator/console/requests").then(
      // Lines that came by event while this loaded are kept; the merge is put back in order.
      (list) =>
        setEntries((old) =>
          appendWindow(
            [],
            appendWindow(old, list, Infinity).sort((a, b) => a.id - b.id),
            max,
          ),
        ),
      (e) => setError(e.message),
    );
  useEffect(() => void load(), []);
  useEvent(["request", "hello", "overflow"], (type, detail) => {
    if (type === "request") setEntries((old) => appendWindow(old, [detail], max));
    else load();
  });
  const shown = entries.filter((e) => matchesFilter(e, filter, errorsOnly)).reverse();
  const onKey = (e) => {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    const at = shown.findIndex((x) => x.id === selected);
    const next = shown[Math.max(0, Math.min(shown.length - 1, at + (e.key === "ArrowDown" ? 1 : -1)))];
    if (next) {
      setSelected(next.id);
      listRef.current?.querySelector(`[data-id="${next.id}"]`)?.focus();
    }
  };
  return html`<section>
    <h1>Request log</h1>
    <div class="toolbar">
      <label>Filter <input type="search" placeholder="e.g. POST responses 502" value=${filter} onInput=${(e) => setFilter(e.currentTarget.value)} /></label>
      <label><input type="checkbox" checked=${errorsOnly} onChange=${(e) => setErrorsOnly(e.currentTarget.checked)} /> errors only</label>
      <span class="muted">${shown.length} of ${entries.length} shown (newest ${max} kept; the console's own requests are not listed)</span>
    </div>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <div class="split">
      <div class="table-wrap log" ref=${listRef} onKeyDown=${onKey}>
        ${
          entries.length === 0
            ? html`<p class="empty">No requests yet. Anything sent to this emulator appears here, e.g. <code>curl ${location.origin}/_emulator/health</code></p>`
            : html`<table data-testid="request-log">
              <thead><tr><th>Time</th><th>Method</th><th>Path</th><th>Status</th><th class="opt">Key</th><th class="opt">ms</th></tr></thead>
              <tbody>
                ${shown.map(
                  (e) => html`<tr key=${e.id} data-id=${e.id} tabindex="0" class=${selected === e.id ? "selected" : ""} aria-selected=${selected === e.id}
                    onClick=${() => setSelected(e.id)} onKeyDown=${(k) => k.key === "Enter" && setSelected(e.id)}>
                    <td>${e.at.slice(11, 23)}</td><td>${e.method}</td><td class="path">${e.path}</td>
                    <td><span class=${`code c${String(e.status)[0]}`}>${e.status}</span></td><td class="opt">${e.key_kind}</td><td class="opt">${e.ms}</td>
                  </tr>`,
                )}
              </tbody>
            </table>`
        }
      </div>
      ${selected !== undefined ? html`<${Detail} id=${selected} />` : html`<p class="muted hint">Select a request (click, or Enter; ↑/↓ to move) to see its bodies, secrets redacted.</p>`}
    </div>
  </section>`;
}
