/**
 * Each sandbox's own request journal: what it received (redacted bodies,
 * the route matched, instance and session), filterable and counted, and what
 * matched nothing with the closest route. Kept in memory, bounded per sandbox;
 * removing a sandbox drops its journal in one step.
 */
import type { z } from "zod";
import type { SandboxRequest, SandboxRequestsQuery, UnmatchedRequest } from "../../shared/schemas/sandboxes.js";

export type SandboxRequestEntry = z.output<typeof SandboxRequest>;
export type UnmatchedEntry = z.output<typeof UnmatchedRequest>;
export type RequestFilter = z.output<typeof SandboxRequestsQuery>;

/** Newest requests kept per sandbox (older ones leave first). */
export const SANDBOX_JOURNAL_LIMIT = 10_000;
/** Newest unmatched requests kept per sandbox, and outside sandboxes. */
export const UNMATCHED_LIMIT = 500;

interface Journal {
  requests: SandboxRequestEntry[];
  unmatched: UnmatchedEntry[];
  /** Requests received so far (the next `seq` is this plus one). */
  received: number;
}

export interface SandboxJournals {
  record(sandboxId: string, entry: Omit<SandboxRequestEntry, "seq">): void;
  /** Unmatched requests of no sandbox go under `undefined`. */
  recordUnmatched(sandboxId: string | undefined, entry: UnmatchedEntry): void;
  requests(sandboxId: string, filter?: RequestFilter): SandboxRequestEntry[];
  unmatched(sandboxId: string | undefined): UnmatchedEntry[];
  /** Requests received so far (also those no longer kept). */
  count(sandboxId: string): number;
  drop(sandboxId: string): void;
}

const push = <T>(list: T[], item: T, limit: number) => {
  list.push(item);
  // Trimmed in batches: one splice per `limit / 10` requests, not a shift per request.
  if (list.length > limit + limit / 10) list.splice(0, list.length - limit);
};

export function matchesFilter(entry: SandboxRequestEntry, filter: RequestFilter): boolean {
  return (
    (filter.method === undefined || entry.method === filter.method.toUpperCase()) &&
    (filter.path === undefined || entry.path === filter.path) &&
    (filter.route === undefined || entry.route === filter.route) &&
    (filter.status === undefined || entry.status === filter.status) &&
    (filter.instance_id === undefined || entry.instance_id === filter.instance_id) &&
    (filter.session === undefined || entry.session === filter.session)
  );
}

export function createSandboxJournals(): SandboxJournals {
  const journals = new Map<string, Journal>();
  const outside: UnmatchedEntry[] = [];
  const of = (id: string) => {
    const found = journals.get(id);
    if (found) return found;
    const journal: Journal = { requests: [], unmatched: [], received: 0 };
    journals.set(id, journal);
    return journal;
  };
  return {
    record(sandboxId, entry) {
      const journal = of(sandboxId);
      push(journal.requests, { seq: ++journal.received, ...entry }, SANDBOX_JOURNAL_LIMIT);
    },
    recordUnmatched(sandboxId, entry) {
      push(sandboxId === undefined ? outside : of(sandboxId).unmatched, entry, UNMATCHED_LIMIT);
    },
    requests(sandboxId, filter = {}) {
      const list = journals.get(sandboxId)?.requests ?? [];
      return list.slice(-SANDBOX_JOURNAL_LIMIT).filter((entry) => matchesFilter(entry, filter));
    },
    unmatched: (sandboxId) => (sandboxId === undefined ? outside : (journals.get(sandboxId)?.unmatched ?? [])).slice(-UNMATCHED_LIMIT),
    count: (sandboxId) => journals.get(sandboxId)?.received ?? 0,
    drop: (sandboxId) => void journals.delete(sandboxId),
  };
}
