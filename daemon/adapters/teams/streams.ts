/**
 * Teams' own streaming protocol ("Stream bot messages", Teams docs; the Agents
 * SDK's `StreamingResponse`), in a personal chat only: `typing` activities
 * carrying a `streaminfo` entity with a `streamSequence` that rises; the first
 * one's answer names the stream (`streamId`, sent on every later activity, also
 * as its `id`). The first may be an `informative` update (a status line such as
 * "Thinking…", shown as a progress bar until text comes), then `streaming`
 * updates carry the text so far, and a `message` with `streamType: "final"`
 * ends it. Teams allows one open stream per chat and ends a stream itself
 * after two minutes (then only updating the message works).
 *
 * Kept here, durably (the adapter's state): each open stream's chat, its last
 * sequence (written before an activity with it is sent, so a later life only
 * ever sends a higher one) and when it started. A later life of the daemon
 * (after a kill -9) thus ends a stream by its id with a final message; the
 * text it showed is not kept, so such a stream's next text ends it. Also kept,
 * in memory: the conversations that refused the protocol (their replies
 * stream by updating the message).
 */
import { z } from "zod";
import type { Clock } from "../../../shared/clock.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { AdapterStateStore } from "../../vocabulary/adapter.js";

/** Teams ends a stream two minutes after it started ("Content stream finished due to exceeded streaming time."). */
export const STREAM_LIMIT_MS = 2 * 60 * 1000;

/** What a turn shows while the agent works, before its text streams (Teams' progress bar). */
export const INFORMATIVE_TEXT = "Thinking…";

/** Informative updates may be at most 1000 characters (Teams docs). */
export const INFORMATIVE_MAX = 1000;

export interface OpenStream {
  chatId: string;
  /** The last `streamSequence` sent (or about to be). */
  sequence: number;
  /** The text the stream shows; "" while only informative updates went; null when not known (opened by an earlier life). */
  text: string | null;
  startedAt: number;
}

/** The streaminfo entity of one activity of a stream. */
export function streamInfo(kind: "informative" | "streaming" | "final", sequence: number, streamId?: string) {
  return { type: "streaminfo", streamType: kind, streamSequence: sequence, ...(streamId ? { streamId } : {}) };
}

const Kept = z.record(z.string(), z.object({ chatId: z.string(), sequence: z.number().int().positive(), startedAt: z.number(), informative: z.boolean() }));
const KEY = "streams";

/** The most refusing conversations remembered (the oldest are forgotten first, and then tried again). */
const MAX_REFUSED = 2000;

export class TeamsStreams {
  readonly #state: AdapterStateStore;
  readonly #clock: Clock;
  readonly #open = new Map<string, OpenStream>();
  readonly #refused = new BoundedMap<string, true>(MAX_REFUSED);

  constructor(state: AdapterStateStore, clock: Clock) {
    this.#state = state;
    this.#clock = clock;
    const kept = Kept.safeParse(state.get<unknown>(KEY) ?? {}).data ?? {};
    for (const [id, s] of Object.entries(kept))
      this.#open.set(id, { chatId: s.chatId, sequence: s.sequence, startedAt: s.startedAt, text: s.informative ? "" : null });
  }

  /** Whether a reply in this conversation may try the protocol. */
  usable(conversationId: string): boolean {
    return !this.#refused.has(conversationId);
  }

  refuse(conversationId: string): void {
    this.#refused.set(conversationId, true);
  }

  /** An open stream Teams has not ended yet (one past its time limit is forgotten: Teams ended it). */
  get(streamId: string): OpenStream | undefined {
    const open = this.#open.get(streamId);
    if (open && this.#clock.now() - open.startedAt >= STREAM_LIMIT_MS) {
      void this.ended(streamId).catch(() => undefined);
      return undefined;
    }
    return open;
  }

  /** The chat's open stream (Teams allows one per chat), with its id. */
  inChat(chatId: string): { id: string; stream: OpenStream } | undefined {
    for (const id of this.#open.keys()) {
      const stream = this.get(id);
      if (stream?.chatId === chatId) return { id, stream };
    }
    return undefined;
  }

  /** A stream Teams has just opened with its first activity (sequence 1). */
  opened(streamId: string, chatId: string, text: string): Promise<void> {
    this.#open.set(streamId, { chatId, sequence: 1, text, startedAt: this.#clock.now() });
    return this.#save();
  }

  /** Kept before an activity with `sequence` is sent: no later life reuses it. */
  reserve(streamId: string, sequence: number): Promise<void> {
    const open = this.#open.get(streamId);
    if (!open) return Promise.resolve();
    open.sequence = sequence;
    return this.#save();
  }

  /** What the stream shows once Teams took an update. */
  shows(streamId: string, text: string): void {
    const open = this.#open.get(streamId);
    if (open) open.text = text;
  }

  ended(streamId: string): Promise<void> {
    if (!this.#open.delete(streamId)) return Promise.resolve();
    return this.#save();
  }

  #save(): Promise<void> {
    const kept = Object.fromEntries(
      // Only its opening informative update went (sequence 1): a later life may stream into it from nothing.
      [...this.#open].map(([id, s]) => [
        id,
        { chatId: s.chatId, sequence: s.sequence, startedAt: s.startedAt, informative: s.text === "" && s.sequence === 1 },
      ]),
    );
    return this.#state.set(KEY, kept);
  }
}
