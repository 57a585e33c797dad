// Pairing: who waits (never their codes: the operator types the code the person was shown), approve, approved people, revoke.
import { api, Action, get, html, Loading, time, useLive, useState } from "../lib.js";

function ApproveForm({ channels, done }) {
  const [channel, setChannel] = useState(channels[0] ?? "");
  const [code, setCode] = useState("");
  const [said, setSaid] = useState();
  const submit = async () => {
    const answer = await api("POST", "pairing/approve", { channel, code });
    setSaid(answer.text);
    setCode("");
    done();
  };
  return html`<form class="approve" onSubmit=${(e) => e.preventDefault()}>
    <label>Channel <select value=${channel} onChange=${(e) => setChannel(e.target.value)}>${channels.map((c) => html`<option key=${c} value=${c}>${c}</option>`)}</select></label>
    <label>Code <input name="code" autocomplete="off" value=${code} onInput=${(e) => setCode(e.target.value)} /></label>
    <${Action} run=${submit}>Approve<//>
    ${said && html`<p class="ok" role="status" data-testid="approve-result">${said}</p>`}
  </form>`;
}

export function Pairing() {
  const [state, reload] = useLive(() => get("pairing"), [], ["pairing"]);
  return html`<section>
    <h1>Pairing</h1>
    <${Loading} state=${state}>${(p) =>
      p.channels.length === 0
        ? html`<p class="muted">No channel uses <code>"access": {"mode": "pairing"}</code>.</p>`
        : html`
      <h2>Approve a code</h2>
      <p>Type the code the person was shown in their chat.</p>
      <${ApproveForm} channels=${p.channels} done=${reload} />
      ${p.lists.map(
        (l) => html`<article key=${l.channel} class="card" data-pairing-channel=${l.channel}>
          <h2>${l.channel}</h2>
          <h3>Waiting</h3>
          ${l.pending.length ? html`<ul>${l.pending.map((w) => html`<li key=${w.userId} data-waiting=${w.userId}>${w.userName ?? w.userId} (${w.userId}), asked ${time(w.createdAt)}, code expires ${time(w.expiresAt)}</li>`)}</ul>` : html`<p class="muted">Nobody waits.</p>`}
          <h3>Approved</h3>
          ${
            l.approved.length
              ? html`<ul>${l.approved.map(
                  (a) =>
                    html`<li key=${a.userId} data-approved=${a.userId}>${a.userName ?? a.userId} (${a.userId}), ${time(a.at)} by ${a.by} <${Action}
                      confirm=${`Revoke pairing of ${a.userName ?? a.userId} (${a.userId}) on ${l.channel}? They will have to pair again.`}
                      run=${async () => {
                        await api("POST", "pairing/revoke", { channel: l.channel, user: a.userId });
                        reload();
                      }}>Revoke<//></li>`,
                )}</ul>`
              : html`<p class="muted">Nobody yet.</p>`
          }
        </article>`,
      )}
    `}<//>
  </section>`;
}
