/**
 * The composite keys of the daemon, one constructor each, each its own type:
 * a `ChatKey` cannot be passed where a `SessionKey` is expected, though both
 * are strings at run time.
 *
 * | key          | made of                         | format (do not change)                 | lives in                          |
 * | ------------ | ------------------------------- | -------------------------------------- | --------------------------------- |
 * | `ChatKey`    | platform, account, chat[, topic]| JSON array                             | notices' owed kv (journal), memory |
 * | `SessionKey` | instance, session base          | `"<instanceId> <sessionBase>"`         | journal `session` records, snapshot |
 * | `DedupeKey`  | platform, account, chat, message| JSON array                             | journal entries, snapshot `recentKeys` |
 * | `SlotKey`    | instance, session base          | `"<instanceId>\0<sessionBase>"`        | the scheduler's memory only       |
 * | `AdapterKey` | platform, account               | `"<platform>\0<accountId>"`            | the daemon's memory only          |
 * | `AccountKey` | platform, account               | `"<platform>:<accountId>"`             | lease units, adapter kv namespaces (`adapter:<key>`), PostgreSQL rows, /healthz |
 *
 * The persisted formats are on disk in existing data directories: a change
 * would make a restarted daemon forget sessions and answer duplicates.
 *
 * Names: a *session base* (`StoredRoute.sessionBase`, from routing.ts) names a
 * conversation whatever instance answers it; a *session key* is the base on
 * one instance (a response id means nothing to another instance).
 */
import { createHash } from "node:crypto";
import { z } from "zod";

/** A string that is a key of kind `B` (a compile-time mark only). */
type Key<B extends string> = string & { readonly __brand: B };

/** A chat: per-chat bookkeeping (notices, command order, the streaming gate). */
export type ChatKey = Key<"ChatKey">;
/** A conversation on one instance: the session chain's key in the store. */
export type SessionKey = Key<"SessionKey">;
/** One platform message: the store's dedupe key. */
export type DedupeKey = Key<"DedupeKey">;
/** The scheduler's per-session slot. */
export type SlotKey = Key<"SlotKey">;
/** One adapter account, in the daemon's adapter index. */
export type AdapterKey = Key<"AdapterKey">;
/** One account as the outside sees it: a lease's unit, its adapter's state, /healthz. */
export type AccountKey = Key<"AccountKey">;

interface ChatIds {
  platform: string;
  accountId: string;
  chatId: string;
}

/**
 * A forum topic is a chat of its own for the bookkeeping (its own context, its
 * own order); a chat without topics keeps the three-part key it always had.
 */
export const chatKeyOf = (m: ChatIds & { threadId?: string | undefined }): ChatKey =>
  JSON.stringify(m.threadId === undefined ? [m.platform, m.accountId, m.chatId] : [m.platform, m.accountId, m.chatId, m.threadId]) as ChatKey;

/** The dedupe key stays per chat: a Telegram message id is unique in its chat, whichever topic it is in. */
export const sessionKeyOf = (route: { instanceId: string; sessionBase: string }): SessionKey => `${route.instanceId} ${route.sessionBase}` as SessionKey;

export const dedupeKeyOf = (m: ChatIds & { messageId: string }): DedupeKey => JSON.stringify([m.platform, m.accountId, m.chatId, m.messageId]) as DedupeKey;

export const slotKeyOf = (instanceId: string, sessionBase: string): SlotKey => `${instanceId}\u0000${sessionBase}` as SlotKey;

export const adapterKeyOf = (platform: string, accountId: string): AdapterKey => `${platform}\u0000${accountId}` as AdapterKey;

/** A platform (a channel's `type`) and an account (a channel's `id`) as one key; the platform never holds a ":". */
export const accountKeyOf = (platform: string, accountId: string): AccountKey => `${platform}:${accountId}` as AccountKey;

/** The platform and account of an account key (split at its first ":"), or undefined when `text` is not one. */
export function parseAccountKey(text: string): { platform: string; accountId: string } | undefined {
  const at = text.indexOf(":");
  if (at <= 0 || at === text.length - 1) return undefined;
  return { platform: text.slice(0, at), accountId: text.slice(at + 1) };
}

const ADAPTER_NS = "adapter:";

/** The key-value namespace an account's adapter keeps its own state in (an update offset, a session). */
export const adapterNamespaceOf = (platform: string, accountId: string): string => `${ADAPTER_NS}${accountKeyOf(platform, accountId)}`;

/** The account whose adapter state a namespace is, or undefined when it is none's. */
export function accountOfAdapterNamespace(namespace: string): AccountKey | undefined {
  if (!namespace.startsWith(ADAPTER_NS)) return undefined;
  const key = namespace.slice(ADAPTER_NS.length);
  return parseAccountKey(key) ? (key as AccountKey) : undefined;
}

/** Whether `text` is a JSON array of exactly `n` strings (the format of chat and dedupe keys). */
function isJsonStrings(text: string, n: number): boolean {
  if (!text.startsWith("[")) return false;
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) && parsed.length === n && parsed.every((p) => typeof p === "string");
  } catch {
    return false;
  }
}

/** A chat key read back from disk (a topic's has four parts), or undefined when `text` is not one. */
export const parseChatKey = (text: string): ChatKey | undefined => (isJsonStrings(text, 3) || isJsonStrings(text, 4) ? (text as ChatKey) : undefined);

/** A dedupe key as stored in the journal and snapshot: parsed on read, never cast. */
export const DedupeKeySchema = z.custom<DedupeKey>((v) => typeof v === "string" && isJsonStrings(v, 4), {
  message: "not a dedupe key (a JSON array of platform, account, chat and message id)",
});

const PLAIN_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * One session-base component (routing.ts joins them with "."; the cluster
 * store reads the account back from them), from `[A-Za-z0-9_:-]` only and
 * never containing the "." separator. Plain ids pass through; anything else (WhatsApp jids,
 * long or odd ids) becomes a readable stem plus a 128-bit hash after ":", a
 * character plain ids cannot contain, so the two forms never collide.
 */
export function encodeId(id: string): string {
  if (PLAIN_ID.test(id)) return id;
  const stem = id.replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 24);
  const hash = createHash("sha256").update(id, "utf8").digest("base64url").slice(0, 22);
  return `${stem}:${hash}`;
}
