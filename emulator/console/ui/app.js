// The console's shell: a history-API router over `/_emulator/ui/...`, the
// navigation, and the live-connection indicator. Each view lives in views/.
import { connectEvents, html, Link, render, routed, useEffect, useLiveStatus, usePath } from "./lib.js";
import { Instances, InstanceView } from "./views/instances.js";
import { Organizations } from "./views/organizations.js";
import { Conversation, ResponseChain } from "./views/conversation.js";
import { RequestLog } from "./views/requests.js";
import { Faults } from "./views/faults.js";
import { Files } from "./views/files.js";
import { Channels } from "./views/channels.js";
import { Skills } from "./views/skills.js";
import { Snapshot } from "./views/snapshot.js";

const ROUTES = [
  [/^\/?$/, () => html`<${Instances} />`],
  [/^\/instances\/?$/, () => html`<${Instances} />`],
  [/^\/instances\/([^/]+)\/?$/, (id) => html`<${InstanceView} id=${id} />`],
  [/^\/instances\/([^/]+)\/sessions\/(.+)$/, (id, session) => html`<${Conversation} id=${id} session=${session} />`],
  [/^\/instances\/([^/]+)\/files\/?$/, (id) => html`<${Files} id=${id} />`],
  [/^\/instances\/([^/]+)\/channels\/?$/, (id) => html`<${Channels} id=${id} />`],
  [/^\/instances\/([^/]+)\/skills\/?$/, (id) => html`<${Skills} id=${id} />`],
  [/^\/responses\/([^/]+)\/?$/, (id) => html`<${ResponseChain} responseId=${id} />`],
  [/^\/organizations\/?$/, () => html`<${Organizations} />`],
  [/^\/requests\/?$/, () => html`<${RequestLog} />`],
  [/^\/faults\/?$/, () => html`<${Faults} />`],
  [/^\/snapshot\/?$/, () => html`<${Snapshot} />`],
];

const NAV = [
  ["/instances", "Instances"],
  ["/organizations", "Organizations"],
  ["/requests", "Request log"],
  ["/faults", "Faults"],
  ["/snapshot", "Snapshot & reset"],
];

function route(path) {
  return (
    routed(ROUTES, path) ??
    html`<section><h1>Not found</h1><p>Nothing lives at <code>${path}</code>. <${Link} to="/instances">Go to the instances</${Link}>.</p></section>`
  );
}

function App() {
  const path = usePath();
  const status = useLiveStatus();
  useEffect(() => {
    // A new view: focus its heading so keyboard and screen-reader users land in it.
    const heading = document.querySelector("main h1");
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus({ preventScroll: true });
    }
    const section = NAV.find(([to]) => path.startsWith(to))?.[1] ?? "Instances";
    document.title = `${section} · emulator console`;
  }, [path]);
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header>
      <span class="brand">agent-bridge emulator</span>
      <nav aria-label="Sections">
        ${NAV.map(([to, label]) => html`<${Link} to=${to} aria-current=${path.startsWith(to) || (to === "/instances" && path === "/") ? "page" : undefined}>${label}</${Link}>`)}
      </nav>
      <span class=${`status ${status}`} role="status" aria-live="polite" data-testid="live-status">${status}</span>
    </header>
    <main id="main">${route(path)}</main>
  `;
}

connectEvents();
const root = document.getElementById("app");
root.textContent = ""; // the no-JavaScript notice
render(html`<${App} />`, root);
