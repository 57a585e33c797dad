import type { GatewayError } from "./reply.js";

import { producedText, type Reply, replyText } from "./reply.js";
import type { AnswerItem } from "../store/schema.js";

/** What goes on the wire, in the shapes of the OpenAI Responses API. */

export interface OutputText {
  type: "output_text";
  text: string;
  annotations: never[];
}

type ItemStatus = "in_progress" | "completed" | "incomplete";

export type OutputItem =
  | { type: "message"; id: string; status: ItemStatus; role: "assistant"; content: (OutputText | { type: "refusal"; refusal: string })[] }
  | { type: "function_call"; id: string; call_id: string; name: string; arguments: string; status: ItemStatus }
  | { type: "reasoning"; id: string; summary: { type: "summary_text"; text: string }[] };

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: "in_progress" | "completed" | "incomplete" | "failed";
  model: string;
  previous_response_id: string | null;
  instructions: string | null;
  output: OutputItem[];
  usage: Usage | null;
  /** Only when the status is `incomplete` or `failed`, as the API sends them. */
  incomplete_details?: { reason: "max_output_tokens" };
  error?: { code: string; message: string };
  /** `{emulator_rule: <name>}` when a script rule answered. */
  metadata?: Record<string, string>;
}

export interface Turn {
  id: string;
  createdAt: number;
  model: string;
  parentId: string | null;
  instructions: string | null;
  inputText: string;
  reply: Reply;
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

/** An answer item as the API shows it, whole. */
function wireItem(item: AnswerItem, status: ItemStatus): OutputItem {
  switch (item.type) {
    case "message":
      return { type: "message", id: item.id, status, role: "assistant", content: [outputText(item.text)] };
    case "refusal":
      return { type: "message", id: item.id, status, role: "assistant", content: [{ type: "refusal", refusal: item.refusal }] };
    case "function_call":
      return { type: "function_call", id: item.id, call_id: item.call_id, name: item.name, arguments: item.arguments, status };
    case "reasoning":
      return { type: "reasoning", id: item.id, summary: [{ type: "summary_text", text: item.summary }] };
  }
}

/** An answer item as `response.output_item.added` shows it: nothing produced yet. */
function startedItem(item: AnswerItem): OutputItem {
  switch (item.type) {
    case "message":
    case "refusal":
      return { type: "message", id: item.id, status: "in_progress", role: "assistant", content: [] };
    case "function_call":
      return { type: "function_call", id: item.id, call_id: item.call_id, name: item.name, arguments: "", status: "in_progress" };
    case "reasoning":
      return { type: "reasoning", id: item.id, summary: [] };
  }
}

/** The usage the fake model reports for an input and its answer (what every view of a turn shows). */
export function usageOf(inputText: string, outputText: string): Usage {
  const input = tokens(inputText);
  const output = tokens(outputText);
  return { input_tokens: input, output_tokens: output, total_tokens: input + output };
}

/** The response as it ends: completed, incomplete or failed. */
export function finalResponse(turn: Turn): ResponseObject {
  const { reply } = turn;
  const itemStatus = reply.status === "incomplete" ? "incomplete" : "completed";
  const usage = reply.usage
    ? { ...reply.usage, total_tokens: reply.usage.input_tokens + reply.usage.output_tokens }
    : usageOf(turn.inputText, reply.plain ? replyText(reply.items) : producedText(reply.items));
  return {
    id: turn.id,
    object: "response",
    created_at: turn.createdAt,
    status: reply.status,
    model: turn.model,
    previous_response_id: turn.parentId,
    instructions: turn.instructions,
    output: reply.items.map((item) => wireItem(item, itemStatus)),
    usage,
    ...(reply.status === "incomplete" ? { incomplete_details: { reason: "max_output_tokens" as const } } : {}),
    ...(reply.failure ? { error: { code: reply.failure.code, message: reply.failure.message } } : {}),
    ...(reply.rule !== undefined ? { metadata: { emulator_rule: reply.rule } } : {}),
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

/** One server-sent event, serialized, with what the sender needs to pace and cut it. */
export interface Frame {
  type: string;
  text: string;
  /** A piece of produced text (`*.delta`): counted, paced, and where a reset fault cuts. */
  delta?: boolean;
  /** The event that closes a produced text (`*.done` after its deltas). */
  closesText?: boolean;
}

/** Splits one item's produced text into its deltas (they must add up to it). */
export type Splitter = (text: string) => Iterable<string>;

const defaultSplit: Splitter = (text) => chunks(text, deltaSize(text.length));

/**
 * The server-sent events of a streamed response, in the order the Responses
 * API emits them, each `event: <type>` with a JSON `data` line carrying `type`
 * and a `sequence_number` from 0: `response.created`, `response.in_progress`,
 * then per output item its `added`, its part and deltas and their `done`s,
 * and its `done`; then `response.completed` (or `.incomplete`, `.failed`, or
 * a bare `error` event).
 */
export function* streamFrames(turn: Turn, split: Splitter = defaultSplit): Generator<Frame> {
  let sequence = 0;
  const frame = (type: string, fields: Record<string, unknown>, mark: Pick<Frame, "delta" | "closesText"> = {}): Frame => ({
    type,
    text: `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`,
    ...mark,
  });
  const done = finalResponse(turn);
  const started: ResponseObject = {
    id: done.id,
    object: "response",
    created_at: done.created_at,
    status: "in_progress",
    model: done.model,
    previous_response_id: done.previous_response_id,
    instructions: done.instructions,
    output: [],
    usage: null,
  };
  yield frame("response.created", { response: started });
  yield frame("response.in_progress", { response: started });
  const failure = turn.reply.failure;
  if (failure?.event === "error") {
    yield frame("error", { code: failure.code, message: failure.message, param: null });
    return;
  }
  for (const [index, item] of turn.reply.items.entries()) {
    yield* itemFrames(item, index, done.output[index]!, split, frame);
  }
  const terminal = done.status === "completed" ? "response.completed" : done.status === "incomplete" ? "response.incomplete" : "response.failed";
  yield frame(terminal, { response: done });
}

type MakeFrame = (type: string, fields: Record<string, unknown>, mark?: Pick<Frame, "delta" | "closesText">) => Frame;

/** The events of one output item, from its `added` to its `done`. */
function* itemFrames(item: AnswerItem, index: number, whole: OutputItem, split: Splitter, frame: MakeFrame): Generator<Frame> {
  yield frame("response.output_item.added", { output_index: index, item: startedItem(item) });
  const at = { item_id: item.id, output_index: index };
  switch (item.type) {
    case "message": {
      const ref = { ...at, content_index: 0 };
      yield frame("response.content_part.added", { ...ref, part: outputText("") });
      for (const delta of split(item.text)) yield frame("response.output_text.delta", { ...ref, delta, logprobs: [] }, { delta: true });
      yield frame("response.output_text.done", { ...ref, text: item.text, logprobs: [] }, { closesText: true });
      yield frame("response.content_part.done", { ...ref, part: outputText(item.text) });
      break;
    }
    case "refusal": {
      const ref = { ...at, content_index: 0 };
      yield frame("response.content_part.added", { ...ref, part: { type: "refusal", refusal: "" } });
      for (const delta of split(item.refusal)) yield frame("response.refusal.delta", { ...ref, delta }, { delta: true });
      yield frame("response.refusal.done", { ...ref, refusal: item.refusal }, { closesText: true });
      yield frame("response.content_part.done", { ...ref, part: { type: "refusal", refusal: item.refusal } });
      break;
    }
    case "function_call":
      for (const delta of split(item.arguments)) yield frame("response.function_call_arguments.delta", { ...at, delta }, { delta: true });
      yield frame("response.function_call_arguments.done", { ...at, name: item.name, arguments: item.arguments }, { closesText: true });
      break;
    case "reasoning": {
      const ref = { ...at, summary_index: 0 };
      yield frame("response.reasoning_summary_part.added", { ...ref, part: { type: "summary_text", text: "" } });
      for (const delta of split(item.summary)) yield frame("response.reasoning_summary_text.delta", { ...ref, delta }, { delta: true });
      yield frame("response.reasoning_summary_text.done", { ...ref, text: item.summary }, { closesText: true });
      yield frame("response.reasoning_summary_part.done", { ...ref, part: { type: "summary_text", text: item.summary } });
      break;
    }
  }
  yield frame("response.output_item.done", { output_index: index, item: whole });
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
