/**
 * What the store reads back from disk, as versioned zod schemas: the snapshot
 * and every journal record are parsed, never cast. A file written by a newer
 * daemon, or one that does not match, stops the start with an error naming
 * the file and the problem (a silent cast could answer the wrong person).
 *
 * Version 1 is the only one so far. Journal records carry no version field
 * while it is 1 (the journal's size is on the hot path); a later format adds
 * `ver` to its records (not `v`: a kv record's value), and this reader refuses them.
 */
import { z } from "zod";
import type { InboundAttachment, InboundMessage } from "./adapter.js";
import { DedupeKeySchema } from "./keys.js";

export const STATE_VERSION = 1;

const ChatTypeSchema = z.enum(["direct", "group"]);

/** The route a message was resolved to when accepted. */
export const StoredRouteSchema = z.object({
  ruleIndex: z.number().int().nonnegative(),
  instanceId: z.string(),
  model: z.string(),
  instructions: z.string().optional(),
  scope: z.string(),
  sessionBase: z.string(),
});

const AttachmentKindSchema = z.enum(["document", "photo", "audio", "video", "other"]) satisfies z.ZodType<InboundAttachment["kind"]>;

/** An attachment spooled to a file beside the journal. */
export const StoredAttachmentSchema = z.object({
  kind: AttachmentKindSchema,
  fileName: z.string(),
  mimeType: z.string().optional(),
  size: z.number().int().nonnegative(),
  /** An audio file's length as the platform reported it. */
  seconds: z.number().nonnegative().optional(),
  /** Path relative to the dataDir. */
  file: z.string(),
});

/** An inbound message as journaled: attachments spooled to files beside the journal. */
export const StoredMessageSchema = z.object({
  platform: z.string(),
  accountId: z.string(),
  chatId: z.string(),
  chatType: ChatTypeSchema,
  /** A thread within the chat (absent at a chat's top level: older journals replay as before). */
  threadId: z.string().optional(),
  startsThread: z.boolean().optional(),
  groupAliases: z.array(z.string()).optional(),
  /** Older journals may carry `contextChatId` (the shape before the one thread rule): dropped on reading, its chat's context read instead. */
  formerly: z.object({ chatId: z.string(), threadId: z.string().optional() }).optional(),
  userId: z.string(),
  userAliases: z.array(z.string()).optional(),
  userName: z.string().optional(),
  messageId: z.string(),
  text: z.string(),
  mentioned: z.boolean().optional(),
  sentAt: z.number(),
  attachments: z.array(StoredAttachmentSchema).optional(),
  answers: z.object({ questionId: z.string(), closed: z.literal("expired").optional() }).optional(),
});

export const StoredReplySchema = z.object({
  /** The chunks to send, in order. */
  chunks: z.array(z.string()),
  /** Every entry this reply answers, the leader first. */
  members: z.array(z.string()).min(1),
  /** "plain" for the bridge's own words, "markdown" for the agent's. */
  format: z.enum(["markdown", "plain"]),
  /** The whole text (streamed replies: a preview resumed after a restart is finished to it). */
  text: z.string().optional(),
  /** Workspace files the agent named, sent after the chunks: `sent` counts the chunks, then the files. */
  files: z.array(z.string()).optional(),
});

/** The stream-preview planner's `state()` (stream-preview.ts), as journaled. */
export const PreviewMessageSchema = z.object({
  target: z.string(),
  shown: z.string().nullable(),
  final: z.boolean(),
  broken: z.boolean(),
  replaced: z.boolean(),
  deleted: z.boolean(),
});

/** On a leader whose reply streams: the preview messages shown so far. */
export const StoredPreviewSchema = z.object({
  state: z.object({
    messages: z.array(PreviewMessageSchema),
    restStart: z.number().int().nonnegative(),
    reopen: z.string(),
    text: z.string(),
    finished: z.boolean(),
    degraded: z.boolean(),
    gaveUp: z.boolean(),
  }),
  /** Platform message ids by the planner's message index (null: not sent, or its id unknown). */
  ids: z.array(z.string().nullable()),
});

/** An inbound message from acceptance until its reply is fully delivered. */
export const JournalEntrySchema = z.object({
  id: z.string(),
  /** Acceptance order across the whole daemon. */
  seq: z.number().int(),
  kind: z.enum(["turn", "command"]),
  /** Dedupe key: platform, account, chat, message id. */
  key: DedupeKeySchema,
  acceptedAt: z.number(),
  message: StoredMessageSchema,
  route: StoredRouteSchema,
  /** Known once the reply is: the chunks to send in order, and every entry this reply answers. */
  reply: StoredReplySchema.optional(),
  /** Chunks already delivered. */
  sent: z.number().int().nonnegative(),
  /** On a merged entry: the entry whose reply answers it too. */
  leader: z.string().optional(),
  preview: StoredPreviewSchema.optional(),
});

/** The bridge's tools an agent may call to ask the person (core/questions/tools.ts). */
export const ButtonToolSchema = z.enum(["choice", "confirm"]);

/**
 * A question the agent asked with one of the bridge's tools, open until the
 * person answers, it expires, or the conversation is stopped or renewed. It
 * lives in its session's state: written with the answer that asked it, and
 * moved with the account's lease on several machines.
 */
export const OpenQuestionSchema = z.object({
  /** The bridge's id: in the buttons' data and the answer's dedupe key. */
  id: z.string(),
  /** The `function_call`'s `call_id`, which the answer's output names. */
  callId: z.string(),
  tool: ButtonToolSchema,
  /** The question (a confirmation: its summary). */
  text: z.string(),
  options: z.array(z.string()).min(2),
  allowText: z.boolean(),
  /** Who asked the turn the question answers: the one who may answer where `answeredBy` is "asker". */
  askerId: z.string(),
  askedAt: z.number(),
  expiresAt: z.number(),
  /** The message with the buttons, once shown (to take them away when the question closes). */
  messageId: z.string().optional(),
  /** Outputs of the answer's other calls, sent with this question's answer (a chain takes them all at once). */
  otherOutputs: z.array(z.object({ callId: z.string(), output: z.string() })).default([]),
  /** Closed by /stop before an answer: the next message tells the agent so. */
  closed: z.literal("stopped").optional(),
});

export const SessionStateSchema = z.object({
  /** Bumped by /new and /reset: a fresh session id and chain. */
  generation: z.number().int().nonnegative(),
  /** The last response of the current generation's chain. */
  lastResponseId: z.string().optional(),
  /**
   * The service session the chain lives in. A first turn (no response id yet)
   * uses a fresh session per attempt, so an attempt whose answer was lost is
   * never continued by the next one; later turns chain by response id.
   */
  sessionId: z.string().optional(),
  /** When the chain's last turn was answered (epoch ms): what a session reset (core/session-reset.ts) measures from. */
  lastTurnAt: z.number().optional(),
  /** The agent's question waiting for the person's answer (core/questions/). */
  question: OpenQuestionSchema.optional(),
});

const seq = z.number().int().positive();
export const JournalRecordSchema = z.discriminatedUnion("t", [
  z.object({ t: z.literal("msg"), s: seq, e: JournalEntrySchema }),
  z.object({ t: z.literal("reply"), s: seq, id: z.string(), reply: StoredReplySchema }),
  z.object({ t: z.literal("sent"), s: seq, id: z.string(), n: z.number().int().nonnegative() }),
  /** A streamed reply's preview messages so far (written as each is created); null: closed, a later answer starts anew. */
  z.object({ t: z.literal("preview"), s: seq, id: z.string(), preview: StoredPreviewSchema.nullable() }),
  z.object({ t: z.literal("done"), s: seq, ids: z.array(z.string()) }),
  z.object({ t: z.literal("session"), s: seq, base: z.string(), state: SessionStateSchema }),
  z.object({ t: z.literal("kv"), s: seq, ns: z.string(), k: z.string(), v: z.unknown().optional() }),
]);

export const SnapshotSchema = z.object({
  version: z.literal(STATE_VERSION),
  lastSeq: z.number().int().nonnegative(),
  entries: z.array(JournalEntrySchema),
  sessions: z.record(z.string(), SessionStateSchema),
  kv: z.record(z.string(), z.record(z.string(), z.unknown())),
  recentKeys: z.array(DedupeKeySchema),
});

// The records, each defined once above: their types are what the schemas parse to.
export type StoredRoute = z.output<typeof StoredRouteSchema>;
export type StoredAttachment = z.output<typeof StoredAttachmentSchema>;
export type StoredMessage = z.output<typeof StoredMessageSchema>;
export type StoredReply = z.output<typeof StoredReplySchema>;
export type StoredPreview = z.output<typeof StoredPreviewSchema>;
export type JournalEntry = z.output<typeof JournalEntrySchema>;
export type EntryKind = JournalEntry["kind"];
export type SessionState = z.output<typeof SessionStateSchema>;
export type OpenQuestion = z.output<typeof OpenQuestionSchema>;
export type ButtonTool = z.output<typeof ButtonToolSchema>;
export type JournalRecord = z.output<typeof JournalRecordSchema>;
export type Snapshot = z.output<typeof SnapshotSchema>;

/**
 * A stored message carries every field of an inbound one but its files: a
 * field added to `InboundMessage` and not to `StoredMessageSchema` would be
 * dropped on the next restart, so it stops the build here instead.
 */
type JournaledFields = Exclude<keyof InboundMessage, "attachments" | "droppedAttachments">;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const storedMessageKeepsEveryField: Same<JournaledFields, Exclude<keyof StoredMessage, "attachments">> = true;
void storedMessageKeepsEveryField;

/** The daemon's state files cannot be read as they are: the start stops here. */
export class StateFileError extends Error {
  override readonly name = "StateFileError";
  readonly status = 500;
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`${file}: ${detail}`);
  }
}

const describeIssues = (error: z.ZodError): string =>
  error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
    .join("; ");

const newer = (file: string, version: unknown) =>
  new StateFileError(
    file,
    `written by a newer daemon (state version ${String(version)}, this one reads ${STATE_VERSION}). Run the newer version, or move the data directory aside to start empty.`,
  );

export function parseSnapshot(file: string, raw: unknown): Snapshot {
  const version = typeof raw === "object" && raw !== null && "version" in raw ? raw.version : undefined;
  if (typeof version === "number" && version > STATE_VERSION) throw newer(file, version);
  const parsed = SnapshotSchema.safeParse(raw);
  if (!parsed.success)
    throw new StateFileError(file, `not a valid snapshot (${describeIssues(parsed.error)}). Move it aside to start without it, or restore it from a backup.`);
  return parsed.data;
}

/** `line`: 1-based, for the message. */
export function parseJournalRecord(file: string, line: number, raw: unknown): JournalRecord {
  const version = typeof raw === "object" && raw !== null && "ver" in raw ? raw.ver : undefined;
  if (typeof version === "number" && version > STATE_VERSION) throw newer(`${file} line ${line}`, version);
  const parsed = JournalRecordSchema.safeParse(raw);
  if (!parsed.success)
    throw new StateFileError(
      `${file} line ${line}`,
      `not a valid journal record (${describeIssues(parsed.error)}). Move the data directory aside, or repair the line.`,
    );
  return parsed.data;
}
