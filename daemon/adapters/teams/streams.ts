/**
 * Teams' own streaming protocol, as the Agents SDK's `StreamingResponse`
 * speaks it (agents-hosting 1.8): in a personal chat, `typing` activities
 * carrying a `streaminfo` entity (`streamType: "streaming"`, a
 * `streamSequence` that rises from 1) with the text so far; the first one's
 * answer names the stream (`streamId`, sent on every later activity, also as
 * its `id`); a `message` with `streamType: "final"` and the whole text ends
 * it. Kept here: the streams this process has open (by their id, which is
 * also the reply's message id) and the conversations that refused the
 * protocol (then replies there stream by updating the message). A stream left
 * open by an earlier life of the daemon is not known here: Teams ends it
 * itself after its streaming time limit.
 */
import { BoundedMap } from "../../../shared/util/bounded-map.js";

export interface OpenStream {
  /** The last `streamSequence` sent. */
  sequence: number;
  /** The text the stream shows. */
  text: string;
}

/** The streaminfo entity of one activity of a stream. */
export function streamInfo(kind: "streaming" | "final", sequence: number, streamId?: string) {
  return { type: "streaminfo", streamType: kind, streamSequence: sequence, ...(streamId ? { streamId } : {}) };
}

/** The most refusing conversations remembered (the oldest are forgotten first, and then tried again). */
const MAX_REFUSED = 2000;

export class TeamsStreams {
  readonly #open = new Map<string, OpenStream>();
  readonly #refused = new BoundedMap<string, true>(MAX_REFUSED);

  /** Whether a reply in this conversation may try the protocol. */
  usable(conversationId: string): boolean {
    return !this.#refused.has(conversationId);
  }

  refuse(conversationId: string): void {
    this.#refused.set(conversationId, true);
  }

  opened(streamId: string, text: string): void {
    this.#open.set(streamId, { sequence: 1, text });
  }

  get(streamId: string): OpenStream | undefined {
    return this.#open.get(streamId);
  }

  continued(streamId: string, sequence: number, text: string): void {
    if (this.#open.has(streamId)) this.#open.set(streamId, { sequence, text });
  }

  ended(streamId: string): void {
    this.#open.delete(streamId);
  }
}
