import type { LinkBook } from "./identity-links.js";
import type { AdapterStateStore, InboundMessage } from "./adapter.js";
import type { DedupeKey, SessionKey } from "./keys.js";
import type { EntryKind, JournalEntry, SessionState, StoredAttachment, StoredPreview, StoredReply, StoredRoute } from "./records.js";

/**
 * The daemon's durable state as the core sees it: the file journal
 * (`openStore` in state/store.ts) and PostgreSQL (`state/cluster-store.ts`) both implement it.
 * Readers are synchronous (the state is in memory); every write resolves once
 * it is durable.
 */
/** One write of `Store.writeTogether`: a session's state, or a key-value (`value` undefined removes it). */
export type StateWrite = { session: SessionKey; state: SessionState } | { namespace: string; key: string; value: unknown };

export interface Store {
  /** Entries not yet fully answered, in acceptance order. */
  pending(): JournalEntry[];
  get(id: string): JournalEntry | undefined;
  /** True if a message with this dedupe key is pending, being accepted, or was answered recently. */
  has(key: DedupeKey): boolean;
  /**
   * Stores the attachments and the entry; resolves once both are durable. Rejects with
   * `DuplicateEntryError` when storing finds the key taken (`has` is only the fast path).
   */
  add(input: { kind: EntryKind; key: DedupeKey; message: InboundMessage; route: StoredRoute }): Promise<JournalEntry>;
  /** Records the reply of `leaderId`, with the session change it caused, in one write. */
  recordReply(leaderId: string, reply: StoredReply, session?: { key: SessionKey; state: SessionState }): Promise<void>;
  recordSent(id: string, sent: number): Promise<void>;
  /** Records a streamed reply's preview messages (after each one is created); null closes it (a later answer starts anew). */
  recordPreview(id: string, preview: StoredPreview | null): Promise<void>;
  /** Forgets entries (answered, or given up); their keys stay known for dedupe. */
  complete(ids: string[]): Promise<void>;
  /** The session chain of a session key (`sessionKeyOf` in keys.ts: the instance and the session base). */
  session(key: SessionKey): SessionState;
  setSession(key: SessionKey, state: SessionState): Promise<void>;
  /**
   * Session states and key-values of one account, all or none: one journal append, one
   * database statement (a session moved with its open question's expiry, former-sessions.ts).
   */
  writeTogether(writes: readonly StateWrite[]): Promise<void>;
  /** Durable key-values of one namespace (an adapter's, say). */
  kv(namespace: string): AdapterStateStore & { keys(): string[] };
  /**
   * Where identity links are kept when the key-values will not do (several machines: every node
   * sees them); undefined: the key-values. Required, like `holdSession`, so a store that wraps
   * another cannot drop it unnoticed.
   */
  readonly linkBook: LinkBook | undefined;
  /**
   * Several machines: holds a session no account owns (a linked person's, `person.<id>`) for this
   * node until the returned release is called. No other node runs a turn of it meanwhile, its chain
   * is read fresh from the database, and its session writes go through `unit`'s lease. Absent (one
   * machine), or for a session that lives under one account: the scheduler's per-session order is enough.
   */
  readonly holdSession: ((key: SessionKey, unit: { platform: string; accountId: string }, signal?: AbortSignal) => Promise<() => Promise<void>>) | undefined;
  /** Calls `listener` whenever the last pending entry is completed; returns an unsubscribe. */
  onDrained(listener: () => void): () => void;
  /** The bytes of a stored attachment of a pending entry. */
  readAttachment(attachment: StoredAttachment): Promise<Buffer>;
  /** Waits for writes and closes (the file store also compacts and releases its lock). */
  close(): Promise<void>;
  /** Drops everything without another write: what a crash leaves (tests). */
  abandon(): Promise<void>;
}
