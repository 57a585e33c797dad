/**
 * Loading a model script: JSON with comments (a file, or a value already
 * parsed), checked whole before anything is used, so a script with one bad
 * rule is refused entirely and the one in force stays.
 */
import { readFile } from "node:fs/promises";
import { findNodeAtLocation, parseTree } from "jsonc-parser";
import type { z } from "zod";
import { readJsonc } from "../../../shared/jsonc.js";
import { pathAt } from "./json-schema.js";
import { ModelScript } from "./schema.js";

/** Why a script was refused: where (a JSON path, and the line when read from text) and what. */
export interface ScriptProblem {
  /** e.g. `$.rules[2].match.regex`. */
  path: string;
  /** The same place as keys and indexes, e.g. `["rules", 2, "match", "regex"]`. */
  at: (string | number)[];
  /** 1-based, when the script was read from text. */
  line?: number;
  message: string;
}

export type LoadedScript = { ok: true; script: ModelScript } | { ok: false; problems: ScriptProblem[] };

const jsonPath = (segments: readonly (string | number)[]): string => segments.reduce<string>((at, key) => pathAt(at, key), "$");

function problemsOf(error: z.ZodError, text?: string): ScriptProblem[] {
  const tree = text === undefined ? undefined : parseTree(text, [], { allowTrailingComma: true });
  return error.issues.slice(0, 10).map((issue) => {
    // An unknown key is reported on its object: name the key itself.
    const keys = issue.code === "unrecognized_keys" ? issue.keys : [];
    const at = [...issue.path, ...keys.slice(0, 1)].map((s) => (typeof s === "number" ? s : String(s)));
    const node = tree && findNodeAtLocation(tree, at);
    const line = node && text !== undefined ? text.slice(0, node.offset).split("\n").length : undefined;
    const message = keys.length ? `Unknown field '${keys[0]}'` : issue.message;
    return { path: jsonPath(at), at, ...(line !== undefined ? { line } : {}), message };
  });
}

/** Checks a script given as a value (`createEmulator({ modelScript })`, the control plane). */
export function parseScript(value: unknown, text?: string): LoadedScript {
  const parsed = ModelScript.safeParse(value);
  return parsed.success ? { ok: true, script: parsed.data } : { ok: false, problems: problemsOf(parsed.error, text) };
}

/** Reads and checks script text (JSON with comments and trailing commas). */
export function parseScriptText(text: string): LoadedScript {
  const { value, problems } = readJsonc(text);
  if (problems.length) return { ok: false, problems: problems.map((message) => ({ path: "$", at: [], message })) };
  return parseScript(value, text);
}

/** Reads a script file; a file that cannot be read is a problem like any other. */
export async function loadScriptFile(file: string, signal?: AbortSignal): Promise<LoadedScript> {
  let text: string;
  try {
    text = await readFile(file, { encoding: "utf8", signal });
  } catch (error) {
    return { ok: false, problems: [{ path: "$", at: [], message: `Cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}` }] };
  }
  return parseScriptText(text);
}

/** One line per problem, e.g. `$.rules[0].match.regex (line 4): Not a valid regular expression: /(/`. */
export const describeProblems = (problems: readonly ScriptProblem[]): string =>
  problems.map((p) => `${p.path}${p.line !== undefined ? ` (line ${p.line})` : ""}: ${p.message}`).join("\n");
