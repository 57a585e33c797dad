/**
 * A scripted answer made concrete for one request: output items with fresh
 * ids, the structured output checked against the request's own schema, the
 * text cut at `max_output_tokens` for an `incomplete` answer.
 */
import { invalid, type ResponsesRequest } from "../request.js";
import type { Answer, Reply } from "../reply.js";
import type { AnswerItem } from "../../store/schema.js";
import type { GatewayError } from "../reply.js";
import { mismatch } from "./json-schema.js";
import type { ActiveRule } from "./registry.js";
import type { ScriptAnswer } from "./schema.js";

/** Makes a fresh id with the prefix, e.g. `msg_3f...` (from the gateway's random source). */
export type NewId = (prefix: "msg" | "fc" | "rs" | "call") => string;

/** Characters a token stands for, as the fake model counts (usage, `max_output_tokens`). */
export const CHARS_PER_TOKEN = 4;

function errorOf(error: NonNullable<ScriptAnswer["error"]>, rule: string): GatewayError {
  const type = error.type ?? (error.status === 429 ? "rate_limit_error" : error.status < 500 ? "invalid_request_error" : "server_error");
  return {
    status: error.status,
    type,
    code: error.code === undefined ? (error.status === 429 ? "rate_limit_exceeded" : null) : error.code,
    param: error.param ?? null,
    message: error.message ?? `Scripted error from ${rule} (status ${error.status}).`,
    ...(error.retry_after !== undefined ? { retryAfter: error.retry_after } : {}),
  };
}

/** The structured output's text, or the error saying where it misses the request's schema. */
function structuredText(output: unknown, request: ResponsesRequest, rule: string): { ok: true; text: string } | { ok: false; error: GatewayError } {
  if (request.format?.type === "json_schema") {
    const problem = mismatch(request.format.schema, output);
    if (problem) {
      return {
        ok: false,
        error: invalid(
          "script_output_mismatch",
          "text.format.schema",
          `The scripted output of ${rule} does not fit the request's schema '${request.format.name}': ${problem}.`,
        ),
      };
    }
  }
  return { ok: true, text: JSON.stringify(output) };
}

/** Cuts text to the request's `max_output_tokens` (whole, when the request sets none). */
const cut = (text: string, maxTokens: number | null): string => (maxTokens === null ? text : text.slice(0, maxTokens * CHARS_PER_TOKEN));

/** What the scripted rule answers to this request. */
export function scriptedAnswer(active: ActiveRule, request: ResponsesRequest, newId: NewId): Answer {
  const answer = active.rule.answer;
  const rule = active.name;
  if (answer.error) return { ok: false, error: errorOf(answer.error, rule) };

  const items: AnswerItem[] = [];
  if (answer.reasoning !== undefined) items.push({ type: "reasoning", id: newId("rs"), summary: answer.reasoning });
  if (answer.refusal !== undefined) items.push({ type: "refusal", id: newId("msg"), refusal: answer.refusal });
  if (answer.output !== undefined) {
    const text = structuredText(answer.output, request, rule);
    if (!text.ok) return text;
    items.push({ type: "message", id: newId("msg"), text: text.text });
  }
  if (answer.text !== undefined) {
    items.push({ type: "message", id: newId("msg"), text: answer.incomplete ? cut(answer.text, request.maxOutputTokens) : answer.text });
  }
  for (const call of answer.tool_calls ?? []) {
    items.push({
      type: "function_call",
      id: newId("fc"),
      call_id: call.call_id ?? newId("call"),
      name: call.name,
      arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
    });
  }
  const reply: Reply = {
    items,
    status: answer.failed ? "failed" : answer.incomplete ? "incomplete" : "completed",
    rule,
    plain: false,
    ...(answer.failed ? { failure: answer.failed } : {}),
    ...(answer.usage ? { usage: answer.usage } : {}),
    ...(answer.latency_ms !== undefined ? { latencyMs: answer.latency_ms } : {}),
    ...(answer.stream_ms !== undefined ? { streamMs: answer.stream_ms } : {}),
  };
  return { ok: true, reply };
}
