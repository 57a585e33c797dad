// WhatsApp: each channel that links by a scanned code, its live state, the QR code while it links, and re-link.
import { api, Action, get, html, Loading, useLive, useState } from "../lib.js";

export function Links() {
  const [state, reload] = useLive(() => get("links"), [], ["channel"]);
  const [said, setSaid] = useState();
  return html`<section>
    <h1>WhatsApp</h1>
    <${Loading} state=${state}>${({ links }) =>
      links.length === 0
        ? html`<p class="muted">No channel on this node links by a QR code.</p>`
        : links.map(
            (l) => html`<article key=${l.channel} class="card" data-link=${l.channel}>
              <h2>${l.channel}</h2>
              <p>Link: <strong class=${`state ${l.state}`} data-testid="link-state">${l.state}</strong></p>
              ${
                l.qr
                  ? html`<p>Scan with WhatsApp › Settings › Linked devices › Link a device:</p><img class="qr" src=${l.qr} alt=${`QR code to link ${l.channel}`} width="264" height="264" />`
                  : null
              }
              <${Action}
                confirm=${`Re-link ${l.channel}? It forgets its WhatsApp link: the chats stop until someone scans the new code with the phone.`}
                run=${async () => {
                  const r = await api("POST", `links/${encodeURIComponent(l.channel)}/relink`);
                  setSaid(r.text);
                  reload();
                }}>Re-link (forget the link, show a new code)<//>
            </article>`,
          )}<//>
    ${said && html`<p class="ok" role="status" data-testid="relink-result">${said}</p>`}
  </section>`;
}
