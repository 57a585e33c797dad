// An instance's channels: which are enabled and connected; a WhatsApp pairing
// shows its QR as an image, with a button that plays the phone's scan.
import { Action, api, asOrg, get, html, Loading, useLive } from "../lib.js";
import { InstanceHeader, useInstance } from "./instances.js";

export function Channels({ id }) {
  const { state, instance } = useInstance(id);
  const [channels, reload] = useLive(
    () => get(`/_emulator/console/instances/${encodeURIComponent(id)}/channels`),
    [id],
    (type, d) => type === "state" || (type === "request" && d.method !== "GET" && d.path.includes(`/instances/${id}/channels`)),
  );
  const connectWhatsApp = async () => {
    await api("POST", asOrg(instance.organization_id, `/v1/instances/${encodeURIComponent(id)}/channels/whatsapp/connect`), { config: {} });
    await reload();
  };
  return html`<section>
    <${InstanceHeader} id=${id} instance=${instance} state=${state} current="/channels" />
    <${Loading} state=${channels}>${(list) => html`<div class="table-wrap"><table data-testid="channels">
      <thead><tr><th>Channel</th><th>Connects by</th><th>Enabled</th><th>Connected</th><th></th></tr></thead>
      <tbody>${list.map(
        (c) => html`<tr key=${c.channel} data-channel=${c.channel}>
          <td>${c.label}</td><td>${c.connection_type}</td><td>${c.enabled ? "yes" : "no"}</td>
          <td>${c.connected ? "yes" : c.awaiting_scan ? "awaiting scan" : "no"}</td>
          <td>${
            c.awaiting_scan
              ? html`<figure class="qr">
                <img src=${c.qr_png} alt=${`${c.label} pairing QR code`} width="164" height="164" data-testid=${`qr-${c.channel}`} />
                <figcaption><${Action} run=${async () => {
                  await api("POST", `/_emulator/instances/${encodeURIComponent(id)}/channels/${c.channel}/scan`);
                  await reload();
                }}>Scan<//> <span class="muted">(as the phone would)</span></figcaption>
              </figure>`
              : c.channel === "whatsapp" && !c.connected && instance?.status === "running"
                ? html`<${Action} run=${connectWhatsApp}>Start pairing<//>`
                : null
          }</td>
        </tr>`,
      )}</tbody></table></div>
      <p class="muted">Token channels connect through the API (<code>POST /v1/instances/${id}/channels/{channel}/connect</code>); their secrets are never shown.</p>`}<//>
  </section>`;
}
