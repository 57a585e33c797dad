/**
 * The adapter's own journal of events taken off the stream but not yet in
 * the core's: signal-cli never sends an event twice (it confirmed the
 * message to Signal's server before writing it to the stream), so each
 * event is written here, on disk, before anything else is done with it, and
 * forgotten only once the core journaled or deliberately refused it. A new
 * life hands over whatever is left. Writes are serialized; each `add`
 * resolves once its event is on disk.
 */
import type { AdapterStateStore } from "../../vocabulary/adapter.js";

const KEY = "spool";

export class Spool {
  readonly #state: AdapterStateStore;
  /** Message id -> the event's data, as it came (JSON text). */
  readonly #events: Map<string, string>;
  #writes: Promise<void> = Promise.resolve();

  constructor(state: AdapterStateStore) {
    this.#state = state;
    const kept = state.get<unknown>(KEY);
    this.#events = new Map(isRecord(kept) ? Object.entries(kept).filter((e): e is [string, string] => typeof e[1] === "string") : []);
  }

  /** What a previous life left, oldest first. */
  pending(): [string, string][] {
    return [...this.#events.entries()];
  }

  has(id: string): boolean {
    return this.#events.has(id);
  }

  add(id: string, raw: string): Promise<void> {
    this.#events.set(id, raw);
    return this.#persist();
  }

  remove(id: string): Promise<void> {
    if (!this.#events.delete(id)) return Promise.resolve();
    return this.#persist();
  }

  #persist(): Promise<void> {
    const write = this.#writes.then(() => this.#state.set(KEY, Object.fromEntries(this.#events)));
    // A failed write must not stop the next ones; the caller of this one sees it.
    this.#writes = write.catch(() => undefined);
    return write;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
