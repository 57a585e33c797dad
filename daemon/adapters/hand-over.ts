/**
 * The one hand-over of a message to the core, for every platform: admit the
 * message, fetch only the files the core wants, attach them or drop them
 * (the core tells the sender about a dropped one), accept. Strangers' files
 * are never fetched. Each platform supplies only where its files come from
 * (`files.ts` in its folder); what it does with the outcome (advance an
 * offset, mark read, keep for a replay) stays with the platform.
 */
import type { AcceptOutcome, AdmissionAnswer, DroppedAttachment, InboundAttachment, InboundMessage, InboundSink } from "../vocabulary/adapter.js";

/** A file a message brings, as its platform declares it before any byte is fetched. */
export interface DeclaredFile {
  /** The name the sender and the core know it by (also when it is not passed on). */
  fileName: string;
  /** Bytes, as the platform reports them (absent when it does not say). */
  size?: number | undefined;
}

/** A file not passed on; `note`, when set, is added to the message's text for the agent to read. */
export interface DroppedFile extends DroppedAttachment {
  note?: string;
}

/** Why the core would not take a file (its admission's answer). */
export type RefusedReason = Extract<AdmissionAnswer["attachments"][number], { fetch: false }>["reason"];

/** Where a platform's files come from. */
export interface FileSource<F extends DeclaredFile> {
  /**
   * Fetches one file the core admitted, never holding more than `maxBytes`: the file,
   * or why it is not passed on. Throws only when the message must come again (stopping).
   */
  fetch(file: F, maxBytes: number): Promise<InboundAttachment | DroppedFile>;
  /** Words for the agent about a file the core would not take (by default the core's notice to the sender says it all). */
  refusedNote?(file: F, reason: RefusedReason): string;
}

export interface HandOverOptions {
  /**
   * Hand over a message left with no text and no file (a stranger's bare file, a sticker): the core
   * then answers the sender as for any message of theirs. Default false: such a message is dropped here.
   */
  handOverBare?: boolean;
}

/**
 * Hands `message` with its `files` to `sink`: undefined when there was nothing to hand over,
 * else what `accept` answered. Rejects when `accept` or a fetch does (nothing is acknowledged then).
 */
export async function handOver<F extends DeclaredFile>(
  sink: InboundSink,
  message: InboundMessage,
  files: readonly F[],
  source: FileSource<F>,
  options: HandOverOptions = {},
): Promise<AcceptOutcome | undefined> {
  if (files.length > 0) {
    const admission = sink.admit({ message, attachmentSizes: files.map((f) => f.size) });
    if (admission.allowed) attach(message, await fetchAdmitted(files, admission.attachments, source));
  }
  if (!options.handOverBare && isEmpty(message)) return undefined;
  return sink.accept(message);
}

/** Each file in turn: fetched within the core's bound, or dropped with the core's reason. */
async function fetchAdmitted<F extends DeclaredFile>(
  files: readonly F[],
  verdicts: AdmissionAnswer["attachments"],
  source: FileSource<F>,
): Promise<(InboundAttachment | DroppedFile)[]> {
  const fetched: (InboundAttachment | DroppedFile)[] = [];
  for (const [i, file] of files.entries()) {
    const verdict = verdicts[i];
    if (verdict?.fetch) {
      fetched.push(await source.fetch(file, verdict.maxBytes));
      continue;
    }
    const reason = verdict?.reason ?? "disabled";
    const note = source.refusedNote?.(file, reason);
    fetched.push({ fileName: file.fileName, reason, ...(note ? { note } : {}) });
  }
  return fetched;
}

/** Files on `message.attachments`, drops on `message.droppedAttachments` (the core tells the sender once it is journaled), notes after the text. */
function attach(message: InboundMessage, fetched: (InboundAttachment | DroppedFile)[]): void {
  const files: InboundAttachment[] = [];
  const dropped: DroppedAttachment[] = [];
  const notes: string[] = [];
  for (const f of fetched) {
    if (!("reason" in f)) {
      files.push(f);
      continue;
    }
    const { note, ...drop } = f;
    dropped.push(drop);
    if (note) notes.push(note);
  }
  if (notes.length > 0) message.text = [message.text, ...notes].filter(Boolean).join("\n");
  if (files.length > 0) message.attachments = files;
  if (dropped.length > 0) message.droppedAttachments = dropped;
}

const isEmpty = (m: InboundMessage): boolean => !m.text.trim() && !m.attachments?.length && !m.droppedAttachments?.length;
