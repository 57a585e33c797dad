/**
 * Time as an explicit dependency, so tests move it instead of sleeping.
 * `systemClock` is the real one; `createManualClock` only advances when told.
 *
 * `Clock.sleep(ms, signal?)` is the project's one sleep: every implementation
 * builds it with `sleepOn` over its own `setTimeout`, so an abort behaves the
 * same on every clock (the timer is cancelled and the promise rejects at once).
 */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): Timer;
  /**
   * Resolves after `ms` on this clock. With a `signal`, rejects at once when it
   * aborts (before or during the wait): with the signal's reason when that is
   * an `Error`, else with an `AbortedError`. Callers that only want to stop
   * waiting, not to fail, write `clock.sleep(ms, signal).catch(() => {})`.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** What `Clock.sleep` rejects with when its signal aborts with a reason that is not an `Error`. */
export class AbortedError extends Error {
  override readonly name = "AbortedError";
  constructor() {
    super("aborted");
  }
}

/** The error an aborted wait rejects with: the signal's own reason when it is an `Error`, else an `AbortedError`. */
export const abortReason = (signal: AbortSignal): Error => (signal.reason instanceof Error ? signal.reason : new AbortedError());

/**
 * The abortable sleep every `Clock` implementation uses for its `sleep`: a
 * timer on `clock.setTimeout`, cancelled when `signal` aborts.
 */
export function sleepOn(clock: Pick<Clock, "setTimeout">, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const onAbort = () => {
      timer.cancel();
      reject(abortReason(signal!));
    };
    const timer = clock.setTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(handle) };
  },
  sleep: (ms, signal) => sleepOn(systemClock, ms, signal),
};

export interface ManualClock extends Clock {
  /** Moves time forward, firing due timers in order. */
  advance(ms: number): void;
  set(epochMs: number): void;
}

export function createManualClock(start = Date.parse("2026-01-01T00:00:00Z")): ManualClock {
  let current = start;
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const fireDue = () => {
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of timers) {
        if (entry[1].at <= current && (!next || entry[1].at < next[1].at)) next = entry;
      }
      if (!next) return;
      timers.delete(next[0]);
      next[1].fn();
    }
  };
  const clock: ManualClock = {
    now: () => current,
    setTimeout(fn, ms) {
      const id = ++seq;
      timers.set(id, { at: current + Math.max(0, ms), fn });
      return { cancel: () => void timers.delete(id) };
    },
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
    advance(ms) {
      current += ms;
      fireDue();
    },
    set(epochMs) {
      current = epochMs;
      fireDue();
    },
  };
  return clock;
}

export const isoAt = (ms: number): string => new Date(ms).toISOString();
