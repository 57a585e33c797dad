// Instances: the list with status, and one instance with its lifecycle
// actions, its sessions (each a link to its conversation) and its other views.
import { Action, api, asOrg, get, html, Link, Loading, navigate, origin, short, time, useEffect, useLive, useState } from "../lib.js";

const STATUSES = ["provisioning", "running", "stopped", "error", "terminated"];

export const overviewChanged = (type, detail) => type === "state" || (type === "request" && detail.method !== "GET");

/** While something provisions, look again each second: it becomes running when next read. */
function useProvisioningPoll(state, reload) {
  const provisioning = state.data?.instances?.some((i) => i.status === "provisioning");
  useEffect(() => {
    if (!provisioning) return;
    const t = setTimeout(reload, 1000);
    return () => clearTimeout(t);
  }, [provisioning, state.data]);
}

export function EmptyInstances() {
  const base = origin();
  return html`<div class="empty">
    <p><strong>No instances yet.</strong> Create one through the API; it appears here at once.</p>
    <pre><code>${`# 1. an organization (prints its key once)
curl -s -X POST ${base}/v1/organization/signup -H 'content-type: application/json' -d '{"name":"acme"}'

# 2. an instance, with that key
curl -s -X POST ${base}/v1/instances -H "authorization: Bearer $ORG_KEY" \\
  -H 'content-type: application/json' -d '{"name":"my-agent"}'`}</code></pre>
  </div>`;
}

export function Instances() {
  const [state, reload] = useLive(() => get("/_emulator/console/state"), [], overviewChanged);
  useProvisioningPoll(state, reload);
  return html`<section>
    <h1>Instances</h1>
    <${Loading} state=${state}>${(data) => {
      const orgName = Object.fromEntries(data.organizations.map((o) => [o.id, o.name]));
      if (data.instances.length === 0) return html`<${EmptyInstances} />`;
      return html`<div class="table-wrap"><table>
        <thead><tr><th>Name</th><th>Status</th><th>Organization</th><th>Provider</th><th>Created</th><th>Id</th></tr></thead>
        <tbody>
          ${data.instances.map(
            (i) => html`<tr data-instance=${i.id}>
              <td><${Link} to=${`/instances/${i.id}`}>${i.name}</${Link}></td>
              <td><span class=${`badge ${i.status}`}>${i.status}</span></td>
              <td>${orgName[i.organization_id] ?? short(i.organization_id)}</td>
              <td>${i.model_provider}</td>
              <td>${time(i.created_at)}</td>
              <td><code title=${i.id}>${short(i.id)}</code></td>
            </tr>`,
          )}
        </tbody>
      </table></div>`;
    }}<//>
  </section>`;
}

export function InstanceTabs({ id, current }) {
  const tabs = [
    ["", "Overview & sessions"],
    ["/files", "Files"],
    ["/channels", "Channels"],
    ["/skills", "Skills"],
  ];
  return html`<nav class="tabs" aria-label="Instance views">
    ${tabs.map(([suffix, label]) => html`<${Link} to=${`/instances/${id}${suffix}`} aria-current=${current === suffix ? "page" : undefined}>${label}</${Link}>`)}
  </nav>`;
}

/** The instance from the overview, or undefined while loading / when gone. */
export function useInstance(id) {
  const [state, reload] = useLive(() => get("/_emulator/console/state"), [id], overviewChanged);
  useProvisioningPoll(state, reload);
  const instance = state.data?.instances.find((i) => i.id === id);
  return { state, instance, reload };
}

export function InstanceHeader({ id, instance, state, current }) {
  return html`<h1>${instance ? instance.name : "Instance"} <small><code>${id}</code></small></h1>
    ${state.data && !instance ? html`<p class="empty">This instance does not exist (or was deleted). <${Link} to="/instances">All instances</${Link}></p>` : null}
    ${instance ? html`<${InstanceTabs} id=${id} current=${current} />` : null}`;
}

export function InstanceView({ id }) {
  const { state, instance, reload } = useInstance(id);
  const [force, setForce] = useState("running");
  const sessions = useLive(
    () => get(`/_emulator/console/instances/${encodeURIComponent(id)}/sessions`).catch(() => []),
    [id],
    (type, d) => type === "turn" && d.instance_id === id,
  )[0];
  const act = (method, suffix) => async () => {
    await api(method, asOrg(instance.organization_id, `/v1/instances/${encodeURIComponent(id)}${suffix}`));
    await reload();
  };
  return html`<section>
    <${InstanceHeader} id=${id} instance=${instance} state=${state} current="" />
    ${
      instance &&
      html`<dl class="facts">
        <dt>Status</dt><dd><span class=${`badge ${instance.status}`} data-testid="instance-status">${instance.status}</span>${instance.error_message ? html` <span class="error">${instance.error_message}</span>` : null}</dd>
        <dt>Organization</dt><dd><code>${instance.organization_id}</code></dd>
        <dt>Provider</dt><dd>${instance.model_provider}</dd>
        <dt>Gateway</dt><dd><code>${instance.gateway_url}</code></dd>
        <dt>Created</dt><dd>${time(instance.created_at)}</dd>
      </dl>
      <div class="toolbar" role="group" aria-label="Lifecycle">
        <${Action} run=${act("POST", "/start")} disabled=${instance.status !== "stopped"}>Start<//>
        <${Action} run=${act("POST", "/stop")} disabled=${instance.status !== "running"}>Stop<//>
        <${Action} class="danger" confirm="Delete this instance, its files and conversations?" run=${async () => {
          await act("DELETE", "")();
          navigate("/instances");
        }}>Delete…<//>
        <span class="force">
          <label>Force state <select value=${force} onChange=${(e) => setForce(e.currentTarget.value)}>${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
          <${Action} confirm=${force === "terminated" ? "Terminate this instance (as a delete: files and conversations go)?" : undefined} run=${async () => {
            await api("POST", `/_emulator/instances/${encodeURIComponent(id)}/state`, { status: force });
            await reload();
          }}>Apply<//>
        </span>
      </div>
      <h2>Sessions</h2>
      <${Loading} state=${sessions}>${(list) =>
        list.length === 0
          ? html`<div class="empty"><p>No conversation yet. Send a message (with a key that may interact):</p>
              <pre><code>${`curl -s -X POST ${origin()}/v1/instances/${id}/session/demo/responses \\
  -H "authorization: Bearer $KEY" -H 'content-type: application/json' -d '{"model":"demo","input":"hello"}'`}</code></pre></div>`
          : html`<ul class="sessions">
              ${list.map(
                (s) => html`<li>
                  <${Link} to=${`/instances/${id}/sessions/${encodeURIComponent(s.session)}`}>${s.session}</${Link}>
                  <span class="muted">${s.turns} turn${s.turns === 1 ? "" : "s"} · ${time(s.updated_at)}</span>
                  <span class="preview">${s.last_input}</span>
                </li>`,
              )}
            </ul>`}<//>`
    }
  </section>`;
}
