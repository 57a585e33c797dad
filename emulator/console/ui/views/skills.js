// An instance's skills: the registry with what is installed; install and remove.
import { Action, api, asOrg, get, html, Loading, useLive } from "../lib.js";
import { InstanceHeader, useInstance } from "./instances.js";

export function Skills({ id }) {
  const { state, instance } = useInstance(id);
  const org = instance?.organization_id;
  const base = (suffix) => asOrg(org, `/v1/instances/${encodeURIComponent(id)}/skills${suffix}`);
  const [skills, reload] = useLive(
    async () => (org ? get(base("")) : undefined),
    [org],
    (type, d) => type === "request" && d.method !== "GET" && d.path.includes(`/instances/${id}/skills`),
  );
  return html`<section>
    <${InstanceHeader} id=${id} instance=${instance} state=${state} current="/skills" />
    ${
      instance &&
      html`<${Loading} state=${skills}>${(list) =>
        !list || list.length === 0
          ? html`<p class="empty">No skills in the registry.</p>`
          : html`<div class="table-wrap"><table data-testid="skills">
            <thead><tr><th>Skill</th><th>Description</th><th>Source</th><th>Ready (installed, env set)</th><th></th></tr></thead>
            <tbody>${list.map(
              (s) => html`<tr key=${s.name}>
                <td>${s.name}</td><td>${s.description}</td><td>${s.source}</td><td>${s.ready ? "yes" : "no"}</td>
                <td><div class="toolbar cell-actions">
                  <${Action} run=${async () => {
                    await api("POST", base("/install"), { slug: s.name });
                    await reload();
                  }}>Install<//>
                  <${Action} confirm=${`Remove ${s.name}?`} run=${async () => {
                    await api("DELETE", base(`/${encodeURIComponent(s.name)}`));
                    await reload();
                  }}>Remove<//></div></td>
              </tr>`,
            )}</tbody></table></div>`}<//>`
    }
  </section>`;
}
