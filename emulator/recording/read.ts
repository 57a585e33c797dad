/**
 * Reading recordings back: parsed, never cast. A file that is not JSON or
 * does not fit the format is refused with its file and line, so a hand edit
 * gone wrong is found at once, not as a strange replay.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { findNodeAtLocation, parseTree } from "jsonc-parser";
import type { z } from "zod";
import { pathAt } from "../../shared/contract/schema-check.js";
import { Recording, RECORDING_SUFFIX } from "./format.js";

export interface RecordingProblem {
  file: string;
  /** 1-based; absent when the file could not be read at all. */
  line?: number;
  /** e.g. `$.interactions[2].response.status`. */
  path: string;
  message: string;
}

export type ReadRecording = { ok: true; recording: Recording } | { ok: false; problems: RecordingProblem[] };

export class RecordingError extends Error {
  constructor(readonly problems: RecordingProblem[]) {
    super(describeRecordingProblems(problems));
    this.name = "RecordingError";
  }
}

/** One line per problem: `FILE:LINE: $.path: message`. */
export const describeRecordingProblems = (problems: readonly RecordingProblem[]): string =>
  problems.map((p) => `${p.file}${p.line !== undefined ? `:${p.line}` : ""}: ${p.path === "$" ? "" : `${p.path}: `}${p.message}`).join("\n");

const lineAt = (text: string, offset: number): number => text.slice(0, offset).split("\n").length;

/** Each issue of a schema check, with the line of its place in `text`. */
export function issuesOf(error: z.ZodError, text: string, file: string): RecordingProblem[] {
  const tree = parseTree(text);
  return error.issues.slice(0, 10).map((issue) => {
    const keys = issue.code === "unrecognized_keys" ? issue.keys : [];
    const at = [...issue.path, ...keys.slice(0, 1)].map((s) => (typeof s === "number" ? s : String(s)));
    // The deepest place that exists in the text (a missing field is reported on its object).
    let node = tree && findNodeAtLocation(tree, at);
    for (let n = at.length - 1; !node && tree && n >= 0; n--) node = findNodeAtLocation(tree, at.slice(0, n));
    const message = keys.length ? `unknown field '${keys[0]}'` : issue.message;
    return { file, ...(node ? { line: lineAt(text, node.offset) } : {}), path: at.reduce<string>((p, k) => pathAt(p, k), "$"), message };
  });
}

/** JSON text parsed, or the problem naming file and line. */
export function parseJsonText(text: string, file: string): { ok: true; value: unknown } | { ok: false; problems: RecordingProblem[] } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    const line = position !== undefined ? lineAt(text, Number(position)) : undefined;
    const what = (error as Error).message.replace(/ in JSON at position \d+.*$/, "").replace(/^Unexpected/, "unexpected");
    return { ok: false, problems: [{ file, ...(line !== undefined ? { line } : {}), path: "$", message: `not valid JSON: ${what}` }] };
  }
}

/** Parses a recording's text; `file` names it in problems. */
export function parseRecordingText(text: string, file: string): ReadRecording {
  const json = parseJsonText(text, file);
  if (!json.ok) return json;
  const value = json.value;
  const parsed = Recording.safeParse(value);
  return parsed.success ? { ok: true, recording: parsed.data } : { ok: false, problems: issuesOf(parsed.error, text, file) };
}

export async function readRecordingFile(file: string, signal?: AbortSignal): Promise<ReadRecording> {
  let text: string;
  try {
    text = await readFile(file, { encoding: "utf8", signal });
  } catch (error) {
    return { ok: false, problems: [{ file, path: "$", message: `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}` }] };
  }
  return parseRecordingText(text, file);
}

/** The recording files of a directory (none when it does not exist yet). */
export async function listRecordingFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir))
      .filter((f) => f.endsWith(RECORDING_SUFFIX))
      .sort()
      .map((f) => join(dir, f));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

/** Every recording of a directory; any problem in any file refuses the whole set (thrown as a RecordingError). */
export async function readRecordingDir(dir: string, signal?: AbortSignal): Promise<Recording[]> {
  const problems: RecordingProblem[] = [];
  const recordings: Recording[] = [];
  for (const file of await listRecordingFiles(dir)) {
    const read = await readRecordingFile(file, signal);
    if (read.ok) recordings.push(read.recording);
    else problems.push(...read.problems);
  }
  if (problems.length) throw new RecordingError(problems);
  return recordings;
}
