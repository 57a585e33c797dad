/**
 * The one ring of recent requests: constant memory whatever the traffic, O(1)
 * per request. Two views read it: the request journal (`GET /_emulator/requests`:
 * every answered request, the console's own included, since the last reset) and
 * the console's log (clients' requests only, answered or cut, with their bodies).
 */
import { redactText } from "./redact.js";

/** One request the emulator answered, as `GET /_emulator/requests` lists it. */
export interface RequestRecord {
  at: string;
  method: string;
  path: string;
  status: number;
  key_kind: "org" | "scoped" | "none";
  ms: number;
  /** The `x-request-id` the answer carried: what a caller quotes, and the key of an error's log line. */
  request_id: string;
}

/** A journal line plus its sequence number (`GET /_emulator/console/requests/{id}` gives the bodies). */
export interface RequestEvent extends RequestRecord {
  id: number;
}

/**
 * What is kept per request: raw, so the request path pays only for keeping
 * references to at most 16 KiB; formatting the time, redacting the path,
 * joining the body's pieces, parsing and redaction happen when someone asks.
 */
export interface RawCapture {
  /** The console log's sequence number; undefined for the console's own traffic (kept out of its log). */
  id: number | undefined;
  /** False when the socket went before the answer finished (a reset, a hung fault): not in the journal. */
  finished: boolean;
  /** When the answer ended, epoch ms (`at` when read). */
  atMs: number;
  method: string;
  /** As received: redacted when read (`path`). */
  rawPath: string;
  status: number;
  key_kind: RequestRecord["key_kind"];
  ms: number;
  request_id: string;
  requestType: string | null;
  requestBody: unknown;
  requestLength: number;
  responseType: string | null;
  /** The first `BODY_LIMIT` bytes sent, in the pieces they were written in (strings are UTF-8). */
  responseChunks: readonly (string | Buffer)[];
  responseTruncated: boolean;
}

/** The line of a capture as the journal and the console's log show it. */
export function recordOf(c: RawCapture): RequestRecord {
  return {
    at: new Date(c.atMs).toISOString(),
    method: c.method,
    // A raw key pasted into a URL is a secret like any other.
    path: redactText(c.rawPath),
    status: c.status,
    key_kind: c.key_kind,
    ms: c.ms,
    request_id: c.request_id,
  };
}

export interface RequestLog {
  record(capture: RawCapture): void;
  /** A client request of the console's log by its id. */
  get(id: number): RawCapture | undefined;
  /** The console's log, oldest first. */
  list(): RequestEvent[];
  /** The journal since the last `clearJournal`, oldest first. */
  journal(): RequestRecord[];
  /** Empties the journal (a global reset); the console's log keeps its lines. */
  clearJournal(): void;
}

/** Default capacity: the larger of the two rings this one replaced (journal 500, console 300). */
export const REQUEST_LOG_CAPACITY = 500;

export function createRequestLog(capacity = REQUEST_LOG_CAPACITY): RequestLog {
  return new RingRequestLog(capacity);
}

/** The ring: evicts the oldest capture past its capacity; the journal is a suffix of it by arrival number. */
class RingRequestLog implements RequestLog {
  readonly #capacity: number;
  /** Every kept capture by arrival number; Map keeps insertion order, so the first key is the oldest; never more than `#capacity`. */
  readonly #bySeq = new Map<number, RawCapture>();
  /** Client captures by their console id (a subset of `#bySeq`, evicted with it). */
  readonly #byId = new Map<number, RawCapture>();
  /** The arrival number of the next capture: above every key of `#bySeq`, only grows. */
  #nextSeq = 0;
  /** Captures from this arrival number on are in the journal; never above `#nextSeq`. */
  #journalFrom = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  record(capture: RawCapture): void {
    this.#bySeq.set(this.#nextSeq++, capture);
    if (capture.id !== undefined) this.#byId.set(capture.id, capture);
    if (this.#bySeq.size > this.#capacity) {
      const oldest = this.#bySeq.keys().next().value!;
      const evicted = this.#bySeq.get(oldest)!;
      this.#bySeq.delete(oldest);
      if (evicted.id !== undefined) this.#byId.delete(evicted.id);
    }
  }

  get(id: number): RawCapture | undefined {
    return this.#byId.get(id);
  }

  list(): RequestEvent[] {
    return [...this.#byId].map(([id, capture]) => ({ id, ...recordOf(capture) }));
  }

  journal(): RequestRecord[] {
    const lines: RequestRecord[] = [];
    for (const [seq, capture] of this.#bySeq) {
      if (capture.finished && seq >= this.#journalFrom) lines.push(recordOf(capture));
    }
    return lines;
  }

  clearJournal(): void {
    this.#journalFrom = this.#nextSeq;
  }
}
