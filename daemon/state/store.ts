/**
 * The daemon's durable state in its dataDir:
 *
 *   journal.jsonl   append-only records, fsync'ed before anything is acknowledged
 *   snapshot.json   the state as of journal record `lastSeq` (atomic replace)
 *   spool/<id>/     attachments of pending messages
 *   daemon.lock     pid of the one daemon using this dataDir
 *
 * State lives in memory and every change is one journal record; when the
 * journal grows past `compactBytes` the whole state is snapshotted and the
 * journal emptied. Replay skips records at or below the snapshot's `lastSeq`,
 * so a crash between snapshot and truncation applies nothing twice.
 *
 * An inbound message is an entry from acceptance until its reply is fully
 * delivered; the reply's chunks and the delivery progress are recorded, so a
 * restart never asks the service twice for a recorded reply nor re-sends a
 * recorded chunk.
 */
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Clock } from "../../shared/clock.js";
import { cryptoRandom, hex, type Random } from "../../shared/random.js";
import { acquireDirLock, syncDirectory, writeFileAtomic, writeFileDurable, type DirLock } from "../../shared/durable-files.js";
import { pathComponent } from "../../shared/util/names.js";
import type { AdapterStateStore, InboundMessage } from "../core/adapter.js";
import type { DedupeKey } from "../core/keys.js";
import { JournalClosedError, openJournalFile, type JournalFile } from "./journal.js";
import {
  parseJournalRecord,
  parseSnapshot,
  StateFileError,
  STATE_VERSION,
  type EntryKind,
  type JournalEntry,
  type JournalRecord,
  type SessionState,
  type Snapshot,
  type StoredAttachment,
  type StoredPreview,
  type StoredReply,
  type StoredRoute,
} from "./records.js";

// The errors a caller of the store branches on, beside the store they come from.
export { DataDirLockedError } from "../../shared/durable-files.js";
export { JournalClosedError } from "./journal.js";
export { StateFileError } from "./records.js";

export type {
  EntryKind,
  JournalEntry,
  SessionState,
  StoredAttachment,
  StoredMessage,
  StoredPreview,
  StoredReply,
  StoredRoute,
} from "./records.js";

/** A record as passed to `commit`, before it is numbered. */
type Unnumbered<R> = R extends unknown ? Omit<R, "s"> : never;

export interface StoreOptions {
  dataDir: string;
  clock: Clock;
  random?: Random;
  /** Snapshot and empty the journal once it is this large (default 4 MiB). */
  compactBytes?: number;
  /** Completed message keys remembered for dedupe (default 20,000). */
  recentKeys?: number;
  /** Take the dataDir lock (default true). */
  lock?: boolean;
}

export interface Store {
  readonly dataDir: string;
  /** Entries not yet fully answered, in acceptance order. */
  pending(): JournalEntry[];
  get(id: string): JournalEntry | undefined;
  /** True if a message with this dedupe key is pending, being accepted, or was answered recently. */
  has(key: DedupeKey): boolean;
  /** Spools the attachments, journals the entry; resolves once both are on disk. */
  add(input: { kind: EntryKind; key: DedupeKey; message: InboundMessage; route: StoredRoute }): Promise<JournalEntry>;
  /** Records the reply of `leaderId`, with the session change it caused, in one write. */
  recordReply(leaderId: string, reply: StoredReply, session?: { key: string; state: SessionState }): Promise<void>;
  recordSent(id: string, sent: number): Promise<void>;
  /** Records a streamed reply's preview messages (after each one is created); null closes it (a later answer starts anew). */
  recordPreview(id: string, preview: StoredPreview | null): Promise<void>;
  /** Forgets entries (answered, or given up); their keys stay known for dedupe. */
  complete(ids: string[]): Promise<void>;
  /**
   * The session chain of a session key (`sessionKeyOf` in core/keys.ts: the
   * instance and the session base). Typed `string` until service-call.ts
   * builds its keys with keys.ts too; then this narrows to `SessionKey`.
   */
  session(key: string): SessionState;
  setSession(key: string, state: SessionState): Promise<void>;
  /** Durable key-values of one namespace (an adapter's, say). */
  kv(namespace: string): AdapterStateStore & { keys(): string[] };
  /** Calls `listener` whenever the last pending entry is completed; returns an unsubscribe. */
  onDrained(listener: () => void): () => void;
  /** Absolute path of a spooled attachment. */
  attachmentPath(attachment: StoredAttachment): string;
  /** Snapshot now and empty the journal. */
  compact(): Promise<void>;
  readonly journalBytes: number;
  /** Waits for writes, compacts, releases the lock. */
  close(): Promise<void>;
  /** Drops everything without another write and releases the lock: what a crash leaves (tests). */
  abandon(): Promise<void>;
}

export async function openStore(options: StoreOptions): Promise<Store> {
  const { dataDir, clock } = options;
  const random = options.random ?? cryptoRandom;
  const compactBytes = options.compactBytes ?? 4 * 1024 * 1024;
  const recentCap = options.recentKeys ?? 20_000;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const lock: DirLock | undefined = options.lock === false ? undefined : acquireDirLock(dataDir);

  const journalPath = join(dataDir, "journal.jsonl");
  const snapshotPath = join(dataDir, "snapshot.json");
  const spoolDir = join(dataDir, "spool");

  const entries = new Map<string, JournalEntry>();
  /** Session chains by session key. */
  const sessions = new Map<string, SessionState>();
  const kvs = new Map<string, Map<string, unknown>>();
  /** Completed entries' keys, oldest first, at most `recentCap`; `recentSet` holds the same keys. */
  const recent: DedupeKey[] = [];
  const recentSet = new Set<DedupeKey>();
  /** Pending entries' keys -> entry id. */
  const liveKeys = new Map<DedupeKey, string>();
  /** Keys of `add` calls not yet journaled (a concurrent duplicate is refused meanwhile). */
  const accepting = new Set<DedupeKey>();
  /** Entry ids handed out but not yet journaled. */
  const ids = new Set<string>();
  let addChain: Promise<void> = Promise.resolve();
  let seq = 0;
  const drainedListeners = new Set<() => void>();

  const remember = (key: DedupeKey) => {
    if (recentSet.has(key)) return;
    recent.push(key);
    recentSet.add(key);
    while (recent.length > recentCap) recentSet.delete(recent.shift()!);
  };

  const apply = (r: JournalRecord) => {
    switch (r.t) {
      case "msg":
        entries.set(r.e.id, r.e);
        liveKeys.set(r.e.key, r.e.id);
        break;
      case "reply": {
        const lead = entries.get(r.id);
        if (!lead) break;
        lead.reply = r.reply;
        for (const m of r.reply.members) {
          const e = entries.get(m);
          if (e && m !== r.id) e.leader = r.id;
        }
        break;
      }
      case "sent": {
        const e = entries.get(r.id);
        if (e) e.sent = Math.max(e.sent, r.n);
        break;
      }
      case "preview": {
        const e = entries.get(r.id);
        if (e && r.preview) e.preview = r.preview;
        else if (e) delete e.preview;
        break;
      }
      case "done":
        for (const id of r.ids) {
          const e = entries.get(id);
          if (!e) continue;
          entries.delete(id);
          liveKeys.delete(e.key);
          remember(e.key);
        }
        if (entries.size === 0) for (const l of [...drainedListeners]) l();
        break;
      case "session":
        sessions.set(r.base, r.state);
        break;
      case "kv": {
        const ns = kvs.get(r.ns) ?? new Map();
        kvs.set(r.ns, ns);
        if (r.v === undefined) ns.delete(r.k);
        else ns.set(r.k, r.v);
        break;
      }
    }
  };

  // Load: snapshot, then the journal records after it.
  let snapshot: Snapshot | undefined;
  let snapshotText: string | undefined;
  try {
    snapshotText = await readFile(snapshotPath, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (snapshotText !== undefined) {
    let raw: unknown;
    try {
      raw = JSON.parse(snapshotText);
    } catch {
      throw new StateFileError(snapshotPath, "not valid JSON. Move it aside to start without it, or restore it from a backup.");
    }
    snapshot = parseSnapshot(snapshotPath, raw);
  }
  if (snapshot) {
    seq = snapshot.lastSeq;
    for (const e of [...snapshot.entries].sort((a, b) => a.seq - b.seq)) {
      entries.set(e.id, e);
      liveKeys.set(e.key, e.id);
    }
    for (const [key, state] of Object.entries(snapshot.sessions)) sessions.set(key, state);
    for (const [ns, values] of Object.entries(snapshot.kv)) kvs.set(ns, new Map(Object.entries(values)));
    for (const k of snapshot.recentKeys) remember(k);
  }
  const journal: JournalFile = await openJournalFile(journalPath);
  const floor = seq;
  for (const [i, raw] of journal.initial.entries()) {
    const r = parseJournalRecord(journalPath, i + 1, raw);
    if (r.s <= floor) continue;
    apply(r);
    seq = Math.max(seq, r.s);
  }
  await collectSpoolGarbage();

  let closed = false;
  let compacting: Promise<void> | undefined;

  function serialize(): string {
    const data: Snapshot = {
      version: STATE_VERSION,
      lastSeq: seq,
      entries: [...entries.values()],
      sessions: Object.fromEntries(sessions),
      kv: Object.fromEntries([...kvs].map(([ns, m]) => [ns, Object.fromEntries(m)])),
      recentKeys: [...recent],
    };
    return JSON.stringify(data);
  }

  function compactNow(): Promise<void> {
    compacting ??= journal
      .compact(async () => {
        const text = serialize(); // synchronously, before any await: see JournalFile.compact
        await writeFileAtomic(snapshotPath, text);
      })
      .finally(() => {
        compacting = undefined;
      });
    return compacting;
  }

  /** Applies records in memory now (readers see them at once) and resolves when they are on disk. */
  function commit(records: Unnumbered<JournalRecord>[]): Promise<void> {
    if (closed) return Promise.reject(new JournalClosedError());
    const numbered = records.map((r): JournalRecord => ({ ...r, s: ++seq }));
    for (const r of numbered) apply(r);
    const written = journal.append(numbered);
    if (journal.size > compactBytes && !compacting) {
      // Not awaited by the writer: its records are durable once `written` resolves.
      compactNow().catch(() => undefined);
    }
    return written;
  }

  async function collectSpoolGarbage(): Promise<void> {
    let dirs: string[];
    try {
      dirs = await readdir(spoolDir);
    } catch {
      return;
    }
    for (const d of dirs) if (!entries.has(d)) await rm(join(spoolDir, d), { recursive: true, force: true });
  }

  const store: Store = {
    dataDir,
    pending: () => [...entries.values()],
    get: (id) => entries.get(id),
    has: (key) => liveKeys.has(key) || accepting.has(key) || recentSet.has(key),
    async add({ kind, key, message, route }) {
      if (closed) throw new JournalClosedError();
      accepting.add(key);
      // Entries are journaled in call order even when one spools a large file:
      // the order of acceptance is the order turns run in.
      const before = addChain;
      let release!: () => void;
      addChain = new Promise<void>((resolve) => (release = resolve));
      let id = "";
      try {
        const acceptedAt = clock.now();
        do id = `${acceptedAt.toString(36)}-${hex(random, 6)}`;
        while (entries.has(id) || ids.has(id));
        ids.add(id);
        let attachments: StoredAttachment[] | undefined;
        try {
          if (message.attachments?.length) {
            const dir = join(spoolDir, id);
            await mkdir(dir, { recursive: true, mode: 0o700 });
            attachments = [];
            for (const [i, a] of message.attachments.entries()) {
              const file = join("spool", id, `${i}-${pathComponent(a.fileName, { keep: "end", fallback: "file" })}`);
              await writeFileDurable(join(dataDir, file), a.data);
              attachments.push({ kind: a.kind, fileName: a.fileName, ...(a.mimeType ? { mimeType: a.mimeType } : {}), size: a.data.length, file });
            }
            await syncDirectory(spoolDir);
          }
        } finally {
          await before;
        }
        const { attachments: _data, ...rest } = message;
        const entry: JournalEntry = {
          id,
          seq: seq + 1, // the record's own number (assigned in commit, synchronously): acceptance order
          kind,
          key,
          acceptedAt,
          message: { ...rest, ...(attachments ? { attachments } : {}) },
          route,
          sent: 0,
        };
        const written = commit([{ t: "msg", e: entry }]);
        release();
        await written;
        return entries.get(id) ?? entry;
      } finally {
        release();
        accepting.delete(key);
        ids.delete(id);
      }
    },
    recordReply(leaderId, reply, session) {
      const records: Unnumbered<JournalRecord>[] = [];
      // The record's field is named `base` on disk; it holds the session key.
      if (session) records.push({ t: "session", base: session.key, state: session.state });
      records.push({ t: "reply", id: leaderId, reply });
      return commit(records);
    },
    recordSent(id, n) {
      return commit([{ t: "sent", id, n }]);
    },
    recordPreview(id, preview) {
      return commit([{ t: "preview", id, preview: preview && structuredClone(preview) }]);
    },
    async complete(ids) {
      const known = ids.filter((id) => entries.has(id));
      if (!known.length) return;
      const spooled = known.filter((id) => entries.get(id)?.message.attachments?.length);
      await commit([{ t: "done", ids: known }]);
      for (const id of spooled) await rm(join(spoolDir, id), { recursive: true, force: true });
    },
    session: (key) => sessions.get(key) ?? { generation: 0 },
    setSession(key, state) {
      return commit([{ t: "session", base: key, state }]);
    },
    kv(namespace) {
      return {
        get<T>(key: string): T | undefined {
          return kvs.get(namespace)?.get(key) as T | undefined;
        },
        set(key: string, value: unknown) {
          return commit([{ t: "kv", ns: namespace, k: key, ...(value === undefined ? {} : { v: value }) }]);
        },
        keys: () => [...(kvs.get(namespace)?.keys() ?? [])],
      };
    },
    onDrained(listener) {
      drainedListeners.add(listener);
      return () => drainedListeners.delete(listener);
    },
    attachmentPath: (a) => join(dataDir, a.file),
    compact: () => compactNow(),
    get journalBytes() {
      return journal.size;
    },
    async close() {
      if (closed) return;
      try {
        await compactNow();
      } finally {
        closed = true;
        await journal.close();
        lock?.release();
      }
    },
    async abandon() {
      closed = true;
      await journal.close().catch(() => undefined);
      lock?.release();
    },
  };
  return store;
}
