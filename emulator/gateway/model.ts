import { invalid, type Parsed } from "./request.js";
import { safeBaseName } from "../../shared/util/names.js";
import { FILE_DIR, FILE_KINDS, type FileKind, kindOfName } from "./media.js";
import type { GatewayError } from "./reply.js";

/**
 * The deterministic fake model (docs/api-contract.md, "The fake model"). A turn's user text is
 * either plain (echoed back) or one of a few directives that let tests reach
 * every path of the daemon and the emulator without scripting.
 */
export type Directive =
  | { kind: "plain" }
  | { kind: "recall" }
  | { kind: "count" }
  | { kind: "long"; length: number }
  | { kind: "sleep"; ms: number }
  | { kind: "stream"; ms: number; length: number }
  | { kind: "fail"; status: number }
  | { kind: "file"; name: string; fileKind: FileKind }
  /** `!ask QUESTION | OPTION | OPTION [| *]`: a call to the bridge's choice tool (`*`: typed answers welcome too). */
  | { kind: "ask"; question: string; options: string[]; allowText: boolean }
  /** `!confirm SUMMARY`: a call to the bridge's confirmation tool. */
  | { kind: "confirm"; summary: string };

/**
 * The tools the bridge offers an agent for buttons in the chat (docs/bridge.md, "Buttons"): the
 * `!ask` and `!confirm` directives call them when the request offers them, so the terminal chat
 * and the platforms' fakes can show the whole round trip offline.
 */
export const CHOICE_TOOL = "ask_choice";
export const CONFIRM_TOOL = "ask_confirmation";
/** How many options a choice may have (as the bridge's tool declares). */
export const ASK_OPTIONS = { min: 2, max: 10 } as const;

export const LONG_MAX = 1_000_000;
export const SLEEP_MAX_MS = 600_000;
/** `!stream S`: at most this many seconds. */
export const STREAM_MAX_SECONDS = 120;
/** `!stream S` without N: about this many characters. */
export const STREAM_DEFAULT_LENGTH = 600;

const STREAM = /^!stream(?:\s+(\S+))?(?:\s+(\S+))?$/;

const DIRECTIVE = /^!(recall|count|long|sleep|fail)(?:\s+(\S+))?$/;

const FILE = /^!file\s+(\S+)(?:\s+(\S+))?$/;

const ASK = /^!ask(?:\s+([\s\S]*))?$/;
const CONFIRM = /^!confirm(?:\s+([\s\S]*))?$/;

function integerArg(name: string, arg: string | undefined, min: number, max: number): Parsed<number> {
  const value = arg !== undefined && /^\d{1,9}$/.test(arg) ? Number(arg) : NaN;
  if (Number.isInteger(value) && value >= min && value <= max) return { ok: true, value };
  return {
    ok: false,
    error: invalid("invalid_value", "input", `Directive !${name} needs an integer from ${min} to ${max}, got '${arg ?? ""}'.`),
  };
}

/** Reads a directive from the user text; anything that is not one is plain. */
export function parseDirective(userText: string): Parsed<Directive> {
  const stream = STREAM.exec(userText.trim());
  if (stream) return streamDirective(stream[1], stream[2]);
  const file = FILE.exec(userText.trim());
  if (file) return fileDirective(file[1]!, file[2]);
  const ask = ASK.exec(userText.trim());
  if (ask) return askDirective(ask[1] ?? "");
  const confirm = CONFIRM.exec(userText.trim());
  if (confirm) return confirmDirective(confirm[1] ?? "");
  const match = DIRECTIVE.exec(userText.trim());
  if (!match) return { ok: true, value: { kind: "plain" } };
  const [, name, arg] = match;
  switch (name) {
    // `!recall something` is not the directive, just text.
    case "recall":
      return { ok: true, value: arg === undefined ? { kind: "recall" } : { kind: "plain" } };
    case "count":
      return { ok: true, value: arg === undefined ? { kind: "count" } : { kind: "plain" } };
    case "long": {
      const n = integerArg(name, arg, 0, LONG_MAX);
      return n.ok ? { ok: true, value: { kind: "long", length: n.value } } : n;
    }
    case "sleep": {
      const ms = integerArg(name, arg, 0, SLEEP_MAX_MS);
      return ms.ok ? { ok: true, value: { kind: "sleep", ms: ms.value } } : ms;
    }
    default: {
      const status = integerArg("fail", arg, 400, 599);
      return status.ok ? { ok: true, value: { kind: "fail", status: status.value } } : status;
    }
  }
}

/** `!stream S [N]`: S seconds (decimals allowed, 0 to 120), N characters (default 600). */
function streamDirective(seconds: string | undefined, length: string | undefined): Parsed<Directive> {
  // At most three decimals: the pacing is in whole milliseconds.
  const s = seconds !== undefined && /^\d{1,3}(?:\.\d{1,3})?$/.test(seconds) ? Number(seconds) : NaN;
  if (!(s >= 0 && s <= STREAM_MAX_SECONDS)) {
    return {
      ok: false,
      error: invalid(
        "invalid_value",
        "input",
        `Directive !stream needs a number of seconds from 0 to ${STREAM_MAX_SECONDS} (at most 3 decimals), got '${seconds ?? ""}'.`,
      ),
    };
  }
  const n = length === undefined ? { ok: true as const, value: STREAM_DEFAULT_LENGTH } : integerArg("stream", length, 0, LONG_MAX);
  if (!n.ok) return n;
  return { ok: true, value: { kind: "stream", ms: Math.round(s * 1000), length: n.value } };
}

/** `!file NAME [KIND]`: NAME a plain file name, KIND png, pdf or txt (default: by NAME's extension). */
function fileDirective(name: string, kind: string | undefined): Parsed<Directive> {
  const safe = safeBaseName(name, { max: 100 });
  if (safe !== name || !/^[\w.-]+$/.test(name)) {
    return {
      ok: false,
      error: invalid("invalid_value", "input", `Directive !file needs a plain file name (letters, digits, . _ -), got '${name.slice(0, 100)}'.`),
    };
  }
  const fileKind = kind === undefined ? kindOfName(name) : FILE_KINDS.find((k) => k === kind.toLowerCase());
  if (fileKind === undefined) {
    return { ok: false, error: invalid("invalid_value", "input", `Directive !file needs a kind of ${FILE_KINDS.join(", ")}, got '${kind ?? ""}'.`) };
  }
  return { ok: true, value: { kind: "file", name, fileKind } };
}

/** `!ask QUESTION | A | B [| *]`: a question and 2 to 10 options, `*` last to welcome a typed answer. */
function askDirective(arg: string): Parsed<Directive> {
  const parts = arg.split("|").map((p) => p.trim());
  const allowText = parts.length > 1 && parts.at(-1) === "*";
  const [question = "", ...options] = allowText ? parts.slice(0, -1) : parts;
  if (!question || options.length < ASK_OPTIONS.min || options.length > ASK_OPTIONS.max || options.some((o) => !o)) {
    return {
      ok: false,
      error: invalid(
        "invalid_value",
        "input",
        `Directive !ask needs a question and ${ASK_OPTIONS.min} to ${ASK_OPTIONS.max} options, each after a '|' (and '| *' last to welcome a typed answer), got '${arg.slice(0, 100)}'.`,
      ),
    };
  }
  return { ok: true, value: { kind: "ask", question, options, allowText } };
}

/** `!confirm SUMMARY`: what the person approves or denies. */
function confirmDirective(summary: string): Parsed<Directive> {
  if (!summary.trim()) return { ok: false, error: invalid("invalid_value", "input", "Directive !confirm needs a summary of what to approve.") };
  return { ok: true, value: { kind: "confirm", summary: summary.trim() } };
}

/** The error a `!fail STATUS` turn answers with. */
export function failError(status: number): GatewayError {
  return {
    status,
    type: status < 500 ? "invalid_request_error" : "server_error",
    code: "simulated_failure",
    param: null,
    message: `Simulated failure requested by !fail ${status}.`,
  };
}

/**
 * The reply text for a turn. `earlierInputs` walks the conversation (the
 * parent chain), so it is only called by the directives that need history.
 */
export function replyText(directive: Directive, userText: string, earlierInputs: () => string[]): string {
  switch (directive.kind) {
    case "recall": {
      const inputs = earlierInputs();
      return inputs.length ? inputs.join("\n") : "(nothing yet)";
    }
    case "count":
      return String(earlierInputs().length);
    case "long":
      return longText(directive.length);
    case "sleep":
      return `slept ${directive.ms}`;
    case "stream":
      return streamText(directive.length);
    case "file":
      return `Here is ${directive.name}.\nMEDIA: ${FILE_DIR}/${directive.name}`;
    // Asked in prose where the request offers no such tool (a plan with the tool answers a call instead).
    case "ask":
      return `${directive.question}\n${directive.options.map((o, i) => `${i + 1}. ${o}`).join("\n")}`;
    case "confirm":
      return `${directive.summary}\nShall I go ahead? (yes or no)`;
    case "fail": // answered before a reply is made; kept total for the type checker
    case "plain":
      return `You said: ${userText}`;
  }
}

// Prose paragraphs, each longer than a tiny `!long` so that one stays plain text.
// ASCII only, so characters, UTF-16 units and code points all agree.
const PARAGRAPHS = [
  "The bridge keeps every conversation in order. Each message waits its turn in the queue of its instance, and the reply goes back to the chat it came from, once and only once. Nothing is dropped when the network stumbles; the work is simply tried again.",
  "Sessions keep people apart. Two friends writing to the same agent never see each other's context, because every chat carries its own session key, and every reply continues the chain that its own previous answer started.",
  "Long answers are split where a reader would split them: between paragraphs first, then between lines, and only as a last resort in the middle of a sentence. Code blocks stay whole when they fit, and are closed and reopened when they do not.",
  "The emulator answers like the hosted service, offline and fast. Its fake model is deterministic, so a test can say exactly what it expects to read, and a benchmark can run the same conversation a thousand times and compare the numbers.",
];
const PROSE_CYCLE = `${PARAGRAPHS.join("\n\n")}\n\n`;

const CODE_BLOCK = ["```ts", "export function fibonacci(n: number): number {", "  return n < 2 ? n : fibonacci(n - 1) + fibonacci(n - 2);", "}", "```"].join(
  "\n",
);

/** Exactly `length` characters of prose; never starts or ends with whitespace. */
function prose(length: number, cycle = PROSE_CYCLE): string {
  if (length <= 0) return "";
  const text = cycle.repeat(Math.ceil(length / cycle.length)).slice(0, length);
  const trimmed = text.trimEnd();
  // Keep the exact length: trailing blanks (a cut at a paragraph break) become dots.
  return trimmed + ".".repeat(text.length - trimmed.length);
}

const SEPARATOR = "\n\n";
/** The prose cycle from its second paragraph on, for the text after a `!stream` code block. */
const PROSE_FROM_SECOND = `${PARAGRAPHS.slice(1).concat(PARAGRAPHS[0]!).join("\n\n")}\n\n`;

/**
 * `!stream S N`: exactly N characters, like `!long N` but shaped like a chat
 * answer: an opening sentence, one fenced code block, then paragraphs.
 */
export function streamText(length: number): string {
  if (length < MIN_WITH_CODE) return prose(length);
  const rest = length - CODE_BLOCK.length - 2 * SEPARATOR.length;
  const first = PARAGRAPHS[0]!;
  // The opening: whole sentences of the first paragraph, up to a third of the room.
  const room = Math.min(Math.floor(rest / 3), first.length);
  const sentenceEnd = first.lastIndexOf(". ", room - 1);
  const before = sentenceEnd > 0 ? sentenceEnd + 1 : room;
  return prose(before) + SEPARATOR + CODE_BLOCK + SEPARATOR + prose(rest - before, PROSE_FROM_SECOND);
}

/** Below this a reply is plain prose: no room for a code block with text around it. */
const MIN_WITH_CODE = CODE_BLOCK.length + 2 * SEPARATOR.length + 2 * 40;

/**
 * `!long N`: exactly N characters, deterministic, paragraphs separated by
 * blank lines and one fenced code block after the first part of the prose.
 */
export function longText(length: number): string {
  if (length < MIN_WITH_CODE) return prose(length);
  const rest = length - CODE_BLOCK.length - 2 * SEPARATOR.length;
  const before = Math.min(Math.floor(rest / 2), PARAGRAPHS[0]!.length);
  return prose(before) + SEPARATOR + CODE_BLOCK + SEPARATOR + prose(rest - before);
}
