/**
 * The assistant's text in a response object: the `text` of every
 * `output_text` block of every assistant `message` item, in order, separated
 * by blank lines. Anything else (reasoning, tool calls, refusals) is not for
 * the chat. Tolerant of shapes the schema did not foresee: it never throws.
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

export function replyTextOf(response: unknown): string {
  if (!isObject(response) || !Array.isArray(response.output)) return "";
  const parts: string[] = [];
  for (const item of response.output) {
    if (!isObject(item) || item.type !== "message") continue;
    if (item.role !== undefined && item.role !== "assistant") continue;
    if (!Array.isArray(item.content)) continue;
    for (const block of item.content) {
      if (isObject(block) && block.type === "output_text" && typeof block.text === "string" && block.text) parts.push(block.text);
    }
  }
  return parts.join("\n\n");
}

/** The response id, when the body has one (used as the next `previous_response_id`). */
export function responseIdOf(response: unknown): string | undefined {
  return isObject(response) && typeof response.id === "string" && response.id ? response.id : undefined;
}
