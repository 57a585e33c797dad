/**
 * `agent-bridge recordings export-har FILE` and `recordings import-har HAR
 * --into DIR --name NAME`: a recording as HAR 1.2, and HAR traffic captured
 * elsewhere appended to a recording (scrubbed, `/v1` entries only).
 */
import { readFile, writeFile } from "node:fs/promises";
import { createRecordingWriter } from "./store.js";
import { HarLog, harToInteractions, recordingToHar } from "./har.js";
import { describeRecordingProblems, issuesOf, parseJsonText, readRecordingFile } from "./read.js";
import { createScrubber } from "./scrub.js";
import { RecordingName } from "./format.js";
import type { CheckOutput } from "./check-command.js";

export async function runExportHar(file: string, opts: { out?: string; origin?: string }, io: CheckOutput): Promise<number> {
  const read = await readRecordingFile(file);
  if (!read.ok) {
    io.err(describeRecordingProblems(read.problems));
    return 1;
  }
  const text = `${JSON.stringify(recordingToHar(read.recording, opts.origin !== undefined ? { origin: opts.origin } : {}), null, 2)}\n`;
  if (opts.out) {
    await writeFile(opts.out, text);
    io.out(`recordings export-har: ${read.recording.interactions.length} entries written to ${opts.out}`);
  } else io.out(text.trimEnd());
  return 0;
}

export async function runImportHar(har: string, opts: { into: string; name: string; secret?: string[] }, io: CheckOutput): Promise<number> {
  const name = RecordingName.safeParse(opts.name);
  if (!name.success) {
    io.err(`recordings import-har: --name '${opts.name}': ${name.error.issues[0]?.message ?? "not a recording name"}`);
    return 2;
  }
  let text: string;
  try {
    text = await readFile(har, "utf8");
  } catch (error) {
    io.err(`recordings import-har: cannot read ${har}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    return 1;
  }
  const json = parseJsonText(text, har);
  const parsed = json.ok ? HarLog.safeParse(json.value) : undefined;
  if (!json.ok || !parsed?.success) {
    io.err(describeRecordingProblems(json.ok ? issuesOf(parsed!.error!, text, har) : json.problems));
    return 1;
  }
  const { interactions, skipped } = harToInteractions(parsed.data, createScrubber({ secrets: opts.secret ?? [] }));
  const writer = createRecordingWriter(opts.into);
  for (const interaction of interactions) await writer.append(name.data, interaction);
  io.out(`recordings import-har: ${interactions.length} entries appended to ${writer.fileOf(name.data)}${skipped ? ` (${skipped} outside /v1 skipped)` : ""}`);
  return 0;
}
