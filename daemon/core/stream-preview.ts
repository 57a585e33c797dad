/**
 * The stream-preview planner: given a reply that grows as the agent writes
 * it, decides which platform messages to send and edit, and when, so the
 * person sees the text early, edits stay within the platform's rate, and the
 * end state is exactly the reply, split into clean chunks. Pure: no platform
 * knowledge, no I/O, no timers; time is read from the injected clock.
 *
 * The caller (the relay) drives it:
 *
 *   const plan = createStreamPreview({ measure, limit, clock, minEditIntervalMs: 1000 });
 *   on each delta:  plan.update(textSoFar); pump();
 *   on completion:  plan.finish(finalText); pump();
 *   pump(): loop on plan.next():
 *     "send"   -> send action.text as a new message; remember its id under action.message;
 *                 plan.sent(action)   (or plan.failed(action, {...}))
 *     "edit"   -> edit message action.message to action.text; plan.sent(action) (also when the
 *                 platform says "not modified") or plan.failed(action, {...})
 *     "delete" -> best effort; plan.sent(action) or plan.failed(action, {...}), either is fine
 *     "wait"   -> call next() again at `until` (a timer), or sooner when update()/finish() is called
 *     "busy"   -> an action is still unreported: report it first
 *     "idle"   -> nothing to do until update()/finish()
 *     "done"   -> every message shows its final text (or the plan gave up: `gaveUp`)
 *
 * Guarantees (given the caller reports every action it performed):
 * - One action at a time: `next()` hands out nothing new while one is
 *   unreported, so a late preview edit can never overwrite a final one.
 * - Operations (sends, edits, deletes) are at least `minEditIntervalMs` apart,
 *   except the first send, which goes out as soon as there is visible text; a
 *   `retryAfterMs` told to `failed()` pushes the next operation back that far.
 * - Every message's text measures at most `limit`; when the text outgrows the
 *   current message, that message is finished at a clean chunk boundary
 *   (`placeChunks`, fence-aware) and the preview continues in a new one.
 * - After `finish()`, messages end with exactly the chunks of the final text
 *   (finished messages keep their chunk; the rest is split like `splitReply`),
 *   and "done" comes only once each message was confirmed with its final text.
 * - A preview edit that fails for good (`permanent`) stops the previews: at
 *   the end, the final text of that message and all after it is sent as new
 *   messages, and the broken preview is deleted (best effort). Never silence,
 *   never two copies of a finished chunk.
 * - A send that fails for good ends the plan (`gaveUp`); the caller tells the
 *   person through its usual failure path.
 *
 * Restart: `state()` is plain JSON; journal it with the platform message ids
 * (by index) and pass it back as `resume` to finish the same messages after a
 * crash (`finish(answer)` then edits them to the final text). An action that
 * was in flight at the crash is not in the state: a send may have happened
 * without its id being journaled (the one-message window of the delivery
 * contract).
 */
import type { Clock } from "../../shared/clock.js";
import { closeOpenFence, placeChunks } from "./chunking.js";

export interface StreamPreviewOptions {
  /** The platform's visible length of a Markdown text once rendered (Telegram: characters after entity parsing). */
  measure(text: string): number;
  /** The platform's longest message, in `measure` units (Telegram 4096, Discord 2000). */
  limit: number;
  /** Read for `now()` only. */
  clock: Clock;
  /** Least time between two operations on the chat, ms (Telegram: 1000). */
  minEditIntervalMs: number;
  /** Visible characters before the first preview is sent (default 1: as soon as there is text). */
  minFirstChars?: number;
  /** A plan journaled by `state()` before a restart. */
  resume?: StreamPreviewState;
}

export type PreviewAction =
  | { kind: "send"; message: number; text: string }
  | { kind: "edit"; message: number; text: string }
  | { kind: "delete"; message: number }
  | { kind: "wait"; until: number }
  | { kind: "busy" }
  | { kind: "idle" }
  | { kind: "done" };

/** What `failed()` is told. */
export interface PreviewFailure {
  /** The platform refused for good (message deleted, chat gone, text refused). */
  permanent?: boolean;
  /** Wait this long before the next operation (Telegram `retry_after` × 1000). Default: `minEditIntervalMs`. */
  retryAfterMs?: number;
}

export interface PreviewMessage {
  /** What it should show: its final text once `final`, else the latest preview. */
  target: string;
  /** What it was confirmed to show; null while not sent. */
  shown: string | null;
  /** Its text will not change again. */
  final: boolean;
  /** A permanent edit failure: its final text goes in a new message, and it is deleted. */
  broken: boolean;
  /** Broken, and its replacement is planned. */
  replaced: boolean;
  deleted: boolean;
}

/** Plain JSON, for the journal. */
export interface StreamPreviewState {
  messages: PreviewMessage[];
  /** Where the open message's content starts in the text. */
  restStart: number;
  /** The fence reopening the open message starts with. */
  reopen: string;
  /** The text so far (normalised: `\r\n` as `\n`). */
  text: string;
  finished: boolean;
  degraded: boolean;
  gaveUp: boolean;
}

export interface StreamPreview {
  /** The whole text so far (each call extends the previous one). */
  update(text: string): void;
  /** The stream ended with this text (normally the last `update`'s). */
  finish(text: string): void;
  /** What to do now; marks a send/edit/delete as in flight until reported. */
  next(): PreviewAction;
  /** The action handed out by `next()` was performed. */
  sent(action: PreviewAction): void;
  /** The action handed out by `next()` failed. */
  failed(action: PreviewAction, failure?: PreviewFailure): void;
  state(): StreamPreviewState;
  readonly gaveUp: boolean;
}

const visible = (text: string) => text.trim() !== "";

export function createStreamPreview(options: StreamPreviewOptions): StreamPreview {
  return new PreviewPlan(options);
}

const fresh = (target: string, final: boolean): PreviewMessage => ({
  target,
  shown: null,
  final,
  broken: false,
  replaced: false,
  deleted: false,
});

const normal = (t: string) => t.replace(/\r\n?/g, "\n");

/** How the open part shows while it is still being written. */
const previewOf = (b: string) => closeOpenFence(b.trim());

/** The `StreamPreview`: one reply's messages and where the plan stands. */
export class PreviewPlan implements StreamPreview {
  /** The platform's visible length of a Markdown text once rendered. */
  readonly #measure: (text: string) => number;
  /** The platform's longest message, in `#measure` units; a positive integer. */
  readonly #limit: number;
  /** Read for `now()` only. */
  readonly #clock: Clock;
  /** Least time between two operations on the chat, ms. */
  readonly #minEditIntervalMs: number;
  /** Visible length before the first preview is sent. */
  readonly #minFirst: number;
  /** The platform messages, in order; each index is the `message` of the actions about it. */
  readonly #messages: PreviewMessage[];
  /** Where the open message's content starts in `#text`; only grows while writing. */
  #restStart: number;
  /** The fence the open message reopens with ("" outside a fence). */
  #reopen: string;
  /** The text so far (normalised: `\r\n` as `\n`). */
  #text: string;
  /** The final text is laid out: every message is final. */
  #finished: boolean;
  /** A preview edit failed for good: no more previews, only the final text. */
  #degraded: boolean;
  /** A send failed for good: the plan is over. */
  #gaveUp: boolean;
  /** A final text not yet laid out (waits while an action is in flight: layouts at the end may renumber unsent messages). */
  #pendingFinal: string | undefined;
  /** The action handed out by `next()` and not yet reported; at most one. */
  #inFlight: PreviewAction | undefined;
  /** No operation before this time. */
  #notBefore = Number.NEGATIVE_INFINITY;
  /** Some message was confirmed sent (the first send is not held back; later ones are). */
  #anySent: boolean;

  constructor(options: StreamPreviewOptions) {
    const { limit } = options;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError("limit must be a positive integer");
    this.#measure = options.measure;
    this.#limit = limit;
    this.#clock = options.clock;
    this.#minEditIntervalMs = options.minEditIntervalMs;
    this.#minFirst = options.minFirstChars ?? 1;
    const saved = options.resume;
    this.#messages = saved ? saved.messages.map((m) => ({ ...m })) : [];
    this.#restStart = saved?.restStart ?? 0;
    this.#reopen = saved?.reopen ?? "";
    this.#text = saved?.text ?? "";
    this.#finished = saved?.finished ?? false;
    this.#degraded = saved?.degraded ?? false;
    this.#gaveUp = saved?.gaveUp ?? false;
    this.#anySent = this.#messages.some((m) => m.shown !== null);
  }

  get gaveUp(): boolean {
    return this.#gaveUp;
  }

  update(next: string): void {
    if (this.#finished || this.#pendingFinal !== undefined || this.#gaveUp) return;
    this.#text = normal(next);
    this.#layoutWriting();
  }

  finish(final: string): void {
    if (this.#finished || this.#pendingFinal !== undefined || this.#gaveUp) return;
    this.#pendingFinal = normal(final);
  }

  next(): PreviewAction {
    if (this.#gaveUp) return { kind: "done" };
    if (this.#inFlight) return { kind: "busy" };
    const action = this.#due();
    if (!action) return this.#finished ? { kind: "done" } : { kind: "idle" };
    const now = this.#clock.now();
    // The very first send is not held back: that is the point of a preview.
    const first = action.kind === "send" && !this.#anySent;
    if (!first && now < this.#notBefore) return { kind: "wait", until: this.#notBefore };
    this.#notBefore = now + this.#minEditIntervalMs;
    this.#inFlight = action;
    return action;
  }

  sent(action: PreviewAction): void {
    if (action !== this.#inFlight) return;
    this.#inFlight = undefined;
    const m = "message" in action ? this.#messages[action.message] : undefined;
    if (!m) return;
    if (action.kind === "delete") m.deleted = true;
    else if (action.kind === "send" || action.kind === "edit") {
      m.shown = action.text;
      this.#anySent = true;
    }
  }

  failed(action: PreviewAction, failure: PreviewFailure = {}): void {
    if (action !== this.#inFlight) return;
    this.#inFlight = undefined;
    this.#notBefore = Math.max(this.#notBefore, this.#clock.now() + (failure.retryAfterMs ?? this.#minEditIntervalMs));
    const m = "message" in action ? this.#messages[action.message] : undefined;
    if (!m) return;
    // Best effort: a broken preview that cannot be deleted stays.
    if (action.kind === "delete") m.deleted = true;
    else if (failure.permanent && action.kind === "send") this.#gaveUp = true;
    else if (failure.permanent && action.kind === "edit") {
      m.broken = true;
      this.#degraded = true;
    }
  }

  state(): StreamPreviewState {
    return {
      messages: this.#messages.map((m) => ({ ...m })),
      restStart: this.#restStart,
      reopen: this.#reopen,
      text: this.#text,
      finished: this.#finished,
      degraded: this.#degraded,
      gaveUp: this.#gaveUp,
    };
  }

  /** Chunks that each measure within the limit: the raw limit shrinks while one does not. */
  #place(body: string) {
    const limit = this.#limit;
    let raw = limit;
    for (;;) {
      const chunks = placeChunks(body, raw);
      const worst = Math.max(0, ...chunks.map((c) => this.#measure(c.text)));
      if (worst <= limit || raw <= 16) return chunks;
      raw = Math.max(16, Math.min(raw - 1, Math.floor((raw * limit) / worst)));
    }
  }

  #openMessage(): PreviewMessage | undefined {
    const last = this.#messages.at(-1);
    return last && !last.final ? last : undefined;
  }

  #setOpen(target: string, final: boolean): void {
    const open = this.#openMessage();
    if (open) {
      open.target = target;
      open.final = final;
    } else if (visible(target)) this.#messages.push(fresh(target, final));
  }

  #body(): string {
    return this.#reopen + this.#text.slice(this.#restStart);
  }

  /** While writing: finishes messages the text outgrew, then updates the open preview. */
  #layoutWriting(): void {
    for (;;) {
      const b = this.#body();
      const chunks = this.#place(b);
      if (chunks.length <= 1 && this.#measure(previewOf(b)) <= this.#limit) break;
      const [first, second] = chunks;
      if (!first || !second) break; // only a closing fence overflows: the preview waits for more text
      // The open message ends with its first chunk, for good; the rest continues in a new one.
      this.#setOpen(first.text, true);
      this.#restStart = this.#restStart - this.#reopen.length + second.start;
      this.#reopen = second.prefix;
    }
    const preview = previewOf(this.#body());
    if (this.#openMessage() || this.#measure(preview) >= this.#minFirst) this.#setOpen(preview, false);
  }

  /** At the end: the open part, split into final chunks (or everything again if the final text rewrote the start). */
  #layoutFinal(final: string): void {
    const messages = this.#messages;
    const consumed = this.#text.slice(0, this.#restStart);
    this.#text = final;
    if (final.startsWith(consumed)) {
      const chunks = this.#place(this.#body());
      const open = this.#openMessage();
      if (chunks.length === 0 && open) {
        // A blank tail is no message (and a shown one, from a longer text, goes).
        if (open.shown === null) messages.pop();
        else Object.assign(open, { broken: true, replaced: true });
      }
      chunks.forEach((c, i) => {
        if (i === 0) this.#setOpen(c.text, true);
        else messages.push(fresh(c.text, true));
      });
    } else {
      const chunks = this.#place(final).map((c) => c.text);
      chunks.forEach((c, i) => {
        const m = messages[i];
        if (m) Object.assign(m, { target: c, final: true });
        else messages.push(fresh(c, true));
      });
      // Messages beyond the new layout: unsent ones vanish, shown ones are deleted.
      for (let i = messages.length - 1; i >= chunks.length; i--) {
        const m = messages[i]!;
        if (m.shown === null) messages.splice(i, 1);
        else Object.assign(m, { broken: true, replaced: true, final: true });
      }
    }
    for (const m of messages) m.final = true;
  }

  /** Broken messages get their final text in a new message, placed before anything not yet sent. */
  #replaceBroken(): void {
    const messages = this.#messages;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      if (!m.broken || m.replaced) continue;
      m.replaced = true;
      if (!visible(m.target)) continue;
      let at = i + 1;
      while (at < messages.length && messages[at]!.shown !== null) at++;
      messages.splice(at, 0, fresh(m.target, true));
    }
  }

  #due(): PreviewAction | undefined {
    if (this.#pendingFinal !== undefined) {
      this.#layoutFinal(this.#pendingFinal);
      this.#pendingFinal = undefined;
      this.#finished = true;
    }
    if (this.#finished) this.#replaceBroken();
    const messages = this.#messages;
    // In order: a message's final edit goes before the next message is sent.
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      if (m.deleted) continue;
      if (m.broken) {
        // Deleted once everything after it is delivered.
        const rest = messages.slice(i + 1);
        if (this.#finished && rest.every((n) => n.broken || n.deleted || n.shown === n.target)) return { kind: "delete", message: i };
        continue;
      }
      if (this.#degraded && !this.#finished) return undefined; // previews stopped: nothing until the final text
      if (m.shown === null) return visible(m.target) ? { kind: "send", message: i, text: m.target } : undefined;
      if (m.shown !== m.target) return { kind: "edit", message: i, text: m.target };
    }
    return undefined;
  }
}
