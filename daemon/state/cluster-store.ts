/**
 * The core's `Store` on PostgreSQL, for a node of a bridge that runs on
 * several machines: one `UnitState` per platform account this node holds the
 * lease of, behind the same interface the file journal offers.
 *
 * Every fact lives in the unit (account) it belongs to, so it moves with the
 * account's lease:
 *
 * | fact                         | its unit                                              |
 * | ---------------------------- | ----------------------------------------------------- |
 * | an entry, its attachments    | the message's platform and account                    |
 * | a session chain              | the account its session base starts with (keys.ts)   |
 * | `adapter:<type>:<id>` values | that channel's account                                |
 * | `pairing` values             | the channel named in the key (pairing.ts)             |
 * | `relay:owed-notices` values  | the account in the chat key (keys.ts)                 |
 * | `relay:queue-modes` values   | the account in the chat key (keys.ts)                 |
 * | `relay:transcripts` values   | the platform and account named in the key             |
 * | `schedules` values (last slot) | the platform and account named in the key           |
 * | `questions` values (open questions' index) | the platform and account named in the key |
 * | identity links and codes     | none: tables of their own (postgres/identity-links.ts) |
 * | a linked person's session    | none: held by one node at a time (postgres/shared-sessions.ts) |
 *
 * Readers see only the units held now: an account another node owns has no
 * pending entries here, so nothing on this node starts its turns. A write for
 * a unit not held (any more) fails with `LeaseLostError`; one the database
 * refused (`StateWriteError`) is reported to `onWriteFailed`, so the daemon
 * can give the unit up and take it again from what the database holds.
 */
import { accountKeyOf, accountOfAdapterNamespace, encodeId, parseChatKey, type DedupeKey, type SessionKey } from "../vocabulary/keys.js";
import type { AdapterStateStore, CredentialStore, EventInbox } from "../vocabulary/adapter.js";
import type { HeldLease, PostgresState, UnitState } from "./postgres/index.js";
import type { JournalEntry, SessionState, StoredAttachment } from "../vocabulary/records.js";
import { DuplicateEntryError, LeaseLostError, StateWriteError } from "../vocabulary/state-errors.js";
import type { Store } from "../vocabulary/store.js";
import type { FileStoreBackend } from "../vocabulary/file-store.js";

/** One platform account of the config: the unit `<platform>:<accountId>`. */
export interface ClusterAccount {
  platform: string;
  accountId: string;
}

export const unitOf = (a: ClusterAccount): string => accountKeyOf(a.platform, a.accountId);

export interface ClusterStore extends Store {
  /** Loads a unit whose lease this node just acquired; its pending entries are returned in order, to be resumed. */
  adopt(lease: HeldLease): Promise<JournalEntry[]>;
  /** Forgets a unit (its lease is gone or being released): its entries and values vanish from this node's view. */
  drop(unit: string): void;
  /** Units held now. */
  units(): string[];
  /** The credentials of a unit this node holds (WhatsApp's linked device), fenced by its lease. */
  credentials(unit: string): CredentialStore;
  /** Reply files served by link: any node serves them; writes are fenced by the file's account's lease. */
  readonly fileStores: FileStoreBackend;
  /** The events kept for a unit this node holds (removal fenced by its lease). */
  inbox(unit: string): EventInbox;
}

export interface ClusterStoreDeps {
  state: PostgresState;
  /** Every account of the config (enabled ones): how session keys and kv keys find their unit. */
  accounts: readonly ClusterAccount[];
  /** A write the database refused (not a lost lease): the unit's state here may be behind the database's. */
  onWriteFailed?(unit: string, error: StateWriteError): void;
}

const notHeld = (unit: string) => new LeaseLostError(unit, 0, "this node does not hold it");

export function createClusterStore(deps: ClusterStoreDeps): ClusterStore {
  const { state } = deps;
  const held = new Map<string, UnitState>();
  const drained = new Set<() => void>();
  /** The unit of an account id (ids are unique across channels), and of a session base's head. */
  const byAccountId = new Map(deps.accounts.map((a) => [a.accountId, unitOf(a)]));
  const byHead = new Map(deps.accounts.map((a) => [`${encodeId(a.platform)}.${encodeId(a.accountId)}.`, unitOf(a)]));
  /** Sessions no account owns that this node holds now: the unit whose lease fences their writes, and their chain. */
  const shared = new Map<SessionKey, { unit: string; state: SessionState }>();

  function unitState(unit: string | undefined): UnitState {
    const u = unit === undefined ? undefined : held.get(unit);
    if (!u) throw notHeld(unit ?? "(no unit)");
    return u;
  }

  /** Runs a write of `unit`, reporting a database failure. */
  async function write<T>(unit: string, run: (u: UnitState) => Promise<T>): Promise<T> {
    try {
      return await run(unitState(unit));
    } catch (error) {
      // Only a failed connection can leave this node's view behind the database's; a write the
      // database refused changed nothing there, so reloading would not help (and would loop).
      if (error instanceof StateWriteError && error.transient) deps.onWriteFailed?.(unit, error);
      throw error;
    }
  }

  function unitOfEntry(id: string): string | undefined {
    for (const [unit, u] of held) if (u.get(id)) return unit;
    return undefined;
  }

  /** `"<instanceId> <sessionBase>"`: the base starts with the encoded platform and account. */
  function unitOfSession(key: SessionKey): string | undefined {
    const base = key.slice(key.indexOf(" ") + 1);
    for (const [head, unit] of byHead) if (base.startsWith(head)) return unit;
    return undefined;
  }

  function unitOfDedupeKey(key: DedupeKey): string | undefined {
    const [platform, accountId] = JSON.parse(key) as string[];
    return platform === undefined || accountId === undefined ? undefined : unitOf({ platform, accountId });
  }

  /** Where a kv namespace's key lives (see the table above); undefined: a namespace this store does not know. */
  function unitOfKv(namespace: string, key: string): string | undefined {
    const adapterAccount = accountOfAdapterNamespace(namespace);
    if (adapterAccount) return adapterAccount;
    if (namespace === "pairing") return byAccountId.get(key.split("\u0000")[1] ?? "");
    // A voice note's transcript lives with its entry's account (core/voice-notes.ts: `<platform>\0<account>\0<entry id>\0<index>`).
    // So are a schedule's last slot and an open question's index entry (`<platform>\0<account>\0...`).
    if (namespace === "relay:transcripts" || namespace === "schedules" || namespace === "questions") {
      const [platform, accountId] = key.split("\u0000");
      return platform === undefined || accountId === undefined ? undefined : unitOf({ platform, accountId });
    }
    if (namespace === "relay:owed-notices" || namespace === "relay:queue-modes") {
      const chat = parseChatKey(key);
      if (!chat) return undefined;
      const [platform, accountId] = JSON.parse(chat) as [string, string];
      return unitOf({ platform, accountId });
    }
    return undefined;
  }

  function pending(): JournalEntry[] {
    return [...held.values()].flatMap((u) => u.pending()).sort((a, b) => a.seq - b.seq);
  }

  return {
    pending,
    get(id) {
      for (const u of held.values()) {
        const e = u.get(id);
        if (e) return e;
      }
      return undefined;
    },
    has(key) {
      // The fast path only: the database's unique key decides (`add` rejects a duplicate).
      const unit = unitOfDedupeKey(key);
      const u = unit === undefined ? undefined : held.get(unit);
      return !!u?.pending().some((e) => e.key === key);
    },
    async add({ kind, key, message, route }) {
      const unit = unitOf(message);
      const accepted = await write(unit, (u) => u.accept({ kind, key, message, route }));
      if (accepted.duplicate) throw new DuplicateEntryError();
      return accepted.entry;
    },
    async recordReply(leaderId, reply, session) {
      const unit = unitOfEntry(leaderId);
      await write(unit ?? leaderId, (u) => u.recordReply(leaderId, reply, session && { base: session.key, state: session.state }));
      const hold = session && shared.get(session.key);
      if (hold && session) hold.state = session.state;
    },
    recordSent(id, n) {
      return write(unitOfEntry(id) ?? id, (u) => u.recordSent(id, n));
    },
    recordPreview(id, preview) {
      return write(unitOfEntry(id) ?? id, (u) => u.recordPreview(id, preview));
    },
    async complete(ids) {
      const byUnit = new Map<string, string[]>();
      for (const id of ids) {
        const unit = unitOfEntry(id);
        if (unit !== undefined) byUnit.set(unit, [...(byUnit.get(unit) ?? []), id]);
      }
      for (const [unit, unitIds] of byUnit) await write(unit, (u) => u.complete(unitIds));
      if (byUnit.size && pending().length === 0) for (const l of [...drained]) l();
    },
    session(key): SessionState {
      const hold = shared.get(key);
      if (hold) return hold.state;
      const unit = unitOfSession(key);
      return (unit === undefined ? undefined : held.get(unit)?.session(key)) ?? { generation: 0 };
    },
    async setSession(key, value) {
      const hold = shared.get(key);
      const unit = hold?.unit ?? unitOfSession(key);
      await write(unit ?? key, (u) => u.setSession(key, value));
      if (hold) hold.state = value;
    },
    async writeTogether(writes) {
      const units = new Set(writes.map((w) => ("session" in w ? (shared.get(w.session)?.unit ?? unitOfSession(w.session)) : unitOfKv(w.namespace, w.key))));
      const [unit, ...others] = units;
      if (unit === undefined || others.length) throw new Error("state: writes made together must all belong to one account (cluster-store.ts)");
      await write(unit, (u) =>
        u.writeTogether(writes.map((w) => ("session" in w ? { base: w.session, state: w.state } : { namespace: w.namespace, key: w.key, value: w.value }))),
      );
      for (const w of writes) {
        const hold = "session" in w ? shared.get(w.session) : undefined;
        if (hold && "session" in w) hold.state = w.state;
      }
    },
    linkBook: state.linkBook((unit, operation, work) => write(unit, (u) => u.fenced(operation, work))),
    fileStores: state.fileStores((unit, operation, work) => write(unit, (u) => u.fenced(operation, work))),
    async holdSession(key, account, signal) {
      // A session under one account is that account's owner's alone: the scheduler orders it.
      if (unitOfSession(key) !== undefined) return async () => {};
      const hold = await state.holdSession(key, signal);
      shared.set(key, { unit: unitOf(account), state: hold.state ?? { generation: 0 } });
      return async () => {
        shared.delete(key);
        await hold.release();
      };
    },
    kv(namespace): AdapterStateStore & { keys(): string[] } {
      const home = (key: string) => {
        const unit = unitOfKv(namespace, key);
        if (unit === undefined) throw new Error(`state: the kv namespace "${namespace}" has no account to live in (cluster-store.ts)`);
        return unit;
      };
      return {
        get<T>(key: string): T | undefined {
          const unit = home(key);
          return held.get(unit)?.kv(namespace).get<T>(key);
        },
        set(key: string, value: unknown) {
          return write(home(key), (u) => u.kv(namespace).set(key, value));
        },
        keys: () => [...held.values()].flatMap((u) => u.kv(namespace).keys()),
      };
    },
    onDrained(listener) {
      drained.add(listener);
      return () => drained.delete(listener);
    },
    readAttachment(a: StoredAttachment) {
      // Stored as `attachment/<entry id>/<index>` (unit-state.ts).
      const [, entryId = "", index = ""] = a.file.split("/");
      return unitState(unitOfEntry(entryId)).attachment(entryId, Number(index));
    },
    async adopt(lease) {
      const u = await state.openUnit(lease);
      // The lease may have ended while the unit loaded: then it is not this node's to show.
      if (!lease.valid()) return [];
      held.set(lease.unit, u);
      return u.pending();
    },
    drop(unit) {
      held.delete(unit);
    },
    units: () => [...held.keys()],
    credentials: (unit) => ({
      read: (type, ids) => unitState(unit).readAuth(type, ids),
      write: (data) => write(unit, (u) => u.writeAuth(data)),
      clear: () => write(unit, (u) => u.clearAuth()),
    }),
    inbox: (unit) => ({
      pending: () => state.inbox.pending(unit),
      remove: (keys) => write(unit, (u) => u.removeInbox(keys)),
      watch: (wake) => state.inbox.watch(unit, wake),
    }),
    close: () => state.close(),
    abandon: () => state.abandon(),
  };
}
