// The overview: the config (last reload, nodes running another one), the last hour at a glance (turns, latency and queue depth,
// plotted, reloaded on every turn and queue move), channels and their link health, queues per instance, errors, the service's reachability.
import { get, html, Loading, seconds, useEffect, useLive } from "../lib.js";

const MINUTE = 60 * 1000;
const HOUR = 60 * MINUTE;
const W = 180;
const H = 40;

/**
 * A series of `[at, value]` points of the hour up to `now`, as an inline SVG line (no chart library):
 * time left to right from the first point (at most an hour back, at least a minute) to now, zero at
 * the bottom, the series' largest value at the top. The caption says which span it shows.
 */
function Sparkline({ points, now, label, format, testid }) {
  const max = Math.max(1, ...points.map(([, v]) => v));
  const from = Math.min(now - MINUTE, Math.max(now - HOUR, points[0]?.[0] ?? now - HOUR));
  const x = (at) => (((at - from) / (now - from)) * (W - 3)).toFixed(1);
  const y = (v) => (H - 3 - (v / max) * (H - 6)).toFixed(1);
  const last = points.at(-1);
  const span = now - from >= HOUR - MINUTE ? "the last hour" : `the last ${Math.ceil((now - from) / MINUTE)} min`;
  const summary = points.length
    ? `${label} over ${span}: ${points.length} points, latest ${format(last[1])}, highest ${format(max)}`
    : `${label}: nothing in the last hour`;
  return html`<figure class="spark">
    <svg viewBox=${`0 0 ${W} ${H}`} width=${W} height=${H} role="img" aria-label=${summary} data-testid=${testid} data-points=${points.length}>
      <line class="axis" x1="0" y1=${H - 1} x2=${W} y2=${H - 1} />
      ${points.length > 1 ? html`<polyline points=${points.map(([at, v]) => `${x(at)},${y(v)}`).join(" ")} />` : null}
      ${last ? html`<circle cx=${x(last[0])} cy=${y(last[1])} r="2.5" />` : null}
    </svg>
    <figcaption class="muted">${points.length ? `${span}, highest ${format(max)}` : "nothing in the last hour"}</figcaption>
  </figure>`;
}

/** One figure of the glance: its name, the value now, and its hour plotted. */
function Stat({ title, value, testid, points, now, format }) {
  return html`<article class="card stat">
    <h2>${title}</h2>
    <p class="figure" data-testid=${testid}>${value}</p>
    <${Sparkline} points=${points} now=${now} label=${title} format=${format} testid=${`${testid}-plot`} />
  </article>`;
}

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
      <div class="cards" data-testid="glance">
        <${Stat} title="Turns per minute" testid="turns-per-minute" value=${o.turnsPerMinute} points=${o.history.turnsPerMinute} now=${o.history.now} format=${String} />
        <${Stat} title="Latency" testid="median-latency" value=${seconds(o.medianLatencyMs)} points=${o.history.latencyMs} now=${o.history.now} format=${seconds} />
        <${Stat} title="Queue depth" testid="queue-depth" value=${o.queues.reduce((n, q) => n + q.waiting + q.running, 0)} points=${o.history.queueDepth} now=${o.history.now} format=${String} />
        <article class="card stat"><h2>Errors</h2><p class="figure" data-testid="errors">${o.errors}</p><p class="muted">${
          Object.entries(o.turns)
            .map(([k, v]) => `${k}: ${v}`)
            .join(", ") || "No turns yet."
        }</p></article>
      </div>
      <h2>Channels</h2>
      ${
        o.channels.length
          ? html`<table data-testid="channels"><thead><tr><th>Channel</th><th>Platform</th><th>Link</th></tr></thead><tbody>
        ${o.channels.map((c) => html`<tr key=${c.id} data-channel=${c.id}><td>${c.id}</td><td>${c.platformName}</td><td class=${`state ${c.state}`}>${c.state}</td></tr>`)}
      </tbody></table>`
          : html`<p class="muted">No channels run on this node.</p>`
      }
      <h2>Queues</h2>
      <table data-testid="queues"><thead><tr><th>Instance</th><th>Waiting</th><th>In flight</th><th>Service</th></tr></thead><tbody>
        ${o.queues.map((q) => {
          const reach = o.service.find((s) => s.instance === q.instance);
          return html`<tr key=${q.instance} data-instance=${q.instance}><td><code>${q.instance}</code></td><td>${q.waiting}</td><td>${q.running}</td><td class=${reach?.reachable ? "ok" : "error"}>${reach?.status ?? "—"}</td></tr>`;
        })}
      </tbody></table>
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
          <ul>${last.problems.map((p) => html`<li key=${p} data-testid="config-problem">${p}</li>`)}</ul></div>`)
    }
    ${
      differ.length > 0 &&
      html`<p data-testid="config-differ" class="error" role="alert">These nodes run another config than this one (hash <code>${config.hash}</code>): ${differ.map((d, i) => html`<span key=${d.node}>${i ? ", " : ""}<strong data-node=${d.node}>${d.node}</strong> (<code>${d.hash}</code>)</span>`)}.</p>`
    }
  `;
}
