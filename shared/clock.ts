/**
 * Time as an explicit dependency, so tests move it instead of sleeping.
 * `systemClock` is the real one; `createManualClock` only advances when told.
 */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): Timer;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(handle) };
  },
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
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
    sleep: (ms) => new Promise((resolve) => clock.setTimeout(resolve, ms)),
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
