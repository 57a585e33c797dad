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
import type { InboundMessage } from "../vocabulary/adapter.js";
import type { DedupeKey } from "../vocabulary/keys.js";
import { JournalClosedError, openJournalFile, type JournalFile } from "./journal.js";
import {
  parseJournalRecord,
  parseSnapshot,
  StateFileError,
  type JournalEntry,
  type JournalRecord,
  type Snapshot,
  type StoredAttachment,
} from "../vocabulary/records.js";
import { StoreState } from "./store-state.js";
import type { Store } from "../vocabulary/store.js";

// The errors a caller of the store branches on, beside the store they come from.
export { DataDirLockedError } from "../../shared/durable-files.js";
export { JournalClosedError } from "./journal.js";
export { StateFileError } from "../vocabulary/records.js";
export { DuplicateEntryError } from "../vocabulary/state-errors.js";

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

/** The file journal's store: the core's `Store` plus its files. */
export interface FileStore extends Store {
  readonly dataDir: string;
  /** Absolute path of a spooled attachment. */
  attachmentPath(attachment: StoredAttachment): string;
  /** Snapshot now and empty the journal. */
  compact(): Promise<void>;
  readonly journalBytes: number;
}

export async function openStore(options: StoreOptions): Promise<FileStore> {
  const { dataDir, clock } = options;
  const random = options.random ?? cryptoRandom;
  const compactBytes = options.compactBytes ?? 4 * 1024 * 1024;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const lock: DirLock | undefined = options.lock === false ? undefined : acquireDirLock(dataDir);
  const paths = pathsOf(dataDir);

  const state = new StoreState(options.recentKeys ?? 20_000);
  const snapshot = await readSnapshot(paths.snapshot);
  if (snapshot) state.load(snapshot);
  const journal: JournalFile = await openJournalFile(paths.journal);
  replayJournal(state, journal, paths.journal);
  await collectSpoolGarbage(paths.spool, state);

  /** Keys of `add` calls not yet journaled (a concurrent duplicate is refused meanwhile). */
  const accepting = new Set<DedupeKey>();
  /** Entry ids handed out but not yet journaled. */
  const ids = new Set<string>();
  /** Settles when the last `add` has journaled its entry: entries are journaled in call order. */
  let addChain: Promise<void> = Promise.resolve();
  let closed = false;
  let compacting: Promise<void> | undefined;

  function compactNow(): Promise<void> {
    compacting ??= journal
      .compact(async () => {
        const text = JSON.stringify(state.snapshot()); // synchronously, before any await: see JournalFile.compact
        await writeFileAtomic(paths.snapshot, text);
      })
      .finally(() => {
        compacting = undefined;
      });
    return compacting;
  }

  /** Applies records in memory now (readers see them at once) and resolves when they are on disk. */
  function commit(records: Unnumbered<JournalRecord>[]): Promise<void> {
    if (closed) return Promise.reject(new JournalClosedError());
    const numbered = records.map((r, i): JournalRecord => ({ ...r, s: state.lastSeq + 1 + i }));
    for (const r of numbered) state.apply(r);
    const written = journal.append(numbered);
    if (journal.size > compactBytes && !compacting) {
      // Not awaited by the writer: its records are durable once `written` resolves.
      compactNow().catch(() => undefined);
    }
    return written;
  }

  /** A fresh entry id: acceptance time, then random hex, unique among pending and in-flight entries. */
  function newEntryId(acceptedAt: number): string {
    let id: string;
    do id = `${acceptedAt.toString(36)}-${hex(random, 6)}`;
    while (state.entries.has(id) || ids.has(id));
    ids.add(id);
    return id;
  }

  const store: FileStore = {
    dataDir,
    pending: () => [...state.entries.values()],
    get: (id) => state.entries.get(id),
    has: (key) => state.knows(key) || accepting.has(key),
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
        id = newEntryId(acceptedAt);
        let attachments: StoredAttachment[] | undefined;
        try {
          attachments = await spoolAttachments(dataDir, id, message.attachments);
        } finally {
          await before;
        }
        const { attachments: _data, ...rest } = message;
        const entry: JournalEntry = {
          id,
          seq: state.lastSeq + 1, // the record's own number (assigned in commit, synchronously): acceptance order
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
        return state.entries.get(id) ?? entry;
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
      const known = ids.filter((id) => state.entries.has(id));
      if (!known.length) return;
      const spooled = known.filter((id) => state.entries.get(id)?.message.attachments?.length);
      await commit([{ t: "done", ids: known }]);
      for (const id of spooled) await rm(join(paths.spool, id), { recursive: true, force: true });
    },
    session: (key) => state.sessions.get(key) ?? { generation: 0 },
    setSession(key, session) {
      return commit([{ t: "session", base: key, state: session }]);
    },
    kv(namespace) {
      return {
        get<T>(key: string): T | undefined {
          return state.kvs.get(namespace)?.get(key) as T | undefined;
        },
        set(key: string, value: unknown) {
          return commit([{ t: "kv", ns: namespace, k: key, ...(value === undefined ? {} : { v: value }) }]);
        },
        keys: () => [...(state.kvs.get(namespace)?.keys() ?? [])],
      };
    },
    onDrained: (listener) => state.onDrained(listener),
    attachmentPath: (a) => join(dataDir, a.file),
    readAttachment: (a) => readFile(join(dataDir, a.file)),
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

function pathsOf(dataDir: string) {
  return { journal: join(dataDir, "journal.jsonl"), snapshot: join(dataDir, "snapshot.json"), spool: join(dataDir, "spool") };
}

/** The snapshot file, parsed; undefined when there is none yet. */
async function readSnapshot(path: string): Promise<Snapshot | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") return undefined;
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new StateFileError(path, "not valid JSON. Move it aside to start without it, or restore it from a backup.");
  }
  return parseSnapshot(path, raw);
}

/** Applies the journal's records after the snapshot's (a crash between snapshot and truncation leaves some it already holds). */
function replayJournal(state: StoreState, journal: JournalFile, path: string): void {
  const floor = state.lastSeq;
  for (const [i, raw] of journal.initial.entries()) {
    const r = parseJournalRecord(path, i + 1, raw);
    if (r.s > floor) state.apply(r);
  }
}

/** Spool folders of entries no longer pending (completed while the daemon went down) are removed. */
async function collectSpoolGarbage(spoolDir: string, state: StoreState): Promise<void> {
  let dirs: string[];
  try {
    dirs = await readdir(spoolDir);
  } catch {
    return;
  }
  for (const d of dirs) if (!state.entries.has(d)) await rm(join(spoolDir, d), { recursive: true, force: true });
}

/** Writes an entry's attachments to `spool/<id>/`, durably; undefined when it has none. */
async function spoolAttachments(dataDir: string, id: string, attachments: InboundMessage["attachments"]): Promise<StoredAttachment[] | undefined> {
  if (!attachments?.length) return undefined;
  const spoolDir = join(dataDir, "spool");
  await mkdir(join(spoolDir, id), { recursive: true, mode: 0o700 });
  const stored: StoredAttachment[] = [];
  for (const [i, a] of attachments.entries()) {
    const file = join("spool", id, `${i}-${pathComponent(a.fileName, { keep: "end", fallback: "file" })}`);
    await writeFileDurable(join(dataDir, file), a.data);
    stored.push({ kind: a.kind, fileName: a.fileName, ...(a.mimeType ? { mimeType: a.mimeType } : {}), size: a.data.length, file });
  }
  await syncDirectory(spoolDir);
  return stored;
}
