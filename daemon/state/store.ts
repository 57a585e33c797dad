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
import type { AdapterStateStore, InboundMessage } from "../vocabulary/adapter.js";
import type { DedupeKey, SessionKey } from "../vocabulary/keys.js";
import { JournalClosedError, openJournalFile, type JournalFile } from "./journal.js";
import {
  parseJournalRecord,
  parseSnapshot,
  StateFileError,
  type JournalEntry,
  type JournalRecord,
  type SessionState,
  type Snapshot,
  type StoredAttachment,
  type StoredPreview,
  type StoredReply,
} from "../vocabulary/records.js";
import { StoreState } from "./store-state.js";
import type { StateWrite, Store } from "../vocabulary/store.js";

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
  const { dataDir } = options;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const lock: DirLock | undefined = options.lock === false ? undefined : acquireDirLock(dataDir);
  const paths = pathsOf(dataDir);
  const state = new StoreState(options.recentKeys ?? 20_000);
  const snapshot = await readSnapshot(paths.snapshot);
  if (snapshot) state.load(snapshot);
  const journal: JournalFile = await openJournalFile(paths.journal);
  replayJournal(state, journal, paths.journal);
  await collectSpoolGarbage(paths.spool, state);
  return new JournalStore({ options, lock, state, journal });
}

/** The file journal's `Store`, once opened: the state in memory and the journal every change goes to. */
class JournalStore implements FileStore {
  readonly dataDir: string;
  /** One machine: links live in the key-values (core/identity-links.ts). */
  readonly linkBook = undefined;
  /** One machine: every session is this daemon's; the scheduler orders its turns. */
  readonly holdSession = undefined;
  /** The journal, snapshot and spool under `dataDir`. */
  readonly #paths: ReturnType<typeof pathsOf>;
  /** Acceptance times (and so entry ids). */
  readonly #clock: Clock;
  /** The random part of entry ids. */
  readonly #random: Random;
  /** Snapshot and empty the journal once it is larger than this. */
  readonly #compactBytes: number;
  /** The dataDir's lock, released on close (none when opened with `lock: false`). */
  readonly #lock: DirLock | undefined;
  /** The state as of the journal's last record: readers see a change as soon as it is committed. */
  readonly #state: StoreState;
  /** Holds every record after the snapshot's; closed with the store. */
  readonly #journal: JournalFile;
  /** Keys of `add` calls not yet journaled (a concurrent duplicate is refused meanwhile). */
  readonly #accepting = new Set<DedupeKey>();
  /** Entry ids handed out but not yet journaled. */
  readonly #ids = new Set<string>();
  /** Settles when the last `add` has journaled its entry: entries are journaled in call order. */
  #addChain: Promise<void> = Promise.resolve();
  /** Set by `close` (once its compaction ran) or `abandon`: no more writes. */
  #closed = false;
  /** The compaction under way, if any: at most one at a time. */
  #compacting: Promise<void> | undefined;

  constructor(opened: { options: StoreOptions; lock: DirLock | undefined; state: StoreState; journal: JournalFile }) {
    const { options } = opened;
    this.dataDir = options.dataDir;
    this.#paths = pathsOf(options.dataDir);
    this.#clock = options.clock;
    this.#random = options.random ?? cryptoRandom;
    this.#compactBytes = options.compactBytes ?? 4 * 1024 * 1024;
    this.#lock = opened.lock;
    this.#state = opened.state;
    this.#journal = opened.journal;
  }

  get journalBytes(): number {
    return this.#journal.size;
  }

  pending(): JournalEntry[] {
    return [...this.#state.entries.values()];
  }

  get(id: string): JournalEntry | undefined {
    return this.#state.entries.get(id);
  }

  has(key: DedupeKey): boolean {
    return this.#state.knows(key) || this.#accepting.has(key);
  }

  async add({ kind, key, message, route }: Parameters<Store["add"]>[0]): Promise<JournalEntry> {
    if (this.#closed) throw new JournalClosedError();
    const state = this.#state;
    this.#accepting.add(key);
    // Entries are journaled in call order even when one spools a large file:
    // the order of acceptance is the order turns run in.
    const before = this.#addChain;
    let release!: () => void;
    this.#addChain = new Promise<void>((resolve) => (release = resolve));
    let id = "";
    try {
      const acceptedAt = this.#clock.now();
      id = this.#newEntryId(acceptedAt);
      let attachments: StoredAttachment[] | undefined;
      try {
        attachments = await spoolAttachments(this.dataDir, id, message.attachments);
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
      const written = this.#commit([{ t: "msg", e: entry }]);
      release();
      await written;
      return state.entries.get(id) ?? entry;
    } finally {
      release();
      this.#accepting.delete(key);
      this.#ids.delete(id);
    }
  }

  recordReply(leaderId: string, reply: StoredReply, session?: { key: SessionKey; state: SessionState }): Promise<void> {
    const records: Unnumbered<JournalRecord>[] = [];
    // The record's field is named `base` on disk; it holds the session key.
    if (session) records.push({ t: "session", base: session.key, state: session.state });
    records.push({ t: "reply", id: leaderId, reply });
    return this.#commit(records);
  }

  recordSent(id: string, n: number): Promise<void> {
    return this.#commit([{ t: "sent", id, n }]);
  }

  recordPreview(id: string, preview: StoredPreview | null): Promise<void> {
    return this.#commit([{ t: "preview", id, preview: preview && structuredClone(preview) }]);
  }

  async complete(ids: string[]): Promise<void> {
    const state = this.#state;
    const known = ids.filter((id) => state.entries.has(id));
    if (!known.length) return;
    const spooled = known.filter((id) => state.entries.get(id)?.message.attachments?.length);
    await this.#commit([{ t: "done", ids: known }]);
    for (const id of spooled) await rm(join(this.#paths.spool, id), { recursive: true, force: true });
  }

  session(key: SessionKey): SessionState {
    return this.#state.sessions.get(key) ?? { generation: 0 };
  }

  setSession(key: SessionKey, session: SessionState): Promise<void> {
    return this.#commit([{ t: "session", base: key, state: session }]);
  }

  writeTogether(writes: readonly StateWrite[]): Promise<void> {
    return this.#commit(
      writes.map(
        (w): Unnumbered<JournalRecord> =>
          "session" in w
            ? { t: "session", base: w.session, state: w.state }
            : { t: "kv", ns: w.namespace, k: w.key, ...(w.value === undefined ? {} : { v: w.value }) },
      ),
    );
  }

  kv(namespace: string): AdapterStateStore & { keys(): string[] } {
    const state = this.#state;
    return {
      get<T>(key: string): T | undefined {
        return state.kvs.get(namespace)?.get(key) as T | undefined;
      },
      set: (key: string, value: unknown) => this.#commit([{ t: "kv", ns: namespace, k: key, ...(value === undefined ? {} : { v: value }) }]),
      keys: () => [...(state.kvs.get(namespace)?.keys() ?? [])],
    };
  }

  onDrained(listener: () => void): () => void {
    return this.#state.onDrained(listener);
  }

  attachmentPath(a: StoredAttachment): string {
    return join(this.dataDir, a.file);
  }

  readAttachment(a: StoredAttachment): Promise<Buffer> {
    return readFile(join(this.dataDir, a.file));
  }

  compact(): Promise<void> {
    return this.#compactNow();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    try {
      await this.#compactNow();
    } finally {
      this.#closed = true;
      await this.#journal.close();
      this.#lock?.release();
    }
  }

  async abandon(): Promise<void> {
    this.#closed = true;
    await this.#journal.close().catch(() => undefined);
    this.#lock?.release();
  }

  #compactNow(): Promise<void> {
    const state = this.#state;
    const snapshotPath = this.#paths.snapshot;
    this.#compacting ??= this.#journal
      .compact(async () => {
        const text = JSON.stringify(state.snapshot()); // synchronously, before any await: see JournalFile.compact
        await writeFileAtomic(snapshotPath, text);
      })
      .finally(() => {
        this.#compacting = undefined;
      });
    return this.#compacting;
  }

  /** Applies records in memory now (readers see them at once) and resolves when they are on disk. */
  #commit(records: Unnumbered<JournalRecord>[]): Promise<void> {
    if (this.#closed) return Promise.reject(new JournalClosedError());
    const state = this.#state;
    const numbered = records.map((r, i): JournalRecord => ({ ...r, s: state.lastSeq + 1 + i }));
    for (const r of numbered) state.apply(r);
    const written = this.#journal.append(numbered);
    if (this.#journal.size > this.#compactBytes && !this.#compacting) {
      // Not awaited by the writer: its records are durable once `written` resolves.
      this.#compactNow().catch(() => undefined);
    }
    return written;
  }

  /** A fresh entry id: acceptance time, then random hex, unique among pending and in-flight entries. */
  #newEntryId(acceptedAt: number): string {
    let id: string;
    do id = `${acceptedAt.toString(36)}-${hex(this.#random, 6)}`;
    while (this.#state.entries.has(id) || this.#ids.has(id));
    this.#ids.add(id);
    return id;
  }
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
    stored.push({
      kind: a.kind,
      fileName: a.fileName,
      ...(a.mimeType ? { mimeType: a.mimeType } : {}),
      ...(a.seconds !== undefined ? { seconds: a.seconds } : {}),
      size: a.data.length,
      file,
    });
  }
  await syncDirectory(spoolDir);
  return stored;
}
