// The overview: channels and their link health, queues per instance, turns per minute, errors, the service's reachability.
import { get, html, Loading, seconds, useLive } from "../lib.js";

export function Overview() {
  const [state] = useLive(() => get("overview"), [], ["delivered", "queue", "channel", "accepted"]);
  return html`<section>
    <h1>Overview</h1>
    <${Loading} state=${state}>${(o) => html`
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
