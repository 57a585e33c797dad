// Live activity: messages accepted, replies known, replies delivered (with latencies), queue moves, channel states. No message text.
import { EVENT_TYPES, html, seconds, useEvent, useState } from "../lib.js";

/** Rows kept: a console left open under load keeps a fixed number. */
const WINDOW = 200;

const describe = (e) => {
  const chat = e.chat?.name ?? "";
  switch (e.type) {
    case "accepted":
      return `${e.kind === "command" ? "command" : "message"} accepted from ${chat} for ${e.instance}`;
    case "replied":
      return `reply ready for ${chat} after ${seconds(e.latencyMs)}`;
    case "delivered":
      return `reply delivered to ${chat} after ${seconds(e.latencyMs)}`;
    case "queue":
      return `${e.instance}: ${e.running} in flight, ${e.waiting} waiting`;
    case "channel":
      return `channel ${e.channel} (${e.platformName}) is ${e.state}`;
    case "pairing":
      return "pairing requests or approvals changed";
    case "session":
      return `fresh session for ${chat} (${e.by})`;
    case "config":
      return "a config reload was applied or refused (see the overview)";
    case "overflow":
      return `this page fell behind: ${e.dropped} events were not shown`;
    default:
      return e.type;
  }
};

let seq = 0;

export function Activity() {
  const [rows, setRows] = useState([]);
  useEvent(
    EVENT_TYPES.filter((t) => t !== "hello"),
    // Each row numbered as it comes: events have no id of their own, and a row's key must not move.
    (type, detail) => setRows((list) => [{ ...detail, type, seq: ++seq }, ...list].slice(0, WINDOW)),
  );
  return html`<section>
    <h1>Live activity</h1>
    ${rows.length === 0 ? html`<p class="muted">Waiting for something to happen…</p>` : null}
    <ol class="activity" data-testid="activity">
      ${rows.map((e) => html`<li key=${e.seq} class=${`event ${e.type}`} data-type=${e.type}><time>${new Date(e.at).toLocaleTimeString()}</time> ${describe(e)}</li>`)}
    </ol>
  </section>`;
}
