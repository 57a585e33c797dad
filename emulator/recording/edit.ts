/**
 * A hand-edited model answer, carried into the replay: when a message call's
 * rule in `model_script` says another text than the recorded answer, the
 * replayed answer says the rule's text, everywhere the answer holds it (the
 * body; a stream's deltas, done events and final response), with the
 * recorded shape, ids and pace kept.
 */
import { outputTextOf } from "../../shared/schemas/responses.js";
import { finalResponseOf } from "./capture.js";
import type { Interaction, RecordedResponse, Recording } from "./format.js";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isText = (part: unknown): part is Record<string, unknown> => isRecord(part) && part.type === "output_text";

/** A response object whose assistant text is `text`: all of it in the first text part, the other text parts dropped. */
function withText(response: unknown, text: string): unknown {
  if (!isRecord(response) || !Array.isArray(response.output)) return response;
  let placed = false;
  const output = response.output.map((item) => {
    if (!isRecord(item) || item.type !== "message" || !Array.isArray(item.content)) return item;
    return { ...item, content: itemContent(item.content) };
  });
  function itemContent(content: unknown[]): unknown[] {
    return content.flatMap((part) => {
      if (!isText(part)) return [part];
      if (placed) return [];
      placed = true;
      return [{ ...part, text }];
    });
  }
  return { ...response, output };
}

function editedEvents(events: NonNullable<RecordedResponse["events"]>, text: string): RecordedResponse["events"] {
  /** The content part (item and index) that carries the text: the first one a delta names. */
  let part: string | undefined;
  let deltaGiven = false;
  const partOf = (d: Record<string, unknown>) => `${String(d.item_id)}|${String(d.content_index)}`;
  return events.map((event) => {
    const d = event.data;
    if (!isRecord(d)) return event;
    switch (d.type) {
      case "response.output_text.delta": {
        part ??= partOf(d);
        const delta = partOf(d) === part && !deltaGiven ? text : "";
        if (partOf(d) === part) deltaGiven = true;
        return { ...event, data: { ...d, delta } };
      }
      case "response.output_text.done":
        return { ...event, data: { ...d, text: partOf(d) === (part ?? partOf(d)) ? text : "" } };
      case "response.content_part.done":
        return isText(d.part) ? { ...event, data: { ...d, part: { ...d.part, text: partOf(d) === (part ?? partOf(d)) ? text : "" } } } : event;
      case "response.output_item.done":
        return { ...event, data: { ...d, item: (withText({ output: [d.item] }, text) as { output: unknown[] }).output[0] } };
      case "response.completed":
        return { ...event, data: { ...d, response: withText(d.response, text) } };
      default:
        return event;
    }
  });
}

/** The interaction as its rule now says it, or itself when the rule's text is the recorded one (or there is no rule). */
export function applyRuleEdit(interaction: Interaction, recording: Recording): Interaction {
  if (!interaction.rule) return interaction;
  const rule = recording.model_script?.rules.find((r) => r.name === interaction.rule);
  const text = rule?.answer.text;
  const recorded = finalResponseOf(interaction.response);
  if (text === undefined || !recorded || outputTextOf(recorded) === text) return interaction;
  const { response } = interaction;
  const edited: RecordedResponse = response.events
    ? { ...response, events: editedEvents(response.events, text) }
    : { ...response, body: withText(response.body, text) };
  return { ...interaction, response: edited };
}
