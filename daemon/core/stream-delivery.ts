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
import { createStreamPreview, type PreviewAction } from "./stream-preview.js";
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
  /** Aborted when the daemon halts: the driver stops where it is (the journal keeps the preview). */
  signal: AbortSignal;
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
  const { adapter, target, clock, gate, signal } = options;
  const interval = adapter.limits.minEditIntervalMs ?? 1000;
  const plan = createStreamPreview({
    measure: (text) => adapter.measure(text, "markdown"),
    limit: adapter.limits.maxMessageLength,
    clock,
    minEditIntervalMs: interval,
    ...(options.resume ? { resume: options.resume.state } : {}),
  });
  const ids: (string | null)[] = options.resume ? [...options.resume.ids] : [];
  let text = options.resume?.state.text ?? "";
  let finished = false;
  let failures = 0;
  let wake: (() => void) | undefined;
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const key = chatKeyOf(target);

  /** Waits for `ms`, or less when poked; rejects when halted. */
  async function nap(ms: number | undefined): Promise<void> {
    const cancel = new AbortController();
    const poked = new Promise<void>((resolve) => (wake = resolve));
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
      wake = undefined;
    }
  }

  async function perform(action: PreviewAction): Promise<void> {
    if (action.kind === "send") {
      const receipt = await adapter.send(target, action.text, { format: "markdown" });
      ids[action.message] = receipt?.messageId ?? null;
    } else if (action.kind === "edit") {
      const id = ids[action.message];
      // Without its id a message cannot be edited: its final text goes in a new one.
      if (!id || !adapter.edit) throw new SendError("the preview message cannot be edited", { permanent: true });
      await adapter.edit(target, id, action.text, { format: "markdown" });
    } else if (action.kind === "delete") {
      // No adapter deletes yet: a broken preview stays (its final text was sent below it).
    }
  }

  async function run(): Promise<void> {
    for (;;) {
      if (signal.aborted) throw new StoppingError();
      const action = plan.next();
      if (action.kind === "done") return;
      if (action.kind === "idle" || action.kind === "busy") {
        await nap(undefined);
        continue;
      }
      if (action.kind === "wait") {
        await nap(Math.max(0, action.until - clock.now()));
        continue;
      }
      const free = gate.get(key) ?? 0;
      if (clock.now() < free) await sleep(clock, free - clock.now(), signal).catch(() => Promise.reject(new StoppingError()));
      if (gate.size > 10_000) for (const [k, at] of gate) if (at <= clock.now()) gate.delete(k); // only chats still paced are kept
      gate.set(key, clock.now() + interval);
      try {
        await perform(action);
        // Paced from when the platform answered: the next request cannot reach it sooner than `interval` after this one did.
        gate.set(key, Math.max(gate.get(key) ?? 0, clock.now() + interval));
        failures = 0;
        plan.sent(action);
      } catch (error) {
        gate.set(key, Math.max(gate.get(key) ?? 0, clock.now() + interval));
        failures++;
        const retryAfterMs = error instanceof SendError ? error.retryAfterMs : undefined;
        const permanent = (error instanceof SendError && error.permanent) || failures >= options.maxAttempts;
        if (permanent) failures = 0;
        if (retryAfterMs !== undefined) gate.set(key, Math.max(gate.get(key) ?? 0, clock.now() + retryAfterMs));
        options.onError?.(error, action);
        plan.failed(action, { permanent, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
      }
      // New messages (and deletions) are journaled before anything else happens; edits need not be (redone after a restart).
      if (action.kind !== "edit") await options.record({ state: plan.state(), ids: [...ids] });
    }
  }

  const running = run();
  const settled = running.then(
    () => undefined,
    () => undefined,
  );

  return {
    update(next) {
      if (finished) return;
      const t = norm(next);
      if (!t.startsWith(text)) return;
      text = t;
      plan.update(t);
      poke();
    },
    async finish(final) {
      finished = true;
      text = norm(final);
      plan.finish(text);
      poke();
      await running;
      return plan.gaveUp ? "gave_up" : "done";
    },
    get text() {
      return text;
    },
    get shown() {
      return ids.length > 0;
    },
    settled,
  };
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
  let written = "";
  let chain: Promise<void> = Promise.resolve();
  const write = (piece: string, end: boolean) => {
    chain = chain.then(() => adapter.write?.(target, piece, { end })).catch(onError);
  };
  return {
    update(next) {
      const t = norm(next);
      if (!t.startsWith(written) || t === written) return;
      write(t.slice(written.length), false);
      written = t;
    },
    async finish(final) {
      const t = norm(final);
      const continues = t.startsWith(written);
      if (written) write(continues ? t.slice(written.length) : "", true);
      await chain;
      return !!written && continues;
    },
    get text() {
      return written;
    },
    get shown() {
      return written.length > 0;
    },
  };
}
