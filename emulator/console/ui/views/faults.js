// Fault rules: the active ones (hits and what remains update live), a form to
// add one, and remove.
import { Action, api, get, html, Loading, short, useLive, useState } from "../lib.js";

const EMPTY = { target: "gateway", instance_id: "", path: "", method: "", status: "503", error: "", latency_ms: "", probability: "", times: "1" };

/** The form's strings as a rule request: blanks left out, numbers as numbers. */
export function ruleFromForm(form) {
  const rule = { target: form.target };
  for (const key of ["instance_id", "path", "method", "error"]) if (form[key].trim()) rule[key] = form[key].trim();
  for (const key of ["status", "latency_ms", "times"]) if (form[key].trim()) rule[key] = Number(form[key]);
  if (form.probability.trim()) rule.probability = Number(form.probability);
  return rule;
}

const refreshOn = (type, d) => type === "request" && (d.path.startsWith("/v1/") || (d.path.startsWith("/_emulator/faults") && d.method !== "GET"));

export function Faults() {
  const [state, reload] = useLive(() => get("/_emulator/faults"), [], refreshOn);
  const [form, setForm] = useState(EMPTY);
  const [error, setError] = useState();
  const field = (key) => (e) => setForm({ ...form, [key]: e.currentTarget.value });
  const submit = async (e) => {
    e.preventDefault();
    setError(undefined);
    try {
      await api("POST", "/_emulator/faults", ruleFromForm(form));
      await reload();
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<section>
    <h1>Faults</h1>
    <p class="muted">A rule makes matching requests fail: <em>gateway</em> faults hit messages on their way to the instance, <em>api</em> faults hit <code>/v1</code> requests themselves, <em>provision</em> faults make new instances end in error.</p>
    <form class="fault-form" onSubmit=${submit} aria-label="Add a fault rule">
      <label>Target <select name="target" value=${form.target} onChange=${field("target")}>
        <option value="gateway">gateway</option><option value="api">api</option><option value="provision">provision</option></select></label>
      <label>Instance id <input name="instance_id" value=${form.instance_id} onInput=${field("instance_id")} placeholder="any" /></label>
      <label>Path prefix <input name="path" value=${form.path} onInput=${field("path")} placeholder="api: e.g. /v1/instances" /></label>
      <label>Method <input name="method" value=${form.method} onInput=${field("method")} placeholder="any" size="6" /></label>
      <label>Status <input name="status" type="number" min="400" max="599" value=${form.status} onInput=${field("status")} /></label>
      <label>Error <select name="error" value=${form.error} onChange=${field("error")}>
        <option value="">(status)</option><option value="reset">reset</option><option value="timeout">timeout</option></select></label>
      <label>Latency ms <input name="latency_ms" type="number" min="0" value=${form.latency_ms} onInput=${field("latency_ms")} /></label>
      <label>Probability <input name="probability" type="number" min="0" max="1" step="0.05" value=${form.probability} onInput=${field("probability")} placeholder="1" /></label>
      <label>Times <input name="times" type="number" min="1" value=${form.times} onInput=${field("times")} placeholder="always" /></label>
      <button type="submit">Add rule</button>
      ${error && html`<span class="error" role="alert">${error}</span>`}
    </form>
    <h2>Active rules</h2>
    <${Loading} state=${state}>${(rules) =>
      rules.length === 0
        ? html`<p class="empty">No fault rules: every request behaves. Add one above, or <code>curl -X POST ${location.origin}/_emulator/faults -H 'content-type: application/json' -d '{"target":"gateway","status":503,"times":1}'</code></p>`
        : html`<div class="table-wrap"><table data-testid="faults">
            <thead><tr><th>Target</th><th>Matches</th><th>Does</th><th>Hits</th><th>Remaining</th><th></th></tr></thead>
            <tbody>${rules.map(
              (r) => html`<tr key=${r.id} data-fault=${r.id}>
                <td>${r.target}</td>
                <td>${[r.instance_id && `instance ${short(r.instance_id)}`, r.path && `path ${r.path}*`, r.method && r.method, r.probability !== undefined && `p=${r.probability}`].filter(Boolean).join(", ") || "everything"}</td>
                <td>${[r.status && `HTTP ${r.status}`, r.error, r.latency_ms && `+${r.latency_ms} ms`].filter(Boolean).join(", ") || "—"}</td>
                <td>${r.hits}</td><td>${r.remaining ?? "∞"}</td>
                <td><${Action} run=${async () => {
                  await api("DELETE", `/_emulator/faults/${r.id}`);
                  await reload();
                }} aria-label=${`Remove rule ${r.id}`}>Remove<//></td>
              </tr>`,
            )}</tbody></table></div>`}<//>
  </section>`;
}
