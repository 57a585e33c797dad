/**
 * Slack's native streaming (`chat.startStream` / `appendStream` /
 * `stopStream`, 2025) as the core's streamed reply sees it: the core gives
 * each message's whole text so far, Slack wants what is new. Kept here: the
 * streams this process opened and the text each was given, whether the
 * workspace refused streaming (then every reply goes by chat.update), and the
 * messages this process posted the ordinary way with the text each shows (so
 * a message unknown here, say after a restart, is known to maybe be a stream
 * left open, and an edit that would not change a message is not sent).
 */
import { createHash } from "node:crypto";
import { BoundedMap } from "../../../shared/util/bounded-map.js";

const digest = (text: string): string => createHash("sha256").update(text).digest("base64");

/** The most ordinary messages remembered (the oldest are forgotten first). */
const MAX_PLAIN = 2000;

export class NativeStreams {
  /** Message ts -> the text it shows: streams this process opened and has not stopped. */
  readonly #open = new Map<string, string>();
  /**
   * Message ts of replies posted with chat.postMessage by this process, oldest first (bounded),
   * with a digest of the text each shows (when known): a digest, so 2,000 long replies stay small.
   */
  readonly #plain = new BoundedMap<string, string | undefined>(MAX_PLAIN);
  /** Set once Slack refused a stream for good (not enabled for the app, a missing scope): chat.update from then on. */
  #refused: string | undefined;

  /** Whether new replies may stream natively. */
  get usable(): boolean {
    return this.#refused === undefined;
  }

  refuse(reason: string): void {
    this.#refused = reason;
  }

  opened(ts: string, text: string): void {
    this.#open.set(ts, text);
  }

  /** The text an open stream shows, or undefined when `ts` is no stream this process has open. */
  shown(ts: string): string | undefined {
    return this.#open.get(ts);
  }

  appended(ts: string, text: string): void {
    if (this.#open.has(ts)) this.#open.set(ts, text);
  }

  stopped(ts: string): void {
    this.#open.delete(ts);
    this.posted(ts);
  }

  /** A message that is not (or no longer) a stream, showing `text` as sent (undefined: not known). */
  posted(ts: string, text?: string): void {
    this.#plain.set(ts, text === undefined ? undefined : digest(text));
  }

  /** Known here as an ordinary message (never a stream). */
  isPlain(ts: string): boolean {
    return this.#plain.has(ts);
  }

  /** Whether an ordinary message of this process is known to show `text` (mrkdwn) as sent. */
  shows(ts: string, text: string): boolean {
    const known = this.#plain.get(ts);
    return known !== undefined && known === digest(text);
  }
}
