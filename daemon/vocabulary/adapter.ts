/**
 * The one contract between the core and every chat platform. The core knows
 * nothing of Telegram, Discord or WhatsApp: it sees `InboundMessage`s (built
 * from platform-neutral facts) and answers through `ChatAdapter.send`.
 *
 * Division of labour:
 * - the core alone decides who is heard (access, mention and attachment-size
 *   rules), journals, dedupes, queues, retries, splits and tells people;
 * - an adapter translates its platform's events into `InboundMessage`s,
 *   acknowledges to its platform only what `accept` says to, renders and
 *   measures text for its platform, sends, and reports failures as one typed
 *   `SendError`. It keeps no retry loop of its own around sends.
 */

export type ChatType = "direct" | "group";

/**
 * A file a person sent, already downloaded by the adapter (bounded in size).
 * An `audio` one (a voice note, an audio message) is transcribed for the agent
 * where transcription is on (daemon/transcription/): a new platform gets that
 * by marking its voice notes `audio`, with `seconds` where the platform says.
 */
export interface InboundAttachment {
  kind: "document" | "photo" | "audio" | "video" | "other";
  /** An audio file's length as the platform reports it (transcription's `maxSeconds` is checked against it). */
  seconds?: number;
  /** A safe base name, no folders (the adapter invents one when the platform has none). */
  fileName: string;
  mimeType?: string;
  data: Buffer;
}

export interface InboundMessage {
  /** "telegram", "discord", "whatsapp", "terminal", ... */
  platform: string;
  /** The adapter's account id (its config name), so two bots on one platform stay apart. */
  accountId: string;
  /** The chat the platform addresses (a group, channel, room, space or direct chat): its settings apply. */
  chatId: string;
  chatType: ChatType;
  /**
   * A conversation of its own within the chat (a forum topic, a thread, a
   * reply chain): its own session, group context and bookkeeping, under the
   * chat's settings; replies go back into it. Absent at the chat's top level
   * (and in Telegram's General topic). The one thread rule for every platform:
   * daemon/vocabulary/conversation.ts.
   */
  threadId?: string;
  /**
   * With `threadId`: the message was posted at the chat's top level and the
   * bot's reply opens the thread `threadId` under it (Slack: every top-level
   * message roots a thread of its own). Its group context is the chat's top
   * level, not the thread's.
   */
  startsThread?: boolean;
  /**
   * Broader ids the group chat belongs to, most specific first (a Discord
   * guild, a Teams team): group settings keyed by one of them apply when
   * neither the thread nor the chat is listed.
   */
  groupAliases?: string[];
  /**
   * How this conversation was named before the one thread rule, where that
   * differs (a Discord thread was a chat of its own; a Slack thread was
   * `<channel>:<ts>`): a session stored under the former name is moved to
   * the new one, once, when the first message arrives (core/intake.ts).
   */
  formerly?: { chatId: string; threadId?: string };
  /** The sender's stable id on the platform. */
  userId: string;
  /** Other ids the same sender is known by (WhatsApp phone number and `@lid` id). */
  userAliases?: string[];
  userName?: string;
  /** Platform message id, unique within the chat: used to drop duplicates. */
  messageId: string;
  /** Text with any leading bot mention removed. May be empty when only attachments came. */
  text: string;
  /**
   * In a group: whether the message addresses the bot (a mention, a reply to
   * it, a command aimed at it). The core applies the group's mention rule.
   * Leave undefined where the platform has no such notion (treated as addressed).
   */
  mentioned?: boolean;
  /** Epoch milliseconds when the platform says it was sent. */
  sentAt: number;
  attachments?: InboundAttachment[];
  /**
   * Files the person sent that the adapter did not pass on (the admission said
   * no, or the download failed). The core tells the person, once the message
   * is journaled (or refused as empty), so a redelivery does not say it twice.
   */
  droppedAttachments?: DroppedAttachment[];
  /**
   * A tap on a question's button (`ButtonCapability`), with the option's
   * number as `text` and a `messageId` of the adapter's choosing for the tap;
   * the core keys it by the question, so a double tap or a platform's retry
   * is one answer. `closed`: the bridge's own closing of an expired question.
   */
  answers?: { questionId: string; closed?: "expired" };
}

export interface DroppedAttachment {
  fileName: string;
  reason: "too_large" | "disabled" | "unavailable";
}

/** Where a reply goes: the chat the message came from. */
export interface ChatTarget {
  platform: string;
  accountId: string;
  chatId: string;
  chatType: ChatType;
  /** The thread the reply goes into within the chat (`InboundMessage.threadId`). */
  threadId?: string;
  /** The message being answered, for platforms that thread replies. */
  replyToMessageId?: string;
}

/** A file from the agent's workspace, downloaded, to show in the chat. */
export interface OutboundFile {
  /** The workspace path the agent named (the terminal shows it). */
  path: string;
  /** A safe base name. */
  fileName: string;
  mimeType: string;
  /** A photo (an image the platform shows inline), a voice note, or a document. */
  kind: "photo" | "voice" | "document";
  data: Buffer;
}

/** "markdown": the adapter renders what it can (Telegram HTML, Discord as is); "plain": verbatim. */
export type TextFormat = "markdown" | "plain";

export interface SendOptions {
  format: TextFormat;
  /**
   * Streamed replies only (`send` and `edit` of a preview): true when this is
   * the last text the message gets, false while it will still change.
   * Undefined for an ordinary send. A platform with native streams ends its
   * stream on `true` (see `EditCapability.end`).
   */
  final?: boolean;
}

/** What a successful send may report back (streaming edits will need the id). */
export interface SendReceipt {
  /** The platform's id of the message sent (the last one, if the platform split it). */
  messageId?: string;
}

export interface AdapterLimits {
  /**
   * Longest single message the platform accepts, as the platform counts it
   * (see `ChatAdapter.measure`): Telegram counts visible characters after
   * entity parsing, Discord the raw text.
   */
  maxMessageLength: number;
  /** How often the typing indicator must be refreshed to stay visible, ms. 0 = no indicator. */
  typingRefreshMs: number;
  /**
   * Streaming: least time between two sends or edits in one chat, ms
   * (Telegram 1000). Default 1000.
   */
  minEditIntervalMs?: number;
}

/** The largest file a platform takes, bytes, per kind (`FileCapability.send`); a larger one is not sent, the person is told. */
export type FileLimits = Readonly<Record<OutboundFile["kind"], number>>;

/**
 * Streaming replies by editing: `send` returns the message id, and the
 * preview of a reply being written is edited in place as it grows.
 */
export interface EditCapability {
  /** Replaces the text of a message this adapter sent. Same rules as `send`. */
  edit(target: ChatTarget, messageId: string, text: string, options: SendOptions): Promise<void>;
  /**
   * Platforms with native streams: once a streamed reply is complete, each of
   * its messages whose last operation was not `final` gets this call with its
   * (unchanged) text, so the platform's stream is closed. Best effort.
   */
  end?(target: ChatTarget, messageId: string, text: string): Promise<void>;
  /**
   * With `end`: whether message `messageId` may still be an open stream (so `end` has work to
   * do). The core calls `end` only then, each call paced like an edit. Absent: always.
   */
  mayBeOpen?(messageId: string): boolean;
}

/**
 * Streaming replies on an output that cannot change what it showed: the reply
 * is written as it comes instead of being sent at the end.
 */
export interface AppendCapability {
  /** Shows `piece`, the next part of a reply being written; `end` closes the reply (the prompt comes back). */
  write(target: ChatTarget, piece: string, options: { end: boolean }): Promise<void>;
}

/** Files from the agent's workspace, shown in the chat. */
export interface FileCapability {
  /** The largest of each kind `send` may be given; a larger file is not sent, the person is told. */
  readonly limits: FileLimits;
  /**
   * Sends one file as its kind (photo, voice note, document), answering the
   * target's message like `ChatAdapter.send`. Same error rules; no retries of its own.
   */
  send(target: ChatTarget, file: OutboundFile): Promise<SendReceipt | void>;
}

/** The bot's reactions on people's messages (acknowledgement emoji). */
export interface ReactionCapability {
  /**
   * Sets the bot's reaction on message `messageId` of the target's chat to
   * `emoji`, or removes the bot's reaction `emoji` when `remove` is true.
   * Rejects on failure (the core treats reactions as best effort: logged at
   * debug, never retried, never holding up a reply).
   */
  react(target: ChatTarget, messageId: string, emoji: string, options: { remove: boolean }): Promise<void>;
}

/** An account linked to a device (a phone that scanned a code). */
export interface LinkCapability {
  /** While stopped: forgets the account's link, so the next start links it anew. */
  forget(): Promise<void>;
}

/** A question the agent asked, as an adapter shows it. */
export interface ButtonQuestion {
  /** The bridge's id for it: what a tap names (`InboundMessage.answers`). */
  id: string;
  /** The question (a confirmation: what will be done). */
  text: string;
  /** The options, one button each, in order; a tap answers with the option's number (1-based) as its text. */
  options: string[];
  /** Whether a typed reply answers it too (said beside the buttons). */
  allowText: boolean;
}
/**
 * Questions with buttons: the agent asks (its bridge tools), the person taps,
 * and the tap comes back through `InboundSink.accept` as an inbound message
 * with `answers` set. The adapter acknowledges the tap to its platform within
 * the platform's deadline, with what `accept` answered: accepted, "already
 * answered" (duplicate, or refused "closed") or "not for you" (refused "not_yours").
 */
export interface ButtonCapability {
  /** Sends the question with one button per option; the receipt's id is the message `close` later changes. */
  ask(target: ChatTarget, question: ButtonQuestion): Promise<SendReceipt | void>;
  /** Replaces the question's message with `outcome` (what was chosen and by whom, or that it closed): its buttons go. */
  close(target: ChatTarget, messageId: string, question: ButtonQuestion, outcome: string): Promise<void>;
}

/**
 * What an adapter may do beyond sending text, one object per capability: an
 * adapter has it (the object, with its methods and limits) or has not
 * (undefined), and the core checks it one way, `if (adapter.files)`.
 * The shared adapter suite (test/daemon/adapters/contract.test.ts) proves
 * each one an adapter declares. The next one comes the same way: buttons
 * (`buttons?: ButtonCapability`, a message with choices and the person's
 * pick coming back as an inbound event) is a new optional member here.
 */
export interface AdapterCapabilities {
  /** Streaming replies by editing the message in place. */
  readonly edits?: EditCapability;
  /** Streaming replies written as they come (an output that cannot change what it showed). */
  readonly appends?: AppendCapability;
  /** Files from the agent's workspace. */
  readonly files?: FileCapability;
  /** The bot's reactions on people's messages. */
  readonly reactions?: ReactionCapability;
  /** A linked device the operator can make the account forget. */
  readonly link?: LinkCapability;
  /** Questions with buttons, the person's tap coming back as an inbound message. */
  readonly buttons?: ButtonCapability;
}

/** The capability names, for whoever goes through them all (the shared adapter suite, the docs). */
export const CAPABILITY_NAMES = ["edits", "appends", "files", "reactions", "link", "buttons"] as const satisfies readonly (keyof AdapterCapabilities)[];

/** Why the core deliberately did not take a message (the adapter acknowledges it anyway). */
export type RefusalReason =
  /** The sender or group is not allowed (logged at info with the sender's id, so the operator can add it). */
  | "access"
  /** A stranger in a direct chat on a channel in pairing mode: they were given a code (or told why not); nothing else is kept. */
  | "pairing"
  /** A group message that does not address the bot, where the group requires it. */
  | "not_mentioned"
  /** No route matches. */
  | "no_route"
  /** Nothing to pass on (no text, attachments refused). */
  | "empty"
  /** The account has no channel config (no access rules). */
  | "no_channel"
  /** Queue full on a platform that cannot redeliver: the person was told (one notice may cover several). */
  | "busy"
  /** A tap on a question that is no longer open (answered, expired, stopped): the adapter says "already answered". */
  | "closed"
  /** A tap by someone the question is not for: the adapter says so to them alone; the agent never hears of it. */
  | "not_yours";

/**
 * What became of a message handed to `accept`. `acknowledge` says whether the
 * adapter may now confirm it to its platform (advance an offset, answer 2xx,
 * mark read): true once it is journaled, known already, or deliberately
 * refused; false when the platform should deliver it again later.
 */
export type AcceptOutcome =
  | { status: "accepted"; acknowledge: true }
  | { status: "duplicate"; acknowledge: true }
  | { status: "refused"; reason: RefusalReason; acknowledge: true }
  /** Not taken now (queue full, daemon stopping), on a platform that redelivers: do not acknowledge. */
  | { status: "deferred"; reason: "busy" | "stopping"; acknowledge: false };

/** What an adapter knows before downloading anything (sizes as the platform reports them). */
export interface AdmissionQuestion {
  message: Omit<InboundMessage, "attachments">;
  /** Declared sizes of the attachments, bytes (undefined when the platform does not say). */
  attachmentSizes: (number | undefined)[];
}

export interface AdmissionAnswer {
  /** False when the core would refuse the message anyway: download nothing. */
  allowed: boolean;
  /** Per attachment, in order: fetch it, or why not (said to the sender by the core once accepted). */
  attachments: ({ fetch: true; maxBytes: number } | { fetch: false; reason: "too_large" | "disabled" })[];
}

/**
 * What the core hands an adapter at start.
 *
 * `accept` resolves with the outcome once the message is durably journaled or
 * deliberately refused; act on `outcome.acknowledge`. It rejects only when the
 * message could not be handled at all (the journal failed): do not acknowledge.
 */
export interface InboundSink {
  accept(message: InboundMessage): Promise<AcceptOutcome>;
  /** Asked before downloading attachments: whether the message is welcome and which files to fetch. */
  admit(question: AdmissionQuestion): AdmissionAnswer;
  /** Connection news for logs and metrics ("connected", "reconnecting", "logged_out", ...). */
  status(event: AdapterStatusEvent): void;
}

export interface AdapterStatusEvent {
  state: "starting" | "connected" | "reconnecting" | "stopped" | "failed" | "logged_out" | "pairing";
  detail?: string;
  /**
   * With "reconnecting": why, as one fixed word that /metrics and /healthz count
   * ("deaf": the connection was up but no events came; "closed": it dropped;
   * "refresh": the platform asked for a new one). Default "other".
   */
  reason?: "deaf" | "closed" | "refresh";
  /**
   * With "pairing": what a phone scans to link the account (WhatsApp's QR payload). A secret:
   * drawn on the terminal and in the operator's console, never logged.
   */
  linkCode?: string;
}

/**
 * A send that failed, as every adapter reports it. The core's one retry policy
 * reads it: `permanent` is never retried (a blocked bot, a deleted chat, a
 * message the platform will never take); `retryAfterMs` (a flood limit's
 * retry_after) is waited at least before the next try. Anything an adapter
 * throws that is not a SendError counts as transient.
 */
export class SendError extends Error {
  override readonly name = "SendError";
  readonly permanent: boolean;
  readonly retryAfterMs: number | undefined;
  /** The platform's status or error code; undefined when no answer came (network, timeout) or the adapter refused on its own. */
  readonly status: number | undefined;
  constructor(message: string, options: { permanent: boolean; retryAfterMs?: number; status?: number; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.permanent = options.permanent;
    this.retryAfterMs = options.retryAfterMs;
    this.status = options.status;
  }
}

export interface ChatAdapter extends AdapterCapabilities {
  readonly platform: string;
  readonly accountId: string;
  readonly limits: AdapterLimits;
  /**
   * The platform delivers again what was not acknowledged (an update offset,
   * a webhook answered non-2xx). A message the core cannot take now (busy,
   * stopping) is then left unacknowledged instead of refused with a notice.
   * Platforms that cannot get every message journaled or deliberately
   * refused with a notice.
   */
  readonly redelivers: boolean;
  /** Connects and begins delivering inbound messages to `sink`. Resolves when connected (or pairing). */
  start(sink: InboundSink): Promise<void>;
  /**
   * Stops taking messages in first (nothing more reaches `sink.accept` once it resolves;
   * accepts already under way finish), then disconnects. Idempotent. Sends
   * may still be asked for afterwards only until the core halts delivery.
   */
  stop(): Promise<void>;
  /**
   * The length the platform will count for `text` sent in `format`, to compare
   * with `limits.maxMessageLength` (visible characters of the rendered text,
   * where the platform counts those). The core's chunker splits until every
   * chunk measures within the limit, so a formatted reply is never sent unformatted for length.
   */
  measure(text: string, format: TextFormat): number;
  /**
   * Renders and sends one message that `measure`s within the limit. Rejects
   * with a `SendError` on failure; no retries of its own (the core retries).
   */
  send(target: ChatTarget, text: string, options: SendOptions): Promise<SendReceipt | void>;
  /** Best effort: a failure here must never lose a reply. */
  sendTyping(target: ChatTarget): Promise<void>;
}

/** `measure` for platforms that count the raw text. */
export const rawLength = (text: string): number => text.length;

/**
 * Small durable key-value state an adapter may keep (Telegram's last handled
 * update id, say). `set` resolves once the value is on disk.
 */
export interface AdapterStateStore {
  get<T>(key: string): T | undefined;
  set(key: string, value: unknown): Promise<void>;
}

/** What every adapter factory receives besides its own channel config. */
export interface AdapterDeps {
  logger: import("pino").Logger;
  /** Namespaced to this adapter already: keys cannot collide across adapters. */
  state: AdapterStateStore;
  /** The daemon's data directory (WhatsApp keeps its auth files below it). */
  dataDir: string;
  clock: import("../../shared/clock.js").Clock;
  /** Attachments larger than this are refused (the person is told). Prefer `sink.admit`, which applies the route's rules. */
  maxAttachmentBytes: number;
  /**
   * Several machines: the account's credentials (a linked device's keys) kept by the state
   * backend, fenced by the account's lease, so they move with it. Absent: the adapter keeps
   * them in its own files below `dataDir`.
   */
  credentials?: CredentialStore;
  /**
   * Several machines: events any node of the bridge received for this account and kept
   * (a platform that posts to whichever node its load balancer picks). Absent: one node,
   * which receives them itself.
   */
  inbox?: EventInbox;
  /**
   * Several machines: where reply files served by link are kept (the state backend, so any
   * node serves them). Absent: on disk below `dataDir`.
   */
  fileStores?: import("./file-store.js").FileStoreBackend;
  /**
   * Told of each send whose kind the operator should see counted (a platform whose answers
   * are free one way and counted against a quota the other: "reply", "push"): /metrics
   * counts it by platform, account and kind (`adapter_sends_total`). Absent: not counted.
   */
  countSend?(kind: string): void;
}

/** The account's kept events, as its owner sees them. */
export interface EventInbox {
  /** The kept events, oldest first. */
  pending(): Promise<{ key: string; body: unknown }[]>;
  /** Forgets events now in the journal (fenced by the account's lease: refused once it is lost). */
  remove(keys: readonly string[]): Promise<void>;
  /** Calls `wake` when a node keeps a new event; returns the stop. Best effort: poll as well. */
  watch(wake: () => void): () => void;
}

/** Records of an account's credentials by type and id; values are plain JSON. */
export interface CredentialStore {
  read(type: string, ids: string[]): Promise<Record<string, unknown>>;
  /** `{ [type]: { [id]: value | null } }`; null deletes. */
  write(data: Record<string, Record<string, unknown>>): Promise<void>;
  /** Forgets every record (the device was unlinked). */
  clear(): Promise<void>;
}
