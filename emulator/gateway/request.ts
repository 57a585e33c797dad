import type { GatewayError } from "./reply.js";

/** What the gateway needs from a `POST /v1/responses` body; other fields are ignored. */
export interface ResponsesRequest {
  model: string;
  /** The user text of this turn: every user text part, newline-joined. */
  userText: string;
  previousResponseId: string | null;
  instructions: string | null;
  stream: boolean;
  /** The request's function tools, in order (other tool types are ignored). */
  tools: FunctionTool[];
  /** `text.format` when it asks for JSON; null for plain text. */
  format: TextFormat | null;
  /** The `function_call_output` items of `input`, in order. */
  toolOutputs: ToolOutput[];
  maxOutputTokens: number | null;
}

export interface FunctionTool {
  name: string;
  parameters: unknown;
}

export type TextFormat = { type: "json_schema"; name: string; schema: unknown } | { type: "json_object" };

export interface ToolOutput {
  callId: string;
  output: string;
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

  const { model, input, previous_response_id, instructions, stream, max_output_tokens } = body;
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
  if (max_output_tokens !== undefined && max_output_tokens !== null && !(Number.isInteger(max_output_tokens) && (max_output_tokens as number) >= 1)) {
    return { ok: false, error: invalid("invalid_value", "max_output_tokens", "Invalid value for 'max_output_tokens': expected a positive integer.") };
  }
  const tools = toolsOf(body.tools);
  if (!tools.ok) return tools;
  const format = formatOf(body.text);
  if (!format.ok) return format;
  return {
    ok: true,
    value: {
      model,
      userText: text.value,
      // An empty id means "none" to clients that always send the field.
      previousResponseId: typeof previous_response_id === "string" && previous_response_id !== "" ? previous_response_id : null,
      instructions: typeof instructions === "string" ? instructions : null,
      stream: stream === true,
      tools: tools.value,
      format: format.value,
      toolOutputs: Array.isArray(input) ? toolOutputsOf(input) : [],
      maxOutputTokens: typeof max_output_tokens === "number" ? max_output_tokens : null,
    },
  };
}

/** Function tools, `{type: "function", name, parameters}`; tools of other types pass unread. */
function toolsOf(tools: unknown): Parsed<FunctionTool[]> {
  if (tools === undefined || tools === null) return { ok: true, value: [] };
  if (!Array.isArray(tools)) return { ok: false, error: wrongType("tools", "an array", tools) };
  const found: FunctionTool[] = [];
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i];
    if (!isRecord(tool)) return { ok: false, error: wrongType(`tools[${i}]`, "an object", tool) };
    if (tool.type !== "function") continue;
    if (typeof tool.name !== "string" || tool.name === "") {
      return { ok: false, error: tool.name === undefined ? missing(`tools[${i}].name`) : wrongType(`tools[${i}].name`, "a non-empty string", tool.name) };
    }
    found.push({ name: tool.name, parameters: tool.parameters ?? null });
  }
  return { ok: true, value: found };
}

/** `text.format`: `json_schema` (with its schema) or `json_object`; `text` and absent are plain text. */
function formatOf(text: unknown): Parsed<TextFormat | null> {
  if (text === undefined || text === null) return { ok: true, value: null };
  if (!isRecord(text)) return { ok: false, error: wrongType("text", "an object", text) };
  const format = text.format;
  if (format === undefined || format === null) return { ok: true, value: null };
  if (!isRecord(format)) return { ok: false, error: wrongType("text.format", "an object", format) };
  if (format.type === "text") return { ok: true, value: null };
  if (format.type === "json_object") return { ok: true, value: { type: "json_object" } };
  if (format.type !== "json_schema") {
    return {
      ok: false,
      error: invalid(
        "invalid_value",
        "text.format.type",
        `Invalid value for 'text.format.type': '${String(format.type)}' is not one of text, json_object, json_schema.`,
      ),
    };
  }
  if (typeof format.name !== "string" || format.name === "") return { ok: false, error: missing("text.format.name") };
  if (!isRecord(format.schema))
    return { ok: false, error: format.schema === undefined ? missing("text.format.schema") : wrongType("text.format.schema", "an object", format.schema) };
  return { ok: true, value: { type: "json_schema", name: format.name, schema: format.schema } };
}

function toolOutputsOf(input: unknown[]): ToolOutput[] {
  const outputs: ToolOutput[] = [];
  for (const item of input) {
    if (isRecord(item) && item.type === "function_call_output" && typeof item.call_id === "string") {
      outputs.push({ callId: item.call_id, output: typeof item.output === "string" ? item.output : JSON.stringify(item.output ?? null) });
    }
  }
  return outputs;
}
