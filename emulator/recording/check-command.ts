/**
 * `agent-bridge recordings check DIR`: fails when a recording is unreadable
 * or holds anything shaped like a key (for a pre-commit hook or CI). Names
 * the file, the line and the kind of key, never the key.
 */
import { readFile } from "node:fs/promises";
import { RECORDING_SUFFIX } from "./format.js";
import { describeRecordingProblems, listRecordingFiles, parseRecordingText } from "./read.js";
import { findKeyShaped } from "./scrub.js";

export interface CheckOutput {
  out(line: string): void;
  err(line: string): void;
}

const lineAt = (text: string, offset: number): number => text.slice(0, offset).split("\n").length;

export async function runRecordingsCheck(dir: string, io: CheckOutput): Promise<number> {
  let files: string[];
  try {
    files = await listRecordingFiles(dir);
  } catch (error) {
    io.err(`recordings check: cannot read ${dir}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    return 1;
  }
  let failures = 0;
  for (const file of files) {
    const text = await readFile(file, "utf8");
    const parsed = parseRecordingText(text, file);
    if (!parsed.ok) {
      io.err(describeRecordingProblems(parsed.problems));
      failures++;
    }
    for (const found of findKeyShaped(text)) {
      io.err(`${file}:${lineAt(text, found.start)}: holds a ${found.kind} in clear`);
      failures++;
    }
  }
  if (files.length === 0) io.out(`recordings check: no *${RECORDING_SUFFIX} in ${dir}`);
  else if (failures === 0) io.out(`recordings check: ${files.length} recording(s), no secret found`);
  return failures === 0 ? 0 : 1;
}
