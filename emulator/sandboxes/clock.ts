/**
 * Time per sandbox. A request runs inside its sandbox's context (set once the
 * sandbox is known from its API key, see attribution.ts); the emulator's one
 * clock then reads the sandbox's own time: the base clock plus the sandbox's
 * offset, which only `advance` moves. Timers started in a sandbox (a fault's
 * latency) fire when the base clock gets there or when the sandbox's clock is
 * moved past them, whichever comes first. Outside a sandbox it is the base clock.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { type Clock, sleepOn, type Timer } from "../../shared/clock.js";

export interface SandboxClocks {
  /** The clock every part of the emulator reads: the current sandbox's time. */
  readonly clock: Clock;
  /** The sandbox the current request belongs to, if any. */
  current(): string | undefined;
  /** Puts the rest of the current request (and what it awaits) in a sandbox. */
  enter(sandboxId: string | undefined): void;
  /** Runs `fn` inside a sandbox (the control plane acting on one). */
  run<T>(sandboxId: string, fn: () => T): T;
  /** Fires the sandbox's timers now due (after its offset moved); returns how many fired. */
  fireDue(sandboxId: string): number;
  /** Timers of the sandbox neither fired nor cancelled (what a move of its clock may make happen). */
  pending(sandboxId: string): number;
  /** Drops a removed sandbox's pending timers without firing them. */
  forget(sandboxId: string): void;
  /**
   * Ends the context tracking (the emulator closes). Node keeps every AsyncLocalStorage that
   * was ever entered in one process-wide list, which each new promise and callback walks,
   * until it is disabled: a test process that creates an emulator per test otherwise gets
   * slower with each one. After this, `enter` does nothing and `run` (and a timer firing) puts
   * only the synchronous part of its function in the sandbox.
   */
  close(): void;
}

interface PendingTimer {
  at: number;
  fire(): void;
}

/** `offsetOf` reads the offset from its one owner, the sandbox's stored record. */
export function createSandboxClocks(base: Clock, offsetOf: (sandboxId: string) => number): SandboxClocks {
  const context = new AsyncLocalStorage<string | undefined>();
  let closed = false;
  // Once closed the context is no longer tracked: what runs in a sandbox then (a timer that
  // fires late, an in-process view read) is in it for its synchronous part.
  let currentWhenClosed: string | undefined;
  const current = () => (closed ? currentWhenClosed : context.getStore());
  const within = <T>(id: string, fn: () => T): T => {
    if (!closed) return context.run(id, fn);
    const outer = currentWhenClosed;
    currentWhenClosed = id;
    try {
      return fn();
    } finally {
      currentWhenClosed = outer;
    }
  };
  const timers = new Map<string, Set<PendingTimer>>();
  const nowIn = (id: string | undefined) => base.now() + (id === undefined ? 0 : offsetOf(id));

  const clock: Clock = {
    now: () => nowIn(current()),
    setTimeout(fn, ms): Timer {
      const id = current();
      if (id === undefined) return base.setTimeout(fn, ms);
      const pending = timers.get(id) ?? new Set<PendingTimer>();
      timers.set(id, pending);
      let baseTimer: Timer | undefined;
      const entry: PendingTimer = {
        at: nowIn(id) + ms,
        fire() {
          if (!pending.delete(entry)) return;
          baseTimer?.cancel();
          // The callback runs in the sandbox it was started in.
          within(id, fn);
        },
      };
      pending.add(entry);
      baseTimer = base.setTimeout(() => entry.fire(), ms);
      return {
        cancel() {
          pending.delete(entry);
          baseTimer?.cancel();
        },
      };
    },
    // Outside a sandbox the base clock's own sleep (a test clock may count or step its sleepers).
    sleep: (ms, signal) => (current() === undefined ? base.sleep(ms, signal) : sleepOn(clock, ms, signal)),
  };

  return {
    clock,
    current,
    enter(sandboxId) {
      // Leaving no sandbox for no sandbox changes nothing: requests outside sandboxes never
      // turn the tracking on.
      if (closed || (sandboxId === undefined && context.getStore() === undefined)) return;
      context.enterWith(sandboxId);
    },
    run: within,
    fireDue(sandboxId) {
      const pending = timers.get(sandboxId);
      if (!pending) return 0;
      const now = nowIn(sandboxId);
      const due = [...pending].filter((t) => t.at <= now).sort((a, b) => a.at - b.at);
      for (const t of due) t.fire();
      return due.length;
    },
    pending: (sandboxId) => timers.get(sandboxId)?.size ?? 0,
    forget(sandboxId) {
      const pending = timers.get(sandboxId);
      timers.delete(sandboxId);
      // Cancelled, not fired: whatever waited on them belongs to a sandbox that is gone.
      for (const t of pending ?? []) pending?.delete(t);
    },
    close() {
      closed = true;
      context.disable();
    },
  };
}
