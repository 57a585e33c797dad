/**
 * Which part of the fake model answers a turn, decided before any waiting:
 * the first script rule that matches; else a directive (`!fail`, `!sleep`...);
 * else the default for tools, tool outputs or a JSON format; else the echo.
 */
import { defaultAnswer } from "./defaults.js";
import { CHOICE_TOOL, CONFIRM_TOOL, type Directive, failError, replyText as directiveText } from "./model.js";
import type { Parsed, ResponsesRequest } from "./request.js";
import type { Reply } from "./reply.js";
import { type NewId, scriptedAnswer } from "./script/answer.js";
import { firstMatch } from "./script/match.js";
import type { ActiveRule } from "./script/registry.js";
import type { GatewayError } from "./reply.js";

export type Plan =
  | { kind: "error"; error: GatewayError; rule?: ActiveRule }
  /** A reply made now (script or default); `rule` (here and on an error) is the rule that fired, to count. */
  | { kind: "reply"; reply: Reply; rule?: ActiveRule }
  /** The echo or a directive: its text is made once the turn's parent is settled. */
  | { kind: "echo"; directive: Directive };

export interface PlanInput {
  request: ResponsesRequest;
  directive: Parsed<Directive>;
  session: string;
  rules: readonly ActiveRule[];
  /** This turn's number in its conversation (walks the chain: only called when a rule asks). */
  turnNumber: () => number;
  newId: NewId;
}

export function planTurn(input: PlanInput): Plan {
  const { request, directive } = input;
  if (input.rules.length) {
    let turn: number | undefined;
    const rule = firstMatch(input.rules, {
      userText: request.userText,
      session: input.session,
      hasTools: request.tools.length > 0,
      hasFormat: request.format !== null,
      instructions: request.instructions,
      get turn() {
        turn ??= input.turnNumber();
        return turn;
      },
      toolOutputCallIds: request.toolOutputs.map((o) => o.callId),
    });
    if (rule) {
      const answer = scriptedAnswer(rule, request, input.newId);
      return answer.ok ? { kind: "reply", reply: answer.reply, rule } : { kind: "error", error: answer.error, rule };
    }
  }
  if (!directive.ok) return { kind: "error", error: directive.error };
  if (directive.value.kind === "fail") return { kind: "error", error: failError(directive.value.status) };
  const asked = askReply(directive.value, request, input.newId);
  if (asked) return { kind: "reply", reply: asked };
  if (directive.value.kind !== "plain") return { kind: "echo", directive: directive.value };
  const fallback = defaultAnswer(request, () => directiveText({ kind: "plain" }, request.userText, () => []), input.newId);
  if (!fallback) return { kind: "echo", directive: directive.value };
  return fallback.ok ? { kind: "reply", reply: fallback.reply } : { kind: "error", error: fallback.error };
}

/**
 * `!ask` and `!confirm` where the request offers the bridge's tool: a line of text, then the call
 * (as a model asks: a sentence beside the question). Without the tool, the echo asks in prose.
 */
function askReply(directive: Directive, request: ResponsesRequest, newId: NewId): Reply | null {
  const call =
    directive.kind === "ask"
      ? { name: CHOICE_TOOL, text: "I need a decision.", args: { question: directive.question, options: directive.options, allow_text: directive.allowText } }
      : directive.kind === "confirm"
        ? { name: CONFIRM_TOOL, text: "Please confirm.", args: { summary: directive.summary } }
        : null;
  if (!call || !request.tools.some((t) => t.name === call.name)) return null;
  return {
    items: [
      { type: "message", id: newId("msg"), text: call.text },
      { type: "function_call", id: newId("fc"), call_id: newId("call"), name: call.name, arguments: JSON.stringify(call.args) },
    ],
    status: "completed",
    plain: false,
  };
}
