/**
 * The event inbox: a platform that posts each event to whichever node its
 * load balancer picks (Slack's HTTP Events API) has it written here by that
 * node, committed before the platform is told "received", and taken by the
 * account's owner into its journal. `(unit, key)` is unique, so a platform's
 * retries of one event are one row. The owner removes rows with a fenced
 * write (unit-state.ts `removeInbox`); a row it journaled but had not yet
 * removed when it died is taken again by the next owner, and the journal's
 * dedupe key answers it once. `NOTIFY inbox` with the unit wakes the owner.
 */
import pg from "pg";
import { z } from "zod";
import { parseRow } from "./unit-state.js";

export interface InboxRow {
  key: string;
  body: unknown;
}

export interface Inbox {
  /** Keeps one event (a repeat of a key changes nothing); resolves once committed. */
  put(unit: string, key: string, body: unknown): Promise<void>;
  /** The unit's rows, oldest first. */
  pending(unit: string): Promise<InboxRow[]>;
  /** Calls `wake` when any node puts a row for `unit`; returns the stop. Best effort: the owner also polls. */
  watch(unit: string, wake: () => void): () => void;
  close(): Promise<void>;
}

const Row = z.object({ key: z.string(), body: z.unknown() });

export function openInbox(pool: pg.Pool, listenUrl: string, onError: (error: unknown) => void): Inbox {
  /** unit -> the wake-ups of its watchers. */
  const watchers = new Map<string, Set<() => void>>();
  /** The LISTEN connection, opened with the first watcher (null while none). */
  let listener: Promise<pg.Client> | null = null;

  function listen(): void {
    if (listener) return;
    const client = new pg.Client({ connectionString: listenUrl });
    client.on("error", (error) => {
      // A lost connection is only a slower wake-up (the owner polls); the next watch reconnects.
      listener = null;
      onError(error);
    });
    client.on("notification", (n) => {
      for (const wake of watchers.get(n.payload ?? "") ?? []) wake();
    });
    listener = client
      .connect()
      .then(() => client.query("LISTEN inbox"))
      .then(() => client);
    listener.catch((error: unknown) => {
      listener = null;
      onError(error);
    });
  }

  return {
    async put(unit, key, body) {
      // One statement: the row and its notification commit together.
      await pool.query("WITH i AS (INSERT INTO inbox (unit, key, body) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING) SELECT pg_notify('inbox', $1)", [
        unit,
        key,
        JSON.stringify(body),
      ]);
    },
    async pending(unit) {
      const { rows } = await pool.query("SELECT key, body FROM inbox WHERE unit = $1 ORDER BY received_at, key", [unit]);
      return rows.map((r) => parseRow(Row, "inbox", unit, r));
    },
    watch(unit, wake) {
      const set = watchers.get(unit) ?? new Set();
      watchers.set(unit, set);
      set.add(wake);
      listen();
      return () => set.delete(wake);
    },
    async close() {
      const client = listener;
      listener = null;
      watchers.clear();
      await client?.then((c) => c.end()).catch(() => undefined);
    },
  };
}
