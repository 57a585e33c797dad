/**
 * What the fake model answers for one turn, before it is put on the wire:
 * output items in order, a final status and how it is paced. The items are
 * also what a stored turn keeps (`answer`), so a scripted conversation reads
 * the same after a restart.
 */
import type { AnswerItem, AnswerRecord } from "../store/schema.js";

export interface Failure {
  code: string;
  message: string;
  /** How a streamed failure ends: `response.failed`, or a bare `error` event. */
  event: "response.failed" | "error";
}

export interface Reply {
  items: AnswerItem[];
  status: "completed" | "incomplete" | "failed";
  /** With `status: "failed"`. */
  failure?: Failure;
  /** Reported instead of the counted usage. */
  usage?: { input_tokens: number; output_tokens: number };
  /** The script rule that answered. */
  rule?: string;
  /** Waited (emulator clock) before answering. */
  latencyMs?: number;
  /** Streamed: deltas spread over this many ms. */
  streamMs?: number;
  /** The echo or a directive: stored as plain text only, as before scripts existed. */
  plain: boolean;
}

/** A turn's answer is either a reply or an HTTP error. */
/** An OpenAI-style error, as a value: the status and what goes in `{error: {...}}`. */
export interface GatewayError {
  status: number;
  /** `invalid_request_error`, `server_error`, `rate_limit_error`, or what a script names. */
  type: string;
  code: string | null;
  param: string | null;
  message: string;
  /** Seconds, sent as `retry-after` and `retry-after-ms`. */
  retryAfter?: number;
}

export type Answer = { ok: true; reply: Reply } | { ok: false; error: GatewayError };

/** The assistant's text, as `output_text` reads it: every message's text, in order. */
export const replyText = (items: readonly AnswerItem[]): string =>
  items
    .filter((i) => i.type === "message")
    .map((i) => i.text)
    .join("\n\n");

/** The text an item produces, the one its streamed deltas carry. */
export const itemText = (item: AnswerItem): string =>
  item.type === "message" ? item.text : item.type === "refusal" ? item.refusal : item.type === "reasoning" ? item.summary : item.arguments;

/** Every character the model "produced", for the counted usage. */
export const producedText = (items: readonly AnswerItem[]): string => items.map(itemText).join("");

/** The record a stored turn keeps, or undefined for a plain reply. */
export const recordOf = (reply: Reply): AnswerRecord | undefined =>
  reply.plain || reply.status === "failed"
    ? undefined
    : { ...(reply.rule !== undefined ? { rule: reply.rule } : {}), items: reply.items, status: reply.status };
