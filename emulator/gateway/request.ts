import type { GatewayError } from "./types.js";

/** What the gateway needs from a `POST /v1/responses` body; other fields are ignored. */
export interface ResponsesRequest {
  model: string;
  /** The user text of this turn: every user text part, newline-joined. */
  userText: string;
  previousResponseId: string | null;
  instructions: string | null;
  stream: boolean;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: GatewayError };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const typeName = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`);

export const invalid = (code: string, param: string | null, message: string, status = 400): GatewayError => ({
  status,
  type: "invalid_request_error",
  code,
  param,
  message,
});

const wrongType = (param: string, expected: string, got: unknown): GatewayError =>
  invalid("invalid_type", param, `Invalid type for '${param}': expected ${expected}, but got ${typeName(got)} instead.`);

const missing = (param: string): GatewayError => invalid("missing_required_parameter", param, `Missing required parameter: '${param}'.`);

/**
 * Pulls the user text out of `input`: a string, or an array of input items.
 * Items are the easy form `{role, content: string}` or the full
 * `{type: "message", role, content: [{type: "input_text", text}]}`; parts that
 * are not text (images, files) and items of other types (tool outputs...) are
 * accepted and ignored, so richer clients still work.
 */
function userTextOf(input: unknown): Parsed<string> {
  if (typeof input === "string") return { ok: true, value: input };
  if (!Array.isArray(input)) {
    return { ok: false, error: wrongType("input", "a string or an array of input items", input) };
  }
  const texts: string[] = [];
  for (let i = 0; i < input.length; i++) {
    const item: unknown = input[i];
    const at = `input[${i}]`;
    if (!isRecord(item)) return { ok: false, error: wrongType(at, "an object", item) };
    const { type, role, content } = item;
    if (type !== undefined && typeof type !== "string") {
      return { ok: false, error: wrongType(`${at}.type`, "a string", type) };
    }
    if (type !== undefined && type !== "message") continue;
    if (typeof role !== "string") {
      return { ok: false, error: role === undefined ? missing(`${at}.role`) : wrongType(`${at}.role`, "a string", role) };
    }
    if (typeof content === "string") {
      if (role === "user") texts.push(content);
      continue;
    }
    if (!Array.isArray(content)) {
      return {
        ok: false,
        error: content === undefined ? missing(`${at}.content`) : wrongType(`${at}.content`, "a string or an array of content parts", content),
      };
    }
    for (let j = 0; j < content.length; j++) {
      const part: unknown = content[j];
      const partAt = `${at}.content[${j}]`;
      if (!isRecord(part)) return { ok: false, error: wrongType(partAt, "an object", part) };
      if (typeof part.type !== "string") {
        return { ok: false, error: part.type === undefined ? missing(`${partAt}.type`) : wrongType(`${partAt}.type`, "a string", part.type) };
      }
      if (part.type !== "input_text" && part.type !== "output_text" && part.type !== "text") continue;
      if (typeof part.text !== "string") return { ok: false, error: wrongType(`${partAt}.text`, "a string", part.text) };
      if (role === "user") texts.push(part.text);
    }
  }
  return { ok: true, value: texts.join("\n") };
}

export function parseResponsesRequest(raw: Buffer): Parsed<ResponsesRequest> {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch {
    return {
      ok: false,
      error: invalid("invalid_json", null, "We could not parse the JSON body of your request. The body must be a JSON object."),
    };
  }
  if (!isRecord(body)) return { ok: false, error: invalid("invalid_json", null, `The request body must be a JSON object, not ${typeName(body)}.`) };

  const { model, input, previous_response_id, instructions, stream } = body;
  if (model === undefined) return { ok: false, error: missing("model") };
  if (typeof model !== "string") return { ok: false, error: wrongType("model", "a string", model) };
  if (model.length === 0) return { ok: false, error: invalid("invalid_value", "model", "Invalid value for 'model': expected a non-empty string.") };
  if (input === undefined) return { ok: false, error: missing("input") };
  const text = userTextOf(input);
  if (!text.ok) return text;
  if (previous_response_id !== undefined && previous_response_id !== null && typeof previous_response_id !== "string") {
    return { ok: false, error: wrongType("previous_response_id", "a string", previous_response_id) };
  }
  if (instructions !== undefined && instructions !== null && typeof instructions !== "string") {
    return { ok: false, error: wrongType("instructions", "a string", instructions) };
  }
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") {
    return { ok: false, error: wrongType("stream", "a boolean", stream) };
  }
  return {
    ok: true,
    value: {
      model,
      userText: text.value,
      // An empty id means "none" to clients that always send the field.
      previousResponseId: typeof previous_response_id === "string" && previous_response_id !== "" ? previous_response_id : null,
      instructions: typeof instructions === "string" ? instructions : null,
      stream: stream === true,
    },
  };
}
