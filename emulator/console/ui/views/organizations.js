// Organizations: plan (with a switch), limit and count, providers, and every
// scoped key with its permissions and last use. Never a secret: only views.
import { Action, api, get, html, Loading, short, time, useLive, useState } from "../lib.js";
import { EmptyInstances, overviewChanged } from "./instances.js";

const TIERS = ["shrimp", "crab", "lobster"];

function TierSwitch({ org, reload }) {
  const [tier, setTier] = useState(org.subscription_tier);
  return html`<span class="toolbar">
    <label>Plan <select value=${tier} onChange=${(e) => setTier(e.currentTarget.value)} aria-label=${`Plan of ${org.name}`}>${TIERS.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
    <${Action} disabled=${tier === org.subscription_tier} run=${async () => {
      await api("POST", `/_emulator/organizations/${encodeURIComponent(org.id)}/tier`, { tier });
      await reload();
    }}>Switch<//>
  </span>`;
}

export function Organizations() {
  const [state, reload] = useLive(() => get("/_emulator/console/state"), [], overviewChanged);
  return html`<section>
    <h1>Organizations</h1>
    <${Loading} state=${state}>${(data) =>
      data.organizations.length === 0
        ? html`<${EmptyInstances} />`
        : data.organizations.map(
            (org) => html`<article class="card" key=${org.id} data-org=${org.id}>
              <h2>${org.name} <small><code>${org.id}</code></small></h2>
              <dl class="facts">
                <dt>Plan</dt><dd><strong>${org.subscription_tier}</strong> <${TierSwitch} org=${org} reload=${reload} /></dd>
                <dt>Instances</dt><dd>${org.instance_count} of ${org.instance_limit}</dd>
                <dt>Providers with a key</dt><dd>${org.model_providers.length ? org.model_providers.join(", ") : "none"}</dd>
                <dt>Created</dt><dd>${time(org.created_at)}</dd>
              </dl>
              <h3>Scoped keys</h3>
              ${
                org.keys.length === 0
                  ? html`<p class="muted">No scoped keys. The organization key was shown once at signup; mint scoped keys with <code>POST /v1/keys</code>.</p>`
                  : html`<div class="table-wrap"><table>
                    <thead><tr><th>Name</th><th>Active</th><th>Permissions</th><th>Last used</th><th>Expires</th><th>Id</th></tr></thead>
                    <tbody>${org.keys.map(
                      (k) => html`<tr key=${k.id}>
                        <td>${k.name}</td><td>${k.is_active ? "yes" : "no"}</td>
                        <td>${k.instances.map((g) => html`<div><code>${short(g.instance_id)}</code>: ${g.permissions.join(", ")}</div>`)}</td>
                        <td>${time(k.last_used_at)}</td><td>${k.expires_at ? time(k.expires_at) : "never"}</td><td><code title=${k.id}>${short(k.id)}</code></td>
                      </tr>`,
                    )}</tbody></table></div>`
              }
            </article>`,
          )}<//>
  </section>`;
}
