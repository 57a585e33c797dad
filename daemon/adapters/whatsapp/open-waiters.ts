/**
 * Sends that wait for the connection to come back: each waits at most
 * `waitMs` on the clock, and all are released together when a socket opens,
 * or refused together when the channel stops. No I/O: the clock is injected.
 */
import type { Clock, Timer } from "../../../shared/clock.js";

interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (err: Error) => void;
  timer: Timer;
}

export class OpenWaiters<T> {
  readonly #clock: Clock;
  readonly #waitMs: number;
  /** Waits not settled yet; each one's timer runs until it is settled, and it leaves the set then. */
  readonly #waiting = new Set<Waiter<T>>();

  constructor(clock: Clock, waitMs: number) {
    this.#clock = clock;
    this.#waitMs = waitMs;
  }

  get size(): number {
    return this.#waiting.size;
  }

  /** Resolves with what `resolveAll` gives, or rejects with `timedOut()` after `waitMs`. */
  wait(timedOut: () => Error): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter<T> = {
        resolve,
        reject,
        timer: this.#clock.setTimeout(() => {
          this.#waiting.delete(waiter);
          reject(timedOut());
        }, this.#waitMs),
      };
      this.#waiting.add(waiter);
    });
  }

  resolveAll(value: T): void {
    for (const w of this.#take()) w.resolve(value);
  }

  rejectAll(err: Error): void {
    for (const w of this.#take()) w.reject(err);
  }

  #take(): Waiter<T>[] {
    const all = [...this.#waiting];
    this.#waiting.clear();
    for (const w of all) w.timer.cancel();
    return all;
  }
}
