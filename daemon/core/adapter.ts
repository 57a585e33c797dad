/**
 * The one interface every chat platform implements. The relay core knows
 * nothing of Telegram, Discord or WhatsApp: it sees `InboundMessage`s and
 * answers through `ChatAdapter.send`. An adapter is a thin translation.
 */

export type ChatType = "direct" | "group";

/** A file a person sent, already downloaded by the adapter (bounded in size). */
export interface InboundAttachment {
  kind: "document" | "photo" | "audio" | "video" | "other";
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
  chatId: string;
  chatType: ChatType;
  /**
   * Broader ids the group chat belongs to, most specific first (a Discord
   * thread's parent channel, then its guild): group settings keyed by one of
   * them apply when the chat itself is not listed.
   */
  groupAliases?: string[];
  /** The sender's stable id on the platform. */
  userId: string;
  /** Other ids the same sender is known by (WhatsApp phone number and `@lid` id). */
  userAliases?: string[];
  userName?: string;
  /** Platform message id, unique within the chat: used to drop duplicates. */
  messageId: string;
  /** Text with any leading bot mention removed. May be empty when only attachments came. */
  text: string;
  /** Epoch milliseconds when the platform says it was sent. */
  sentAt: number;
  attachments?: InboundAttachment[];
}

/** Where a reply goes: the chat the message came from. */
export interface ChatTarget {
  platform: string;
  accountId: string;
  chatId: string;
  chatType: ChatType;
  /** The message being answered, for platforms that thread replies. */
  replyToMessageId?: string;
}

export interface SendOptions {
  /** "markdown": the adapter renders what it can (Telegram HTML, Discord as is); "plain": verbatim. */
  format: "markdown" | "plain";
}

export interface AdapterLimits {
  /** Longest single message the platform accepts, in characters. */
  maxMessageLength: number;
  /** How often the typing indicator must be refreshed to stay visible, ms. 0 = no indicator. */
  typingRefreshMs: number;
}

/**
 * What the core hands an adapter at start. `accept` resolves once the message
 * is durably journaled: only then may the adapter acknowledge it to the
 * platform (advance an offset, mark read). If it rejects, do not acknowledge.
 */
export interface InboundSink {
  accept(message: InboundMessage): Promise<void>;
  /** Connection news for logs and metrics ("connected", "reconnecting", "logged_out", ...). */
  status(event: AdapterStatusEvent): void;
}

export interface AdapterStatusEvent {
  state: "starting" | "connected" | "reconnecting" | "stopped" | "failed" | "logged_out" | "pairing";
  detail?: string;
}

export interface ChatAdapter {
  readonly platform: string;
  readonly accountId: string;
  readonly limits: AdapterLimits;
  /** Connects and begins delivering inbound messages to `sink`. Resolves when connected (or pairing). */
  start(sink: InboundSink): Promise<void>;
  /** Stops intake and disconnects. Idempotent. */
  stop(): Promise<void>;
  /** Sends one message of at most `limits.maxMessageLength` characters. Rejects on failure. */
  send(target: ChatTarget, text: string, options: SendOptions): Promise<void>;
  /** Best effort: a failure here must never lose a reply. */
  sendTyping(target: ChatTarget): Promise<void>;
}

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
  /** Attachments larger than this are refused (the person is told). */
  maxAttachmentBytes: number;
}
