// The overview: the config (last reload, nodes running another one), channels and their link health, queues per instance, turns per minute, errors, the service's reachability.
import { get, html, Loading, seconds, useEffect, useLive } from "../lib.js";

/** Several machines: other nodes' hashes come with their heartbeats, not as events here, so the view reads them this often. */
const CLUSTER_REFRESH_MS = 2_000;

export function Overview() {
  const [state, reload] = useLive(() => get("overview"), [], ["delivered", "queue", "channel", "accepted", "config"]);
  const clustered = state.data?.config.otherNodesDiffer != null;
  useEffect(() => {
    if (!clustered) return;
    const timer = setInterval(reload, CLUSTER_REFRESH_MS);
    return () => clearInterval(timer);
  }, [clustered]);
  return html`<section>
    <h1>Overview</h1>
    <${Loading} state=${state}>${(o) => html`
      <${ConfigNotes} config=${o.config} />
      <div class="cards">
        <article class="card"><h2>Turns per minute</h2><p data-testid="turns-per-minute">${o.turnsPerMinute}</p></article>
        <article class="card"><h2>Median latency</h2><p data-testid="median-latency">${seconds(o.medianLatencyMs)}</p></article>
        <article class="card"><h2>Errors</h2><p data-testid="errors">${o.errors}</p></article>
      </div>
      <h2>Channels</h2>
      ${
        o.channels.length
          ? html`<table data-testid="channels"><thead><tr><th>Channel</th><th>Platform</th><th>Link</th></tr></thead><tbody>
        ${o.channels.map((c) => html`<tr data-channel=${c.id}><td>${c.id}</td><td>${c.platform}</td><td class=${`state ${c.state}`}>${c.state}</td></tr>`)}
      </tbody></table>`
          : html`<p class="muted">No channels run on this node.</p>`
      }
      <h2>Queues</h2>
      <table data-testid="queues"><thead><tr><th>Instance</th><th>Waiting</th><th>In flight</th><th>Service</th></tr></thead><tbody>
        ${o.queues.map((q) => {
          const reach = o.service.find((s) => s.instance === q.instance);
          return html`<tr data-instance=${q.instance}><td><code>${q.instance}</code></td><td>${q.waiting}</td><td>${q.running}</td><td class=${reach?.reachable ? "ok" : "error"}>${reach?.status ?? "—"}</td></tr>`;
        })}
      </tbody></table>
      <h2>Turns by outcome</h2>
      <p>${
        Object.entries(o.turns)
          .map(([k, v]) => `${k}: ${v}`)
          .join(", ") || "None yet."
      }</p>
    `}<//>
  </section>`;
}

/** A refused reload with its problems, a good one's hash, and the nodes whose config differs from this node's. */
function ConfigNotes({ config }) {
  const last = config.lastReload;
  const differ = config.otherNodesDiffer ?? [];
  return html`
    ${
      last &&
      (last.ok
        ? html`<p data-testid="config-reload" class="ok">Config ${last.changed ? "reloaded" : "unchanged"} (hash <code>${last.hash}</code>).${last.restartNeeded.length ? ` These change only at the next restart: ${last.restartNeeded.join(", ")}.` : ""}</p>`
        : html`<div data-testid="config-reload" class="error" role="alert"><p>The last config reload was refused; the running config (hash <code>${config.hash}</code>) stays:</p>
          <ul>${last.problems.map((p) => html`<li data-testid="config-problem">${p}</li>`)}</ul></div>`)
    }
    ${
      differ.length > 0 &&
      html`<p data-testid="config-differ" class="error" role="alert">These nodes run another config than this one (hash <code>${config.hash}</code>): ${differ.map((d, i) => html`${i ? ", " : ""}<strong data-node=${d.node}>${d.node}</strong> (<code>${d.hash}</code>)`)}.</p>`
    }
  `;
}
