// Several machines: the nodes, which node owns which account, lease age and fencing number; hand an account over.
import { api, Action, get, html, Loading, seconds, useEffect, useLive, useState } from "../lib.js";

/** Other nodes' takes are not events here: the view reads the database this often. */
const REFRESH_MS = 2_000;

export function Cluster() {
  const [state, reload] = useLive(() => get("cluster"), [], ["channel"]);
  const [said, setSaid] = useState();
  useEffect(() => {
    const timer = setInterval(reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  return html`<section>
    <h1>Nodes</h1>
    <${Loading} state=${state}>${({ cluster }) =>
      !cluster
        ? html`<p class="muted">This daemon runs on one machine (<code>"state": {"kind": "file"}</code>).</p>`
        : html`
      <p>This console is node <strong data-testid="this-node">${cluster.node}</strong>.</p>
      <h2>Nodes</h2>
      <table data-testid="nodes"><thead><tr><th>Node</th><th>Last heartbeat</th></tr></thead><tbody>
        ${cluster.nodes.map((n) => html`<tr key=${n.id} data-node=${n.id}><td>${n.id}</td><td>${seconds(n.seenAgoMs)} ago</td></tr>`)}
      </tbody></table>
      <h2>Accounts</h2>
      <table data-testid="leases"><thead><tr><th>Account</th><th>Owner</th><th>Fencing number</th><th>Lease age</th><th></th></tr></thead><tbody>
        ${cluster.leases.map(
          (
            l,
          ) => html`<tr key=${l.unit} data-unit=${l.unit}><td>${l.unit}</td><td data-testid="owner">${l.live ? l.holder : "nobody (free)"}</td><td data-testid="epoch">${l.epoch}</td>
            <td>${l.ageMs === null ? "—" : seconds(l.ageMs)}</td>
            <td>${
              l.live && l.holder === cluster.node
                ? html`<${Action}
                    confirm=${`Hand ${l.unit} over? This node lets go of it and another node takes it; its chats pause until then.`}
                    run=${async () => {
                      const r = await api("POST", `cluster/units/${encodeURIComponent(l.unit)}/hand-over`);
                      setSaid(r.text);
                      reload();
                    }}>Hand over<//>`
                : null
            }</td></tr>`,
        )}
      </tbody></table>
      ${said && html`<p class="ok" role="status" data-testid="hand-over-result">${said}</p>`}
    `}<//>
  </section>`;
}
