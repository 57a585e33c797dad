// One session's chain of turns, following new turns live within a bounded
// window; and the chain that ends at a given response id.
import { appendWindow, TURN_WINDOW, windowSize } from "../window.js";
import { get, html, Link, Loading, time, useEvent, useLive, useState } from "../lib.js";
import { InstanceTabs } from "./instances.js";

/** Pretty JSON when the text is a structured output; the text itself otherwise. */
const pretty = (text) => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
};

/** One output item of a turn that was more than text: tool call, structured output, refusal, reasoning. */
function AnswerItem({ item }) {
  switch (item.type) {
    case "function_call":
      return html`<div class="bubble output tool-call" data-item="function_call"><span class="who">tool call <code>${item.call_id}</code></span><pre><strong>${item.name}</strong>(${pretty(item.arguments)})</pre></div>`;
    case "refusal":
      return html`<div class="bubble output refusal" data-item="refusal"><span class="who">refusal</span><pre>${item.refusal}</pre></div>`;
    case "reasoning":
      return html`<div class="bubble output reasoning" data-item="reasoning"><span class="who">reasoning</span><pre>${item.summary}</pre></div>`;
    default:
      return item.json
        ? html`<div class="bubble output structured" data-item="structured"><span class="who">structured output</span><pre>${pretty(item.text)}</pre></div>`
        : html`<div class="bubble output" data-item="message"><span class="who">output</span><pre>${item.text}</pre></div>`;
  }
}

function Turn({ turn, instanceId }) {
  return html`<li class="turn" data-response=${turn.id}>
    <div class="turn-meta">
      <${Link} to=${`/responses/${turn.id}`}><code>${turn.id}</code></${Link}>
      ${
        turn.previous_response_id
          ? html`<span>after <${Link} to=${`/responses/${turn.previous_response_id}`}><code>${turn.previous_response_id}</code></${Link}></span>`
          : html`<span class="muted">first turn</span>`
      }
      <span class="muted">${time(turn.created_at)} · ${turn.model} · ${turn.usage.input_tokens} in / ${turn.usage.output_tokens} out tokens</span>
      ${instanceId ? null : html`<span class="muted">session ${turn.session}</span>`}
      ${turn.answer?.rule ? html`<span class="badge" data-testid="rule">rule: ${turn.answer.rule}</span>` : null}
      ${turn.answer?.status === "incomplete" ? html`<span class="badge">incomplete</span>` : null}
    </div>
    <div class="bubble input"><span class="who">input</span><pre>${turn.input_text}</pre></div>
    ${
      turn.answer
        ? turn.answer.items.map((item, i) => html`<${AnswerItem} key=${i} item=${item} />`)
        : html`<div class="bubble output"><span class="who">output</span><pre>${turn.output_text}</pre></div>`
    }
  </li>`;
}

/** A turn event in the shape the console API answers with. */
const fromEvent = (e) => ({
  id: e.id,
  session: e.session,
  previous_response_id: e.previous_response_id,
  input_text: e.input_text,
  output_text: e.output_text,
  model: e.model,
  created_at: new Date(e.created_at * 1000).toISOString(),
  usage: e.usage,
});

export function Conversation({ id, session }) {
  const max = windowSize(location.search, TURN_WINDOW);
  const url = `/_emulator/console/instances/${encodeURIComponent(id)}/sessions/${encodeURIComponent(session)}?limit=${Math.min(max, 1000)}`;
  const [state, reload, loading] = useLive(() => get(url), [id, session]);
  // Turns that arrived by event since the last load, appended in the same bounded window.
  const [live, setLive] = useState({ base: undefined, turns: [] });
  const loaded = state.data;
  const base = live.base === loaded ? live.turns : (loaded?.turns ?? []);
  useEvent(["turn"], (_t, e) => {
    if (e.instance_id !== id || e.session !== session) return;
    if (!loaded) return void reload(); // the first load may predate this turn: load once more after it
    // A load under way (after a reconnect, say) may have read the session before this turn and would
    // replace what is appended below: load once more after it, as well.
    if (loading()) reload();
    const last = base[base.length - 1];
    // A turn with tool calls or an object is shown from the console API, which gives its items.
    const whole = !e.truncated && !e.answer;
    // Appended directly when it continues what is shown; otherwise (a gap, a cut text) load again.
    if (whole && (last ? e.previous_response_id === last.id : e.previous_response_id === null)) {
      setLive({ base: loaded, turns: appendWindow(base, [fromEvent(e)], max) });
    } else reload();
  });
  return html`<section>
    <h1>Session <code>${session}</code></h1>
    <${InstanceTabs} id=${id} current="" />
    <p class="muted"><${Link} to=${`/instances/${id}`}>← all sessions of this instance</${Link}> · newest ${max} turns shown, new turns appear as they happen</p>
    <${Loading} state=${state}>${() =>
      base.length === 0
        ? html`<p class="empty">No turns in this session yet. Messages sent to <code>/v1/instances/${id}/session/${session}/responses</code> appear here live.</p>`
        : html`<ol class="turns" data-testid="turns">${base.map((t) => html`<${Turn} key=${t.id} turn=${t} instanceId=${id} />`)}</ol>`}<//>
  </section>`;
}

export function ResponseChain({ responseId }) {
  const [state] = useLive(() => get(`/_emulator/console/responses/${encodeURIComponent(responseId)}?limit=${TURN_WINDOW}`), [responseId]);
  const data = state.data;
  return html`<section>
    <h1>Chain ending at <code>${responseId}</code></h1>
    ${
      data
        ? html`<p class="muted">Instance <${Link} to=${`/instances/${data.instance_id}`}><code>${data.instance_id}</code></${Link}>,
          session <${Link} to=${`/instances/${data.instance_id}/sessions/${encodeURIComponent(data.session)}`}>${data.session}</${Link}>
          · ${data.total} turn${data.total === 1 ? "" : "s"}${data.total > data.turns.length ? `, newest ${data.turns.length} shown` : ""}</p>
          <ol class="turns">${data.turns.map((t) => html`<${Turn} key=${t.id} turn=${t} instanceId=${data.instance_id} />`)}</ol>`
        : html`<${Loading} state=${state}>${() => null}<//>`
    }
  </section>`;
}
