/**
 * Long polling's two steps, as connection.ts's loop calls them (grammY's
 * `fetchUpdates` -> `handleUpdates`): ask Telegram for what follows the
 * offset, then hand a batch to the core (chats side by side, each chat in
 * order, stopping at a chat's first refusal), move the offset over what was
 * handled (offset-tracker.ts) and persist it before the next poll confirms it
 * to Telegram. Failures of the poll itself are the caller's to wait out.
 */
import type { Api } from "grammy";
import type { Update } from "grammy/types";
import type { Logger } from "pino";
import { z } from "zod";
import type { Clock } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import type { AdapterStateStore } from "../../vocabulary/adapter.js";
import { pause } from "../../helpers/retry.js";
import { type Backoff, createBackoff } from "../../../shared/backoff.js";
import { withoutUndefined } from "../../../shared/util/without-undefined.js";
import { describe, type Scrub } from "./errors.js";
import { toApiSignal } from "./fetch.js";
import { chatIdOfUpdate } from "./inbound.js";
import { createOffsetTracker, type OffsetTracker, type SavedOffset } from "./offset-tracker.js";

/** The adapter's state key for the last update id handed to the core. */
export const OFFSET_KEY = "lastUpdateId";
/** When the offset was saved (epoch ms). */
export const OFFSET_AT_KEY = "lastUpdateAt";

/** The ceiling of the pause after an empty poll answered at once, ms (or `retryPauseMs`, if larger). */
const MAX_HASTY_PAUSE_MS = 5000;

export interface PollerDeps {
  api: Api;
  state: AdapterStateStore;
  clock: Clock;
  random: Random;
  log: Logger;
  scrub: Scrub;
  /** Aborted by stop: ends the pending long poll and any pause. */
  signal: AbortSignal;
  /** Telegram's `timeout` for a long poll, seconds. */
  pollTimeoutSeconds: number;
  /** Pause after a partly refused batch, and the first pause after an empty poll answered at once, ms. */
  retryPauseMs: number;
  /** Hands one update to the core; rejects when it must come again. */
  handOver(update: Update): Promise<void>;
}

/** One poll's answer, and when it was asked for (an empty answer that came too soon is paced). */
export interface Batch {
  updates: Update[];
  /** Epoch ms when the poll was sent. */
  askedAt: number;
}

const savedId = z.number().int();
const savedAt = z.number();

/** The offset the last run persisted; a value that is not a number counts as none. */
export function loadSavedOffset(state: AdapterStateStore): SavedOffset | undefined {
  const id = savedId.safeParse(state.get<unknown>(OFFSET_KEY));
  if (!id.success) return undefined;
  const at = savedAt.safeParse(state.get<unknown>(OFFSET_AT_KEY));
  return { updateId: id.data, savedAt: at.success ? at.data : undefined };
}

/** Polls from the saved offset (or what Telegram still holds); one per run of the polling loop. */
export class Poller {
  readonly #deps: PollerDeps;
  /** Moves only over updates the core accepted; persisted each time it moves. */
  readonly #offsets: OffsetTracker;
  /** Empty polls answered well before their timeout, in a row: each is followed by a longer pause. */
  readonly #hastyEmpty: Backoff;

  constructor(deps: PollerDeps) {
    this.#deps = deps;
    this.#hastyEmpty = createBackoff({ baseMs: deps.retryPauseMs, maxMs: Math.max(deps.retryPauseMs, MAX_HASTY_PAUSE_MS) }, deps.random);
    this.#offsets = createOffsetTracker({ saved: loadSavedOffset(deps.state), now: deps.clock.now() });
    if (this.#offsets.origin === "expired") {
      deps.log.info("telegram offset older than a day: starting from what Telegram still holds");
    }
  }

  /** The next batch after the offset; throws when the poll fails (or is aborted by stop). */
  async fetchUpdates(): Promise<Batch> {
    const { api, clock, pollTimeoutSeconds, signal } = this.#deps;
    const askedAt = clock.now();
    const updates = await api.getUpdates(
      { ...withoutUndefined({ offset: this.#offsets.nextPollOffset() }), timeout: pollTimeoutSeconds, allowed_updates: ["message", "callback_query"] },
      toApiSignal(signal),
    );
    return { updates, askedAt };
  }

  /**
   * Hands the batch over, moves and persists the offset; pauses when part of
   * it must come again, or when it came back empty too soon.
   */
  async handleUpdates({ updates, askedAt }: Batch): Promise<void> {
    if (!updates.length) return this.#paceEmpty(askedAt);
    this.#hastyEmpty.reset();
    const ids = updates.map((u) => u.update_id);
    const pending = new Set(this.#offsets.pending(ids));
    await this.#handOverByChat(updates.filter((u) => pending.has(u.update_id)));
    const settled = this.#offsets.settle(ids);
    if (settled.moved !== undefined) await this.#persist(settled.moved);
    if (!settled.complete) await pause(this.#deps.clock, this.#deps.retryPauseMs, this.#deps.signal);
  }

  /** Chats side by side, each chat in order; a chat's first refusal holds its later updates back. */
  async #handOverByChat(updates: Update[]): Promise<void> {
    const byChat = new Map<string, Update[]>();
    for (const update of updates) {
      const chat = chatIdOfUpdate(update);
      byChat.set(chat, [...(byChat.get(chat) ?? []), update]);
    }
    await Promise.all([...byChat.values()].map((chat) => this.#handOverInOrder(chat)));
  }

  async #handOverInOrder(chat: Update[]): Promise<void> {
    const { handOver, log, scrub, signal } = this.#deps;
    for (const update of chat) {
      try {
        await handOver(update);
        this.#offsets.handled(update.update_id);
      } catch (error) {
        // Later updates of this chat wait for this one: handing them over first would reorder the chat.
        if (!signal.aborted) log.warn({ updateId: update.update_id, err: describe(error, scrub) }, "telegram update not accepted; will retry");
        return;
      }
    }
  }

  /** Persisted before the next poll confirms the offset to Telegram, so a crash in between does not replay. */
  async #persist(offset: number): Promise<void> {
    const { state, clock, log, scrub } = this.#deps;
    await Promise.all([state.set(OFFSET_KEY, offset), state.set(OFFSET_AT_KEY, clock.now())]).catch((error: unknown) => {
      log.error({ err: describe(error, scrub) }, "telegram offset not persisted (after a crash the core drops the repeats)");
    });
  }

  /**
   * Telegram holds an empty poll for `timeout` seconds; one answered well
   * before that means a server that does not, and asking again at once would
   * spin. Wait, longer each time.
   */
  async #paceEmpty(askedAt: number): Promise<void> {
    const { clock, pollTimeoutSeconds, signal } = this.#deps;
    if (clock.now() - askedAt >= (pollTimeoutSeconds * 1000) / 2) {
      this.#hastyEmpty.reset();
      return;
    }
    await pause(clock, this.#hastyEmpty.failed(), signal);
  }
}
