// The console's shell: a history-API router over `/ui/...`, the navigation,
// the operator's name and the live-connection indicator. Each view lives in views/.
import { connectEvents, html, Link, operatorName, render, routed, setOperatorName, useEffect, useLiveStatus, usePath, useState } from "./lib.js";
import { Overview } from "./views/overview.js";
import { Pairing } from "./views/pairing.js";
import { Chats, ChatView } from "./views/chats.js";
import { Activity } from "./views/activity.js";
import { Links } from "./views/links.js";
import { Cluster } from "./views/cluster.js";

const ROUTES = [
  [/^\/?$/, () => html`<${Overview} />`],
  [/^\/overview\/?$/, () => html`<${Overview} />`],
  [/^\/pairing\/?$/, () => html`<${Pairing} />`],
  [/^\/chats\/?$/, () => html`<${Chats} />`],
  [/^\/chats\/([^/]+)\/?$/, (key) => html`<${ChatView} chatKey=${key} />`],
  [/^\/activity\/?$/, () => html`<${Activity} />`],
  [/^\/whatsapp\/?$/, () => html`<${Links} />`],
  [/^\/nodes\/?$/, () => html`<${Cluster} />`],
];

const NAV = [
  ["/overview", "Overview"],
  ["/pairing", "Pairing"],
  ["/chats", "Chats"],
  ["/activity", "Live activity"],
  ["/whatsapp", "WhatsApp"],
  ["/nodes", "Nodes"],
];

function route(path) {
  return (
    routed(ROUTES, path) ??
    html`<section><h1>Not found</h1><p>Nothing lives at <code>${path}</code>. <${Link} to="/overview">Go to the overview</${Link}>.</p></section>`
  );
}

function OperatorName() {
  const [name, setName] = useState(operatorName());
  return html`<label class="operator"
    >Your name (for the log)
    <input value=${name} maxlength="40" onInput=${(e) => {
      setName(e.target.value);
      setOperatorName(e.target.value);
    }}
  /></label>`;
}

function App() {
  const path = usePath();
  const status = useLiveStatus();
  useEffect(() => {
    const section = NAV.find(([to]) => path.startsWith(to))?.[1] ?? "Overview";
    document.title = `${section} · agent-bridge console`;
  }, [path]);
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header>
      <span class="brand">agent-bridge</span>
      <nav aria-label="Sections">
        ${NAV.map(([to, label]) => html`<${Link} key=${to} to=${to} aria-current=${path.startsWith(to) || (to === "/overview" && path === "/") ? "page" : undefined}>${label}</${Link}>`)}
      </nav>
      <${OperatorName} />
      <span class=${`status ${status}`} role="status" aria-live="polite" data-testid="live-status">${status}</span>
    </header>
    <main id="main">${route(path)}</main>
  `;
}

connectEvents();
const root = document.getElementById("app");
root.textContent = "";
render(html`<${App} />`, root);
