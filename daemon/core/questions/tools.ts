/**
 * The tools the bridge offers an agent for buttons in the chat (docs/bridge.md,
 * "Buttons"), and the pure steps around them: the declarations sent with a
 * responses call, the calls read from an answer, a call's arguments as a
 * question, and a person's reply read as the answer. No I/O here.
 */
import { z } from "zod";
import type { ButtonTool, OpenQuestion } from "../../vocabulary/records.js";

export const CHOICE_TOOL = "ask_choice";
export const CONFIRM_TOOL = "ask_confirmation";
/** How many options a choice may have. */
export const OPTIONS = { min: 2, max: 10 } as const;
/** The two answers of a confirmation, in button order. */
export const CONFIRM_OPTIONS = ["Approve", "Deny"] as const;

const TOOL_OF: Record<ButtonTool, string> = { choice: CHOICE_TOOL, confirm: CONFIRM_TOOL };

/** A function tool declaration as the Responses API takes it. */
export interface FunctionToolDeclaration {
  type: "function";
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict: boolean;
}

const DECLARATIONS: Record<ButtonTool, FunctionToolDeclaration> = {
  choice: {
    type: "function",
    name: CHOICE_TOOL,
    description:
      "Ask the person in the chat to choose one of a few options (shown as buttons). Their choice comes back as this call's output; no answer in time comes back as an output saying so.",
    parameters: {
      type: "object",
      properties: {
        question: { type: "string", description: "The question, as the person will read it." },
        options: { type: "array", items: { type: "string" }, minItems: OPTIONS.min, maxItems: OPTIONS.max, description: "The options, 2 to 10, short." },
        allow_text: { type: "boolean", description: "Whether the person may type an answer of their own instead." },
      },
      required: ["question", "options", "allow_text"],
      additionalProperties: false,
    },
    strict: true,
  },
  confirm: {
    type: "function",
    name: CONFIRM_TOOL,
    description:
      "Ask the person in the chat to approve or deny an action before you take it. The output is `approved` or `denied` (or says there was no answer).",
    parameters: {
      type: "object",
      properties: { summary: { type: "string", description: "What will be done, as the person will read it." } },
      required: ["summary"],
      additionalProperties: false,
    },
    strict: true,
  },
};

/** The declarations for a route's enabled tools, in a fixed order; empty when none. */
export function toolDeclarations(tools: readonly ButtonTool[]): FunctionToolDeclaration[] {
  return (["choice", "confirm"] as const).filter((t) => tools.includes(t)).map((t) => DECLARATIONS[t]);
}

/** One `function_call` item of an answer. */
export interface FunctionCall {
  callId: string;
  name: string;
  arguments: string;
}

const FunctionCallItem = z.looseObject({ type: z.literal("function_call"), call_id: z.string().min(1), name: z.string(), arguments: z.string() });
// Built once: a zod schema made per call was compiled per call too, 7% of the relay's CPU per turn.
const WithOutput = z.looseObject({ output: z.array(z.unknown()) });

/** The answer's `function_call` items, in order (malformed items are skipped). */
export function functionCallsOf(response: unknown): FunctionCall[] {
  const output = WithOutput.safeParse(response);
  if (!output.success) return [];
  const calls: FunctionCall[] = [];
  for (const item of output.data.output) {
    const call = FunctionCallItem.safeParse(item);
    if (call.success) calls.push({ callId: call.data.call_id, name: call.data.name, arguments: call.data.arguments });
  }
  return calls;
}

const ChoiceArgs = z.object({
  question: z.string().trim().min(1).max(2000),
  options: z.array(z.string().trim().min(1).max(200)).min(OPTIONS.min).max(OPTIONS.max),
  allow_text: z.boolean().optional(),
});
const ConfirmArgs = z.object({ summary: z.string().trim().min(1).max(2000) });

/** What the question asked, without where and when (filled in by the caller). */
export type AskedQuestion = Pick<OpenQuestion, "callId" | "tool" | "text" | "options" | "allowText">;

/**
 * A call to one of the offered tools as a question; otherwise the error output
 * the call gets at once (an unknown tool, one not offered here, bad arguments).
 */
export function questionOf(call: FunctionCall, offered: readonly ButtonTool[]): { ok: true; question: AskedQuestion } | { ok: false; output: string } {
  const tool = (Object.keys(TOOL_OF) as ButtonTool[]).find((t) => TOOL_OF[t] === call.name);
  if (!tool || !offered.includes(tool)) return { ok: false, output: `Error: the tool ${JSON.stringify(call.name)} is not available here.` };
  let args: unknown;
  try {
    args = JSON.parse(call.arguments);
  } catch {
    return { ok: false, output: `Error: the arguments of ${call.name} are not valid JSON.` };
  }
  if (tool === "confirm") {
    const parsed = ConfirmArgs.safeParse(args);
    if (!parsed.success) return { ok: false, output: `Error: ${call.name} needs {"summary": string}.` };
    return { ok: true, question: { callId: call.callId, tool, text: parsed.data.summary, options: [...CONFIRM_OPTIONS], allowText: false } };
  }
  const parsed = ChoiceArgs.safeParse(args);
  if (!parsed.success) return { ok: false, output: `Error: ${call.name} needs {"question": string, "options": 2 to 10 strings, "allow_text": boolean}.` };
  const { question, options, allow_text } = parsed.data;
  return { ok: true, question: { callId: call.callId, tool, text: question, options, allowText: allow_text ?? false } };
}

/** The question as text (platforms without buttons, the terminal): the question, its numbered options, how to answer. */
export function questionText(q: Pick<OpenQuestion, "text" | "options" | "allowText">): string {
  const lines = [q.text, ...q.options.map((o, i) => `${i + 1}. ${o}`)];
  lines.push(q.allowText ? "Reply with a number, or write your own answer." : "Reply with a number.");
  return lines.join("\n");
}

/** A reply to an open question: the option picked (by number or by its text), typed text where allowed, or not an answer. */
export type ReadAnswer = { kind: "option"; index: number } | { kind: "text"; text: string } | { kind: "none" };

export function readAnswer(q: Pick<OpenQuestion, "options" | "allowText">, reply: string): ReadAnswer {
  const text = reply.trim();
  if (/^\d{1,2}$/.test(text)) {
    const n = Number(text);
    if (n >= 1 && n <= q.options.length) return { kind: "option", index: n - 1 };
  }
  const folded = text.toLowerCase();
  const index = q.options.findIndex((o) => o.trim().toLowerCase() === folded);
  if (index >= 0) return { kind: "option", index };
  return q.allowText && text ? { kind: "text", text } : { kind: "none" };
}

/** The call's output for an answer: the option (a confirmation: approved / denied), or the typed text. */
export function answerOutput(q: Pick<OpenQuestion, "tool" | "options">, answer: Exclude<ReadAnswer, { kind: "none" }>): string {
  if (answer.kind === "text") return answer.text;
  if (q.tool === "confirm") return answer.index === 0 ? "approved" : "denied";
  return q.options[answer.index] ?? "";
}

/** Outputs for a question closed without an answer. */
export const closedOutput = {
  expired: "No answer: the person did not answer in time, and the question was closed.",
  stopped: "No answer: the person stopped the question (/stop).",
  wroteInstead: "No answer: the person wrote a message instead of choosing (it follows).",
} as const;
