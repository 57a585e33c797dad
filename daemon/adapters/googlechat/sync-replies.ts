/**
 * Replies given in the HTTP response itself. Chat waits about 30 s for the
 * answer to the request that brought a message; the bridge keeps that request
 * open for `windowMs` after the core journaled the message, and the first
 * ordinary reply sent to that message within it becomes the answer's body.
 * Past the window the request is answered empty and every reply goes through
 * the Chat API. One reply, one way: a reply is either taken by the open
 * request (the slot is gone once taken or expired, in one step) or sent
 * through the API, never both; a taken reply whose answer could not be
 * written fails its send (transient), so the core sends it again, through the
 * API since the slot is gone. A streamed reply is never taken (it must be
 * edited, and a response's message has no id the app learns).
 */
import type { Clock, Timer } from "../../../shared/clock.js";
import { SendError, type SendReceipt } from "../../vocabulary/adapter.js";
import type { ChatMessageBody } from "./outbound.js";

export interface SyncAnswer {
  body: ChatMessageBody;
  /** Told whether the answer was written out. */
  written(ok: boolean): void;
}

interface Slot {
  resolve(answer: SyncAnswer | undefined): void;
  timer: Timer;
}

export class SyncReplies {
  /** The clock and the window (injected; never change). */
  readonly #clock: Clock;
  readonly #windowMs: number;
  /** Message name → the open request waiting for its reply. */
  readonly #slots = new Map<string, Slot>();
  /** Set by closeAll (stopping): no request waits any more. */
  #closed = false;

  constructor(clock: Clock, windowMs: number) {
    this.#clock = clock;
    this.#windowMs = windowMs;
  }

  /**
   * Waits up to the window for a reply to `messageId`; undefined when none came (or the window
   * is 0), and at once when `signal` aborts (the platform closed the request: nobody would read it).
   */
  wait(messageId: string, signal?: AbortSignal): Promise<SyncAnswer | undefined> {
    if (this.#windowMs <= 0 || this.#closed || this.#slots.has(messageId) || signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const expire = () => {
        if (this.#slots.get(messageId) !== slot) return;
        this.#slots.delete(messageId);
        slot.timer.cancel();
        resolve(undefined);
      };
      const slot: Slot = { resolve, timer: this.#clock.setTimeout(expire, this.#windowMs) };
      this.#slots.set(messageId, slot);
      signal?.addEventListener("abort", expire, { once: true });
    });
  }

  /**
   * Offers a reply to `messageId`: undefined when no request waits for one (send it through
   * the API); else it is the request's answer, and the promise settles once it was written
   * (rejects with a transient `SendError` when it could not be, so the core sends it again).
   */
  offer(messageId: string | undefined, body: ChatMessageBody): Promise<SendReceipt> | undefined {
    const slot = messageId === undefined ? undefined : this.#slots.get(messageId);
    if (!slot || messageId === undefined) return undefined;
    this.#slots.delete(messageId);
    slot.timer.cancel();
    return new Promise<SendReceipt>((resolve, reject) => {
      slot.resolve({
        body,
        written: (ok) => (ok ? resolve({}) : reject(new SendError("the HTTP answer carrying the reply could not be written", { permanent: false }))),
      });
    });
  }

  /** Every waiting request is answered empty now, and later ones at once (stopping): their replies go through the API. */
  closeAll(): void {
    this.#closed = true;
    for (const [id, slot] of this.#slots) {
      this.#slots.delete(id);
      slot.timer.cancel();
      slot.resolve(undefined);
    }
  }
}
