// Chats: which chat is on which session and instance, when it resets next; one chat's last turns (its text shows here only); a fresh session.
import { api, Action, get, html, Link, Loading, seconds, time, useLive, useState } from "../lib.js";

const nextReset = (r) => (r ? `${time(r.at)} (${r.reason})` : "only by /new");

export function Chats() {
  const [state] = useLive(() => get("chats"), [], ["accepted", "delivered", "session"]);
  return html`<section>
    <h1>Chats</h1>
    <${Loading} state=${state}>${({ chats }) =>
      chats.length === 0
        ? html`<p class="muted">No chat has written since this node started.</p>`
        : html`<table data-testid="chats"><thead><tr><th>Chat</th><th>Instance</th><th>Session</th><th>Last message</th><th>Next reset</th></tr></thead><tbody>
        ${chats.map(
          (c) => html`<tr key=${c.key} data-chat=${c.chatId}>
            <td><${Link} to=${`/chats/${encodeURIComponent(c.key)}`}>${c.name}<//></td>
            <td><code>${c.instance}</code></td><td>${c.session.base} #${c.session.generation}${c.session.chained ? "" : " (new)"}</td>
            <td>${time(c.lastAt)}</td><td>${nextReset(c.nextReset)}</td></tr>`,
        )}</tbody></table>`}<//>
  </section>`;
}

export function ChatView({ chatKey }) {
  // Only this chat's events: opening a chat is logged, and other chats' traffic must not reopen it.
  const [state, reload] = useLive(
    () => get(`chats/${encodeURIComponent(chatKey)}`),
    [chatKey],
    ["accepted", "replied", "delivered", "session"],
    (_type, e) => e.chat?.key === chatKey,
  );
  const [fresh, setFresh] = useState();
  return html`<section>
    <h1>Chat</h1>
    <${Loading} state=${state}>${(c) => html`
      <dl class="facts">
        <dt>Chat</dt><dd data-testid="chat-name">${c.name}</dd>
        <dt>Instance</dt><dd><code>${c.instance}</code></dd>
        <dt>Session</dt><dd data-testid="session">${c.session.base} #${c.session.generation}${c.session.chained ? "" : " (new)"}</dd>
        <dt>Next reset</dt><dd>${nextReset(c.nextReset)}</dd>
      </dl>
      <${Action}
        confirm=${`Start a fresh session for ${c.name}? The agent forgets this conversation.`}
        run=${async () => {
          const r = await api("POST", `chats/${encodeURIComponent(chatKey)}/fresh-session`);
          setFresh(r.sessionId);
          reload();
        }}>Start a fresh session<//>
      ${fresh && html`<p class="ok" role="status" data-testid="fresh-session">New session: ${fresh}</p>`}
      <h2>Last turns</h2>
      ${
        c.turns.length
          ? html`<ol class="turns">${c.turns.map(
              (t) => html`<li key=${t.entry} class="turn" data-entry=${t.entry}>
          <p><strong>${t.userName ?? "person"}</strong> ${time(t.acceptedAt)}${
            t.answers ? html` answered <em data-testid="answered">${t.answers}</em>` : ""
          }: ${t.text}</p>
          <p><strong>agent</strong>: ${t.reply ?? html`<span class="muted">(no reply yet)</span>`}</p>
          ${
            t.question &&
            html`<p data-testid="question"><strong>agent asks</strong>: ${t.question.text}
            <span class="muted">(${t.question.options.join(" · ")}${t.question.allowText ? " · or any words" : ""})</span></p>`
          }
          <p class="muted">${t.deliveredAt ? `delivered after ${seconds(t.latencyMs)}` : "not delivered yet"}</p>
        </li>`,
            )}</ol>`
          : html`<p class="muted">No turns since this node started.</p>`
      }
    `}<//>
  </section>`;
}
