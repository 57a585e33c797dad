import type { StoredResponse } from "../gateway/index.js";
import { sessionIdOf } from "../gateway/session-key.js";
import { usageOf } from "../gateway/wire.js";
import type { TurnEvent } from "./hub.js";
import { redactText } from "./redact.js";

/** Characters of each text an event carries; the console API gives whole turns. */
export const TEXT_PREVIEW = 2000;

export function turnEvent(r: StoredResponse): TurnEvent {
  return {
    instance_id: r.instance_id,
    session: sessionIdOf(r.session),
    id: r.id,
    previous_response_id: r.parent_id,
    model: r.model,
    created_at: r.created_at,
    input_text: redactText(r.input_text.slice(0, TEXT_PREVIEW)),
    output_text: redactText(r.output_text.slice(0, TEXT_PREVIEW)),
    truncated: r.input_text.length > TEXT_PREVIEW || r.output_text.length > TEXT_PREVIEW,
    usage: usageOf(r.input_text, r.output_text),
    ...(r.answer ? { answer: true as const } : {}),
  };
}
