import type { GatewayError } from "./types.js";

/** What goes on the wire, in the shapes of the OpenAI Responses API. */

export interface OutputText {
  type: "output_text";
  text: string;
  annotations: never[];
}

export interface OutputMessage {
  type: "message";
  id: string;
  status: "in_progress" | "completed";
  role: "assistant";
  content: OutputText[];
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: "in_progress" | "completed";
  model: string;
  previous_response_id: string | null;
  instructions: string | null;
  output: OutputMessage[];
  usage: Usage | null;
}

export interface Turn {
  id: string;
  messageId: string;
  createdAt: number;
  model: string;
  parentId: string | null;
  instructions: string | null;
  inputText: string;
  text: string;
}

/** Characters as code points, counted without copying a possibly megabyte-long string. */
export function charCount(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xdc00 && unit <= 0xdfff && i > 0) {
      const previous = text.charCodeAt(i - 1);
      if (previous >= 0xd800 && previous <= 0xdbff) count--;
    }
  }
  return count;
}

export const tokens = (text: string): number => Math.ceil(charCount(text) / 4);

const outputText = (text: string): OutputText => ({ type: "output_text", text, annotations: [] });

const message = (turn: Turn): OutputMessage => ({
  type: "message",
  id: turn.messageId,
  status: "completed",
  role: "assistant",
  content: [outputText(turn.text)],
});

/** The usage the fake model reports for an input and its answer (what every view of a turn shows). */
export function usageOf(inputText: string, outputText: string): Usage {
  const input = tokens(inputText);
  const output = tokens(outputText);
  return { input_tokens: input, output_tokens: output, total_tokens: input + output };
}

export function completedResponse(turn: Turn): ResponseObject {
  return {
    id: turn.id,
    object: "response",
    created_at: turn.createdAt,
    status: "completed",
    model: turn.model,
    previous_response_id: turn.parentId,
    instructions: turn.instructions,
    output: [message(turn)],
    usage: usageOf(turn.inputText, turn.text),
  };
}

export const errorBody = (error: GatewayError): string =>
  JSON.stringify({ error: { type: error.type, code: error.code, param: error.param, message: error.message } });

/** Delta size: ~64 characters, larger for huge replies so a stream stays a few thousand frames. */
export const deltaSize = (length: number): number => Math.max(64, Math.ceil(length / 4096));

/** Splits text into pieces of about `size` units, never between the halves of a surrogate pair. */
export function* chunks(text: string, size: number): Generator<string> {
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + size, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
    yield text.slice(start, end);
    start = end;
  }
}

/** One server-sent event, serialized, with its type so the sender can pace deltas. */
export interface Frame {
  type: string;
  text: string;
}

/**
 * The server-sent events of a streamed response, in the order the Responses
 * API emits them for one text message, each `event: <type>` with a JSON
 * `data` line carrying `type` and a `sequence_number` from 0. `deltas` are the
 * pieces of the text, in order (they must add up to it).
 */
export function* streamFrames(turn: Turn, deltas: Iterable<string> = chunks(turn.text, deltaSize(turn.text.length))): Generator<Frame> {
  let sequence = 0;
  const frame = (type: string, fields: Record<string, unknown>): Frame => ({
    type,
    text: `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`,
  });
  const done = completedResponse(turn);
  const started: ResponseObject = { ...done, status: "in_progress", output: [], usage: null };
  const item = { item_id: turn.messageId, output_index: 0, content_index: 0 };

  yield frame("response.created", { response: started });
  yield frame("response.in_progress", { response: started });
  yield frame("response.output_item.added", {
    output_index: 0,
    item: { ...message(turn), status: "in_progress", content: [] },
  });
  yield frame("response.content_part.added", { ...item, part: outputText("") });
  for (const delta of deltas) {
    yield frame("response.output_text.delta", { ...item, delta, logprobs: [] });
  }
  yield frame("response.output_text.done", { ...item, text: turn.text, logprobs: [] });
  yield frame("response.content_part.done", { ...item, part: outputText(turn.text) });
  yield frame("response.output_item.done", { output_index: 0, item: message(turn) });
  yield frame("response.completed", { response: done });
}

/** Shortest gap between two paced deltas, ms: keeps a long fast stream to a few hundred timers a second. */
export const PACED_MIN_GAP_MS = 10;
/** Characters per paced delta when time allows: about a few tokens, as a model sends them. */
export const PACED_DELTA = 16;

/**
 * The deltas of a `!stream` reply: pieces of about 16 characters (larger when
 * a short duration would put them closer than 10 ms apart).
 */
export function pacedDeltas(text: string, ms: number): string[] {
  const byTime = Math.max(1, Math.floor(ms / PACED_MIN_GAP_MS) + 1);
  const size = Math.max(PACED_DELTA, Math.ceil(text.length / byTime));
  return [...chunks(text, size)];
}

/** When delta `index` of `count` is due, ms after the start: the first at once, the last at `ms`. */
export const deltaDueAt = (index: number, count: number, ms: number): number => (count <= 1 ? 0 : Math.round((index * ms) / (count - 1)));
