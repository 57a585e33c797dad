/**
 * Streamed delivery: drives the stream-preview planner (stream-preview.ts)
 * against an adapter that can edit (Telegram, Discord), or writes the text
 * as it comes on one that can only append (the terminal).
 *
 * - One operation at a time per reply, and at most one per
 *   `minEditIntervalMs` per chat across replies (Telegram: one edit a second
 *   per chat), counted from when the platform answered the previous one; a
 *   platform's retry-after pushes the chat's next operation back.
 * - A transient failure is tried again (the planner waits); after
 *   `maxAttempts` in a row it counts as permanent: a failed edit degrades to
 *   sending the final text as a new message (the broken preview is deleted),
 *   never to silence and never to a second copy.
 * - Every preview message is journaled (planner state + platform ids) once
 *   the platform took it, so a restart finishes the same messages. The
 *   window: a kill -9 between the platform taking a new message and the
 *   journal recording its id leaves that one message as it was, and the
 *   restarted reply sends its text anew.
 */
import type { Clock } from "../../shared/clock.js";
import type { StoredPreview } from "../vocabulary/records.js";
import { SendError, type ChatAdapter, type ChatTarget } from "../vocabulary/adapter.js";
import { chatKeyOf, type ChatKey } from "../vocabulary/keys.js";
import { StoppingError } from "./relay-types.js";
import { createStreamPreview, type PreviewAction, type StreamPreview } from "./stream-preview.js";
import { sleep } from "../helpers/retry.js";

/** Per chat: no operation before this time (shared by every reply streaming into the chat). */
export type ChatGate = Map<ChatKey, number>;

export interface PreviewDriverOptions {
  adapter: ChatAdapter;
  target: ChatTarget;
  clock: Clock;
  gate: ChatGate;
  /** Failures in a row after which an operation counts as permanently refused. */
  maxAttempts: number;
  /** A preview journaled before a restart. */
  resume?: StoredPreview;
  /** Journals the preview; awaited before the next operation. */
  record(preview: StoredPreview): Promise<void>;
  /** Aborted when the daemon halts (or the account's lease ends): the driver stops where it is (the journal keeps the preview). */
  signal: AbortSignal;
  /** Asked right before each platform call: false (the account's lease has passed its deadline) stops the driver as the signal does. Default: always. */
  mayReach?(): boolean;
  onError?(error: unknown, action: PreviewAction): void;
}

export type PreviewResult = "done" | "gave_up";

export interface PreviewDriver {
  /** The whole text so far; ignored unless it extends the text shown (a retried attempt starts over). */
  update(textSoFar: string): void;
  /** The final text: resolves once every message shows it (or the plan gave up). */
  finish(finalText: string): Promise<PreviewResult>;
  /** The text the preview has been given so far. */
  readonly text: string;
  /** Whether any message was sent. */
  readonly shown: boolean;
  /** Resolves when the driver stops (finished, gave up, or halted); never rejects. */
  readonly settled: Promise<void>;
}

const norm = (t: string) => t.replace(/\r\n?/g, "\n");

export function createPreviewDriver(options: PreviewDriverOptions): PreviewDriver {
  return new StreamDriver(options);
}

/** The `PreviewDriver`: one streamed reply's plan, its platform message ids and the loop that performs the plan. */
export class StreamDriver implements PreviewDriver {
  readonly #options: PreviewDriverOptions;
  /** The chat's minimum time between operations (the adapter's `minEditIntervalMs`, default 1000). */
  readonly #interval: number;
  /** The gate's key: the chat this reply streams into. */
  readonly #key: ChatKey;
  /** What to send or edit next; told every outcome, so it never hands out two actions at once. */
  readonly #plan: StreamPreview;
  /** The platform id of each of the plan's messages, by index; null when the platform gave none. */
  readonly #ids: (string | null)[];
  /** The text the preview has been given so far; only ever extended, until the final text. */
  #text: string;
  /** `finish` was called: updates are ignored. */
  #finished = false;
  /** Operations failed in a row; back to 0 on a success or once they count as permanent. */
  #failures = 0;
  /** Messages (by index) whose last operation here carried `final: true`: their native stream, if any, is ended. */
  readonly #ended = new Set<number>();
  /** Ends the loop's current nap (set only while it naps). */
  #wake: (() => void) | undefined;
  /** The loop; rejects when halted. */
  readonly #running: Promise<void>;
  readonly settled: Promise<void>;

  constructor(options: PreviewDriverOptions) {
    const { adapter } = options;
    this.#options = options;
    this.#interval = adapter.limits.minEditIntervalMs ?? 1000;
    // The whole chat, not its topic: the platform's flood limits count per chat, its topics together.
    const { platform, accountId, chatId } = options.target;
    this.#key = chatKeyOf({ platform, accountId, chatId });
    this.#plan = createStreamPreview({
      measure: (text) => adapter.measure(text, "markdown"),
      limit: adapter.limits.maxMessageLength,
      clock: options.clock,
      minEditIntervalMs: this.#interval,
      ...(options.resume ? { resume: options.resume.state } : {}),
    });
    this.#ids = options.resume ? [...options.resume.ids] : [];
    this.#text = options.resume?.state.text ?? "";
    this.#running = this.#run();
    this.settled = this.#running.then(
      () => undefined,
      () => undefined,
    );
  }

  get text(): string {
    return this.#text;
  }

  get shown(): boolean {
    return this.#ids.length > 0;
  }

  update(next: string): void {
    if (this.#finished) return;
    const t = norm(next);
    if (!t.startsWith(this.#text)) return;
    this.#text = t;
    this.#plan.update(t);
    this.#poke();
  }

  async finish(final: string): Promise<PreviewResult> {
    this.#finished = true;
    this.#text = norm(final);
    this.#plan.finish(this.#text);
    this.#poke();
    await this.#running;
    return this.#plan.gaveUp ? "gave_up" : "done";
  }

  #poke(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  /** Waits for `ms`, or less when poked; rejects when halted. */
  async #nap(ms: number | undefined): Promise<void> {
    const { clock, signal } = this.#options;
    const cancel = new AbortController();
    const poked = new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
    const waits: Promise<void>[] = [poked];
    if (ms !== undefined) waits.push(sleep(clock, ms, cancel.signal).catch(() => undefined));
    const halted = new Promise<void>((_, reject) => {
      if (signal.aborted) reject(new StoppingError());
      signal.addEventListener("abort", () => reject(new StoppingError()), { once: true, signal: cancel.signal });
    });
    try {
      await Promise.race([...waits, halted]);
    } finally {
      cancel.abort();
      this.#wake = undefined;
    }
  }

  async #perform(action: PreviewAction): Promise<void> {
    const { adapter, target } = this.#options;
    // Whether the message's text is settled (a platform with native streaming ends its stream then).
    const final = "message" in action && this.#plan.state().messages[action.message]?.final === true;
    if ("message" in action) {
      if (final) this.#ended.add(action.message);
      else this.#ended.delete(action.message);
    }
    if (action.kind === "send") {
      const receipt = await adapter.send(target, action.text, { format: "markdown", final });
      this.#ids[action.message] = receipt?.messageId ?? null;
    } else if (action.kind === "edit") {
      const id = this.#ids[action.message];
      // Without its id a message cannot be edited: its final text goes in a new one.
      if (!id || !adapter.edits) throw new SendError("the preview message cannot be edited", { permanent: true });
      await adapter.edits.edit(target, id, action.text, { format: "markdown", final });
    } else if (action.kind === "delete") {
      // No adapter deletes yet: a broken preview stays (its final text was sent below it).
    }
  }

  /**
   * A platform with native streams (`EditCapability.end`): each message whose last
   * operation was not final (its text was complete before the reply was) is told it is, with
   * its text unchanged. Best effort: a failure is reported, the reply is done either way.
   */
  async #endStreams(): Promise<void> {
    const { adapter, target } = this.#options;
    const edits = adapter.edits;
    if (!edits?.end) return;
    const messages = this.#plan.state().messages;
    for (const [i, m] of messages.entries()) {
      const id = this.#ids[i];
      if (!id || this.#ended.has(i) || m.broken || m.deleted || m.shown === null) continue;
      if (edits.mayBeOpen && !edits.mayBeOpen(id)) continue;
      // Paced like any edit in the chat (minEditIntervalMs).
      await this.#takeTurnAtGate();
      this.#stopUnlessReachable();
      try {
        await edits.end(target, id, m.shown);
        this.#ended.add(i);
      } catch (error) {
        this.#options.onError?.(error, { kind: "edit", message: i, text: m.shown });
      } finally {
        this.#pushBack(this.#interval);
      }
    }
  }

  async #run(): Promise<void> {
    const { clock, signal } = this.#options;
    const plan = this.#plan;
    for (;;) {
      if (signal.aborted) throw new StoppingError();
      const action = plan.next();
      if (action.kind === "done") return this.#endStreams();
      if (action.kind === "idle" || action.kind === "busy") {
        await this.#nap(undefined);
        continue;
      }
      if (action.kind === "wait") {
        await this.#nap(Math.max(0, action.until - clock.now()));
        continue;
      }
      await this.#takeTurnAtGate();
      this.#stopUnlessReachable();
      await this.#attempt(action);
      // New messages (and deletions) are journaled before anything else happens; edits need not be (redone after a restart).
      if (action.kind !== "edit") await this.#options.record({ state: plan.state(), ids: [...this.#ids] });
    }
  }

  /** Right before a platform call: halted, or past the account's lease, the driver stops (the journal keeps the preview). */
  #stopUnlessReachable(): void {
    if (this.#options.signal.aborted || this.#options.mayReach?.() === false) throw new StoppingError();
  }

  /** Waits until the chat's gate opens, then closes it for one interval. */
  async #takeTurnAtGate(): Promise<void> {
    const { clock, gate, signal } = this.#options;
    const key = this.#key;
    const free = gate.get(key) ?? 0;
    if (clock.now() < free) await sleep(clock, free - clock.now(), signal).catch(() => Promise.reject(new StoppingError()));
    if (gate.size > 10_000) for (const [k, at] of gate) if (at <= clock.now()) gate.delete(k); // only chats still paced are kept
    gate.set(key, clock.now() + this.#interval);
  }

  /** Keeps the chat's gate closed for `ms` from now (paced from when the platform answered). */
  #pushBack(ms: number): void {
    const { clock, gate } = this.#options;
    gate.set(this.#key, Math.max(gate.get(this.#key) ?? 0, clock.now() + ms));
  }

  /** Performs `action` and reports it to the plan: sent, or failed (permanently after `maxAttempts` in a row). */
  async #attempt(action: PreviewAction): Promise<void> {
    const pushBack = (ms: number) => this.#pushBack(ms);
    try {
      await this.#perform(action);
      // Paced from when the platform answered: the next request cannot reach it sooner than `interval` after this one did.
      pushBack(this.#interval);
      this.#failures = 0;
      this.#plan.sent(action);
    } catch (error) {
      pushBack(this.#interval);
      this.#failures++;
      const retryAfterMs = error instanceof SendError ? error.retryAfterMs : undefined;
      const permanent = (error instanceof SendError && error.permanent) || this.#failures >= this.#options.maxAttempts;
      if (permanent) this.#failures = 0;
      if (retryAfterMs !== undefined) pushBack(retryAfterMs);
      this.#options.onError?.(error, action);
      this.#plan.failed(action, { permanent, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
    }
  }
}

/** The terminal's way: each new piece is written once, as it comes. */
export interface AppendWriter {
  update(textSoFar: string): void;
  /** Writes what is left of `final` and ends the reply; false when nothing was written or `final` does not continue it (then send it whole). */
  finish(final: string): Promise<boolean>;
  readonly text: string;
  readonly shown: boolean;
}

export function createAppendWriter(adapter: ChatAdapter, target: ChatTarget, onError: (error: unknown) => void): AppendWriter {
  return new AppendStream(adapter, target, onError);
}

/** The `AppendWriter`: what was written, and the writes in order. */
export class AppendStream implements AppendWriter {
  /** An adapter with `write` (an output that cannot change what it showed). */
  readonly #adapter: ChatAdapter;
  /** The chat the reply goes to. */
  readonly #target: ChatTarget;
  /** Hears a failed write; the writes after it still go. */
  readonly #onError: (error: unknown) => void;
  /** The text written so far (or queued to be); only ever extended. */
  #written = "";
  /** The last write queued: each write waits for the one before, so pieces arrive in order. Never rejects. */
  #chain: Promise<void> = Promise.resolve();

  constructor(adapter: ChatAdapter, target: ChatTarget, onError: (error: unknown) => void) {
    this.#adapter = adapter;
    this.#target = target;
    this.#onError = onError;
  }

  get text(): string {
    return this.#written;
  }

  get shown(): boolean {
    return this.#written.length > 0;
  }

  update(next: string): void {
    const t = norm(next);
    if (!t.startsWith(this.#written) || t === this.#written) return;
    this.#write(t.slice(this.#written.length), false);
    this.#written = t;
  }

  async finish(final: string): Promise<boolean> {
    const t = norm(final);
    const written = this.#written;
    const continues = t.startsWith(written);
    if (written) this.#write(continues ? t.slice(written.length) : "", true);
    await this.#chain;
    return !!written && continues;
  }

  #write(piece: string, end: boolean): void {
    this.#chain = this.#chain.then(() => this.#adapter.appends?.write(this.#target, piece, { end })).catch(this.#onError);
  }
}
