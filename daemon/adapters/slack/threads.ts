/**
 * The channel threads the bot answers in, so a follow-up there is heard
 * without a new mention (the thread is the session, as people expect of a
 * Slack app). Bounded: the `MAX_THREADS` most recent, kept in the adapter's
 * state so a restart still knows them.
 */
import { z } from "zod";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { AdapterStateStore } from "../../vocabulary/adapter.js";

export const MAX_THREADS = 2000;
const STATE_KEY = "activeThreads";
const Saved = z.array(z.string());

export class ActiveThreads {
  /** The adapter's durable key-values, where the thread list is saved (injected). */
  readonly #state: AdapterStateStore;
  /** Thread chat ids, oldest first (a Map keeps insertion order; a re-add moves one to the end). */
  readonly #threads = new BoundedMap<string, true>(MAX_THREADS);
  /** The last save under way: saves go one after another, the newest list last. */
  #saving: Promise<void> = Promise.resolve();

  constructor(state: AdapterStateStore) {
    this.#state = state;
    const saved = Saved.safeParse(state.get(STATE_KEY) ?? []);
    if (saved.success) for (const id of saved.data.slice(-MAX_THREADS)) this.#threads.set(id, true);
  }

  has(chatId: string): boolean {
    return this.#threads.has(chatId);
  }

  /** The bot took a message in this thread. */
  add(chatId: string): void {
    const known = this.#threads.has(chatId);
    this.#threads.set(chatId, true);
    if (!known) this.#saving = this.#saving.then(() => this.#state.set(STATE_KEY, [...this.#threads.keys()])).catch(() => undefined);
  }

  /** Resolves once the last change is saved. */
  flush(): Promise<void> {
    return this.#saving;
  }
}
