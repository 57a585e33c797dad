/**
 * The store's state in memory, and the one function that changes it: `apply`
 * of a journal record. Loading replays the snapshot and the journal through
 * it; a write applies its record here first (readers see it at once) and then
 * journals it. No file access here, so replay is tested without a disk.
 */
import { BoundedMap } from "../../shared/util/bounded-map.js";
import type { DedupeKey } from "../vocabulary/keys.js";
import { STATE_VERSION, type JournalEntry, type JournalRecord, type SessionState, type Snapshot } from "../vocabulary/records.js";

export class StoreState {
  /** Pending entries by id, in acceptance order (inserted by `seq`). */
  readonly entries = new Map<string, JournalEntry>();
  /** Session chains by session key. */
  readonly sessions = new Map<string, SessionState>();
  /** Key-values by namespace, then key; a deleted key is absent, never `undefined`. */
  readonly kvs = new Map<string, Map<string, unknown>>();
  /** The pending entries' dedupe keys -> entry id: exactly the keys of `entries`' values. */
  readonly #liveKeys = new Map<DedupeKey, string>();
  /** Completed entries' keys, oldest first, the newest `recentKeys` of them (a key is not refreshed by completing again). */
  readonly #recent: BoundedMap<DedupeKey, true>;
  /** The highest record number applied (or the snapshot's). */
  #lastSeq = 0;
  /** Called whenever a completion leaves no entry pending. */
  readonly #drained = new Set<() => void>();

  /** @param recentKeys completed keys remembered for dedupe. */
  constructor(recentKeys: number) {
    this.#recent = new BoundedMap(recentKeys);
  }

  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** Whether a message with this key is pending or was completed recently. */
  knows(key: DedupeKey): boolean {
    return this.#liveKeys.has(key) || this.#recent.has(key);
  }

  onDrained(listener: () => void): () => void {
    this.#drained.add(listener);
    return () => this.#drained.delete(listener);
  }

  /** Starts from a snapshot (before any record is applied). */
  load(snapshot: Snapshot): void {
    this.#lastSeq = snapshot.lastSeq;
    for (const e of [...snapshot.entries].sort((a, b) => a.seq - b.seq)) this.#addEntry(e);
    for (const [key, state] of Object.entries(snapshot.sessions)) this.sessions.set(key, state);
    for (const [ns, values] of Object.entries(snapshot.kv)) this.kvs.set(ns, new Map(Object.entries(values)));
    for (const k of snapshot.recentKeys) this.#remember(k);
  }

  /** The whole state, as the snapshot file holds it. */
  snapshot(): Snapshot {
    return {
      version: STATE_VERSION,
      lastSeq: this.#lastSeq,
      entries: [...this.entries.values()],
      sessions: Object.fromEntries(this.sessions),
      kv: Object.fromEntries([...this.kvs].map(([ns, m]) => [ns, Object.fromEntries(m)])),
      recentKeys: [...this.#recent.keys()],
    };
  }

  /** Applies one record (the loader skips the records a snapshot already holds). */
  apply(r: JournalRecord): void {
    this.#lastSeq = Math.max(this.#lastSeq, r.s);
    switch (r.t) {
      case "msg":
        this.#addEntry(r.e);
        return;
      case "reply": {
        const lead = this.entries.get(r.id);
        if (!lead) return;
        lead.reply = r.reply;
        for (const m of r.reply.members) {
          const e = this.entries.get(m);
          if (e && m !== r.id) e.leader = r.id;
        }
        return;
      }
      case "sent": {
        const e = this.entries.get(r.id);
        if (e) e.sent = Math.max(e.sent, r.n);
        return;
      }
      case "preview": {
        const e = this.entries.get(r.id);
        if (e && r.preview) e.preview = r.preview;
        else if (e) delete e.preview;
        return;
      }
      case "done":
        this.#complete(r.ids);
        return;
      case "session":
        this.sessions.set(r.base, r.state);
        return;
      case "kv": {
        const ns = this.kvs.get(r.ns) ?? new Map<string, unknown>();
        this.kvs.set(r.ns, ns);
        if (r.v === undefined) ns.delete(r.k);
        else ns.set(r.k, r.v);
        return;
      }
    }
  }

  #addEntry(e: JournalEntry): void {
    this.entries.set(e.id, e);
    this.#liveKeys.set(e.key, e.id);
  }

  #complete(ids: readonly string[]): void {
    for (const id of ids) {
      const e = this.entries.get(id);
      if (!e) continue;
      this.entries.delete(id);
      this.#liveKeys.delete(e.key);
      this.#remember(e.key);
    }
    if (this.entries.size === 0) for (const l of [...this.#drained]) l();
  }

  #remember(key: DedupeKey): void {
    if (!this.#recent.has(key)) this.#recent.set(key, true);
  }
}
