import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { ActiveRule } from "./registry.js";
import type { ScriptMatch } from "./schema.js";

/** What a rule's match is checked against: one request, in its conversation. */
export interface MatchContext {
  /** The newest user input (every user text part of the request, newline-joined). */
  userText: string;
  session: string;
  hasTools: boolean;
  hasFormat: boolean;
  /** The request's `instructions`, or null. */
  instructions: string | null;
  /** This turn's number in its conversation, from 1. */
  turn: number;
  /** `call_id`s of the request's `function_call_output` items. */
  toolOutputCallIds: readonly string[];
}

/** Regular expressions compiled once per source (scripts are checked at load, so these compile). */
const compiled = new BoundedMap<string, RegExp>(1000);
function regexOf(source: string, flags = ""): RegExp {
  const key = `${flags}/${source}`;
  let re = compiled.get(key);
  if (!re) {
    // `g`/`y` would make `test` stateful between requests.
    re = new RegExp(source, flags.replace(/[gy]/g, ""));
    compiled.set(key, re);
  }
  return re;
}

/** True when every condition the match gives holds. */
export function matches(match: ScriptMatch, ctx: MatchContext): boolean {
  if (match.input !== undefined && ctx.userText !== match.input) return false;
  if (match.contains !== undefined && !ctx.userText.includes(match.contains)) return false;
  if (match.regex !== undefined && !regexOf(match.regex, match.flags).test(ctx.userText)) return false;
  if (match.session !== undefined && ctx.session !== match.session) return false;
  if (match.tools !== undefined && ctx.hasTools !== match.tools) return false;
  if (match.format !== undefined && ctx.hasFormat !== match.format) return false;
  if (match.instructions !== undefined && !(ctx.instructions ?? "").includes(match.instructions)) return false;
  if (match.turn !== undefined && ctx.turn !== match.turn) return false;
  if (match.function_call_output === true && ctx.toolOutputCallIds.length === 0) return false;
  if (typeof match.function_call_output === "string" && !ctx.toolOutputCallIds.includes(match.function_call_output)) return false;
  return true;
}

/** The first rule that matches, in order, or undefined. */
export const firstMatch = (rules: readonly ActiveRule[], ctx: MatchContext): ActiveRule | undefined => rules.find((a) => matches(a.rule.match, ctx));
