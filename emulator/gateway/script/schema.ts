/**
 * A model script, as a person writes it (docs/api-contract.md, "Scripting the
 * model"): a list of rules, each a match on the request and the answer the
 * fake model gives when it matches. Every object is strict, so a misspelt
 * field is refused at load rather than silently ignored.
 */
import { z } from "zod";
import { mismatch, unsupportedIn } from "./json-schema.js";

const compiles = (source: string, flags = ""): boolean => {
  try {
    new RegExp(source, flags);
    return true;
  } catch {
    return false;
  }
};

export const ScriptMatch = z
  .strictObject({
    /** The newest user input, exactly. */
    input: z.string().optional(),
    /** The newest user input contains this text. */
    contains: z.string().optional(),
    /** The newest user input matches this regular expression (JavaScript syntax). */
    regex: z.string().optional(),
    /** Flags for `regex`, e.g. `i`. */
    flags: z
      .string()
      .regex(/^[dgimsuy]*$/, "Flags are letters of dgimsuy")
      .optional(),
    /** The session the request was sent in (`main` on the default route). */
    session: z.string().optional(),
    /** Whether the request sent `tools`. */
    tools: z.boolean().optional(),
    /** Whether the request sent a JSON `text.format`. */
    format: z.boolean().optional(),
    /** The request's `instructions` contain this text. */
    instructions: z.string().optional(),
    /** The turn's number in its conversation, from 1. */
    turn: z.number().int().min(1).optional(),
    /** The input carries a `function_call_output`: for this `call_id`, or (`true`) for any call. */
    function_call_output: z.union([z.string().min(1), z.literal(true)]).optional(),
  })
  .superRefine((match, ctx) => {
    if (match.regex !== undefined && !compiles(match.regex, match.flags)) {
      ctx.addIssue({ code: "custom", path: ["regex"], message: `Not a valid regular expression: /${match.regex}/${match.flags ?? ""}` });
    }
    if (match.flags !== undefined && match.regex === undefined) ctx.addIssue({ code: "custom", path: ["flags"], message: "`flags` needs `regex`" });
  });

export const ScriptToolCall = z.strictObject({
  name: z.string().min(1),
  /** An object (sent as its JSON) or the JSON text itself. */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).default({}),
  /** Default: `call_` and random hex (deterministic with a seed). */
  call_id: z.string().min(1).optional(),
});

export const ScriptError = z
  .strictObject({
    /** HTTP status, 400-599 (a 5xx reaches API callers as 502, like any gateway 5xx). */
    status: z.number().int().min(400).max(599),
    /** OpenAI error `type`; default `invalid_request_error` below 500, `server_error` from 500, `rate_limit_error` for 429. */
    type: z.string().min(1).optional(),
    code: z.string().nullable().optional(),
    param: z.string().nullable().optional(),
    message: z.string().optional(),
    /** Seconds, sent as `retry-after` (and `retry-after-ms`). */
    retry_after: z.number().min(0).max(86_400).optional(),
    /**
     * Keep answering this error from the rule's first firing until `retry_after` seconds have
     * passed on the emulator's clock, then step aside for good (a rate limit that lifts).
     */
    hold: z.boolean().optional(),
  })
  .refine((error) => !error.hold || error.retry_after !== undefined, { message: "`hold` needs `retry_after`", path: ["hold"] });

export const ScriptFailure = z.strictObject({
  code: z.string().default("server_error"),
  message: z.string().default("The model failed to answer."),
  /** `response.failed` (default) or a bare `error` event when streamed. */
  event: z.enum(["response.failed", "error"]).default("response.failed"),
});

export const ScriptAnswer = z
  .strictObject({
    /** The assistant's text. */
    text: z.string().optional(),
    /** Function calls, in order (text, if any, comes before them). */
    tool_calls: z.array(ScriptToolCall).min(1).optional(),
    /** A structured output: sent as the message's JSON text; checked against the request's `text.format` schema. */
    output: z.unknown().optional(),
    /** The JSON Schema `output` claims to fit (checked at load). */
    schema: z.record(z.string(), z.unknown()).optional(),
    /** A refusal instead of text. */
    refusal: z.string().optional(),
    /** A reasoning summary, sent as a `reasoning` item before the rest. */
    reasoning: z.string().optional(),
    /** Cut the text at the request's `max_output_tokens` (4 characters a token): status `incomplete`. */
    incomplete: z.boolean().optional(),
    /** An HTTP error instead of a response. */
    error: ScriptError.optional(),
    /** A response that fails after it started (`status: failed`). */
    failed: ScriptFailure.optional(),
    /** Reported usage; default ceil(characters / 4) of input and output. */
    usage: z.strictObject({ input_tokens: z.number().int().min(0), output_tokens: z.number().int().min(0) }).optional(),
    /** Wait this long (emulator clock) before answering. */
    latency_ms: z.number().int().min(0).max(600_000).optional(),
    /** Streamed: spread the deltas evenly over this many ms (emulator clock). */
    stream_ms: z.number().int().min(0).max(120_000).optional(),
  })
  .superRefine((answer, ctx) => {
    const kinds = (["text", "tool_calls", "output", "refusal", "error", "failed"] as const).filter((k) => answer[k] !== undefined);
    const alone = kinds.filter((k) => k !== "text" && k !== "tool_calls");
    if (kinds.length === 0 && answer.reasoning === undefined) {
      ctx.addIssue({ code: "custom", path: [], message: "An answer needs one of text, tool_calls, output, refusal, reasoning, error, failed" });
    }
    if (alone.length > 1 || (alone.length === 1 && kinds.length > 1)) {
      ctx.addIssue({ code: "custom", path: [alone[0]!], message: `'${alone[0]}' cannot be combined with ${kinds.filter((k) => k !== alone[0]).join(", ")}` });
    }
    if (answer.schema !== undefined) {
      const unsupported = unsupportedIn(answer.schema);
      if (unsupported) ctx.addIssue({ code: "custom", path: ["schema"], message: `Unsupported schema: ${unsupported}` });
      else if (answer.output === undefined) ctx.addIssue({ code: "custom", path: ["schema"], message: "`schema` needs `output`" });
      else {
        const problem = mismatch(answer.schema, answer.output);
        if (problem) ctx.addIssue({ code: "custom", path: ["output"], message: `Does not fit its schema: ${problem}` });
      }
    }
  });

export const ScriptRule = z.strictObject({
  /** Shown in the request log and the console; default `rule N` (from 1). */
  name: z.string().min(1).max(200).optional(),
  /** Every field given must hold; an empty match matches every request. */
  match: ScriptMatch.default({}),
  answer: ScriptAnswer,
  /** Fire at most this many times, then step aside (default: no limit). */
  times: z.number().int().min(1).optional(),
});

export const ModelScript = z.strictObject({
  $schema: z.string().optional(),
  description: z.string().optional(),
  /** Tried in order; the first that matches answers. */
  rules: z.array(ScriptRule),
});

export type ScriptMatch = z.output<typeof ScriptMatch>;
export type ScriptAnswer = z.output<typeof ScriptAnswer>;
export type ScriptRule = z.output<typeof ScriptRule>;
export type ModelScript = z.output<typeof ModelScript>;
/** A script as a caller may hand it over (defaults not yet applied). */
export type ModelScriptInput = z.input<typeof ModelScript>;
