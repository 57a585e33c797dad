/**
 * The recordings of one directory while something writes to them (the proxy,
 * a `record-if-missing` replay): each recording held in memory and written
 * whole after every append (atomic replace, so a crash leaves the previous
 * file), appends to one file one after another.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "../../shared/durable-files.js";
import { modelRuleOf } from "./capture.js";
import { emptyRecording, type Interaction, type Recording, RecordingName, recordingFileName, recordingText } from "./format.js";
import { readRecordingFile, RecordingError } from "./read.js";

export interface RecordingWriter {
  /** Adds an interaction to the named recording (created when new; an existing file is read first) and writes it. */
  append(name: string, interaction: Interaction): Promise<void>;
  /** The file a recording name is kept in. */
  fileOf(name: string): string;
  /** Waits for every pending write. */
  flush(): Promise<void>;
}

/** A name that is not a safe file name becomes one: unsafe characters become `_`. */
export function recordingNameOf(raw: string | undefined, fallback: string): string {
  const cleaned = (raw ?? "")
    .replace(/[^A-Za-z0-9._ -]/g, "_")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 200);
  return RecordingName.safeParse(cleaned).success ? cleaned : fallback;
}

export function createRecordingWriter(dir: string, options: { upstream?: string } = {}): RecordingWriter {
  /** Every recording this writer has touched, as last written. */
  const recordings = new Map<string, Recording>();
  /** One chain of writes per file, so two appends never interleave. */
  const queues = new Map<string, Promise<void>>();
  const fileOf = (name: string) => join(dir, recordingFileName(name));

  const load = async (name: string): Promise<Recording> => {
    const known = recordings.get(name);
    if (known) return known;
    const read = await readRecordingFile(fileOf(name));
    let recording: Recording;
    if (read.ok) recording = read.recording;
    else if (read.problems.length === 1 && /ENOENT/.test(read.problems[0]!.message)) recording = emptyRecording(name, options.upstream);
    else throw new RecordingError(read.problems);
    recordings.set(name, recording);
    return recording;
  };

  const write = async (name: string, interaction: Interaction): Promise<void> => {
    const recording = await load(name);
    const index = recording.interactions.length;
    const rule = modelRuleOf(interaction, `${name} #${index + 1}`);
    if (rule) {
      interaction.rule = rule.name!;
      recording.model_script = { rules: [...(recording.model_script?.rules ?? []), rule] };
    }
    recording.interactions.push(interaction);
    await mkdir(dir, { recursive: true });
    await writeFileAtomic(fileOf(name), recordingText(recording), 0o644);
  };

  return {
    fileOf,
    append(name, interaction) {
      const next = (queues.get(name) ?? Promise.resolve()).then(() => write(name, interaction));
      queues.set(
        name,
        next.catch(() => {}),
      );
      return next;
    },
    async flush() {
      await Promise.all(queues.values());
    },
  };
}
