/**
 * Who runs when. One p-queue per instance bounds the turns in flight against
 * that instance; inside it each session has at most one turn in flight and its
 * turns run in arrival order. Messages of one session arriving within
 * `debounceMs` of each other become one turn. Waiting messages are bounded per
 * session and in total: `reserve` refuses beyond the bounds, and the caller
 * tells the person (nothing is dropped silently).
 *
 * A session here is an instance and a route's session base (`SlotKey`,
 * keys.ts): the same conversation on two instances queues apart.
 *
 * Time comes from the injected clock, so tests move it instead of sleeping.
 */
import PQueue from "p-queue";
import type { Clock, Timer } from "../../shared/clock.js";
import { slotKeyOf, type SlotKey } from "../vocabulary/keys.js";

export interface Turn<T> {
  instanceId: string;
  /** The route's session base (not the store's session key, which adds the instance). */
  sessionBase: string;
  /** One or more messages (several when a burst was merged), in arrival order. */
  items: T[];
}

export interface SchedulerOptions<T> {
  clock: Clock;
  concurrencyPerInstance: number;
  maxPendingPerSession: number;
  maxPendingTotal: number;
  /** 0: every message is its own turn. */
  debounceMs: number;
  /** A burst that never pauses still becomes a turn after this long (default 4 × debounceMs). */
  maxDebounceMs?: number;
  run(turn: Turn<T>): Promise<void>;
  /** `run` threw: the turn is over either way (the relay handles its own errors; this is a last resort). */
  onError?(error: unknown, turn: Turn<T>): void;
  /** Waiting or running turns of this instance changed (for a gauge). */
  onDepth?(instanceId: string): void;
  /** Queue but start nothing until `release()` (the daemon resumes the journal before adapters run). */
  held?: boolean;
}

export type Refusal = { ok: false; reason: "session_full" | "total_full" };
export interface Reservation<T> {
  ok: true;
  /** Hands the reserved slot its message. */
  submit(item: T): void;
  /** Gives the slot back (the message was not taken after all). */
  cancel(): void;
}

export interface QueueDepth {
  /** Messages of this session waiting (not in flight). */
  sessionWaiting: number;
  /** Whether this session has a turn in flight. */
  sessionBusy: boolean;
  instanceWaiting: number;
  instanceRunning: number;
  totalWaiting: number;
}

export interface Scheduler<T> {
  /** Takes a waiting slot if the bounds allow; synchronous, so a slot cannot be promised twice. */
  reserve(instanceId: string, sessionBase: string): Reservation<T> | Refusal;
  /** Queues a message regardless of bounds (resuming after a restart). */
  enqueue(instanceId: string, sessionBase: string, item: T, options?: { debounce?: boolean }): void;
  /** Queues an already formed turn (after a restart), behind the session's earlier turns. */
  enqueueTurn(instanceId: string, sessionBase: string, items: T[]): void;
  depth(instanceId?: string, sessionBase?: string): QueueDepth;
  /** Turns running now, per instance. */
  running(): Map<string, number>;
  /**
   * Takes every message of the session that has not started (/stop): they
   * will not run. A turn handed to the instance queue but not started keeps
   * its place and starts with its items, which the caller forgets.
   */
  drop(instanceId: string, sessionBase: string): T[];
  /** Starts turns (when created `held`). */
  release(): void;
  /** Stops starting turns; waiting ones stay queued (their journal entries survive). */
  stop(): void;
  /** Resolves when no turn is in flight. */
  whenIdle(): Promise<void>;
}

interface SessionSlot<T> {
  key: SlotKey;
  instanceId: string;
  sessionBase: string;
  /** Slots promised by `reserve` and not yet submitted or cancelled. */
  reserved: number;
  /** Messages being debounced into the next turn, in arrival order. */
  buffer: T[];
  /** When the buffer's first message came (a burst that never pauses is cut at `maxDebounceMs`). */
  firstBufferedAt: number;
  /** Flushes the buffer when the debounce ends; set exactly while `buffer` is non-empty and debounced. */
  timer?: Timer;
  /** Formed turns not yet handed to the instance queue, in order. */
  turns: T[][];
  /** The turn handed to the instance queue, and whether it has started. */
  active?: { items: T[]; started: boolean };
}

export function createScheduler<T>(options: SchedulerOptions<T>): Scheduler<T> {
  const { clock } = options;
  const maxDebounce = options.maxDebounceMs ?? options.debounceMs * 4;
  /** One queue per instance: bounds its turns in flight. */
  const queues = new Map<string, PQueue>();
  /** Slots with anything reserved, buffered, queued or active; an empty one is forgotten (`forget`). */
  const sessions = new Map<SlotKey, SessionSlot<T>>();
  /** Turns running now, per instance. */
  const runningPer = new Map<string, number>();
  /** Messages waiting (reserved, buffered, in a formed turn, or handed over but not started), across every session. */
  let totalWaiting = 0;
  /**
   * The same count per instance (the sum of `waitingOf` over its slots), kept
   * as it changes: `depth` is read on every change (the queue-depth gauge), and
   * summing every slot there cost O(chats) per message.
   */
  const waitingPer = new Map<string, number>();
  /** `stop()` was called: nothing starts any more. */
  let stopped = false;
  /** Nothing starts until `release()`. */
  let held = options.held ?? false;
  /** Turns running now, in all; `idleWaiters` are called when it falls to 0. */
  let inFlight = 0;
  let idleWaiters: (() => void)[] = [];

  const slotFor = (instanceId: string, sessionBase: string): SessionSlot<T> => {
    const key = slotKeyOf(instanceId, sessionBase);
    let s = sessions.get(key);
    if (!s) {
      s = { key, instanceId, sessionBase, reserved: 0, buffer: [], firstBufferedAt: 0, turns: [] };
      sessions.set(key, s);
    }
    return s;
  };

  const waitingOf = (s: SessionSlot<T>): number =>
    s.reserved + s.buffer.length + s.turns.reduce((n, t) => n + t.length, 0) + (s.active && !s.active.started ? s.active.items.length : 0);

  const changeWaiting = (delta: number, instanceId: string) => {
    totalWaiting += delta;
    const waiting = (waitingPer.get(instanceId) ?? 0) + delta;
    if (waiting === 0) waitingPer.delete(instanceId);
    else waitingPer.set(instanceId, waiting);
    options.onDepth?.(instanceId);
  };

  const forget = (s: SessionSlot<T>) => {
    if (!s.active && !s.reserved && !s.buffer.length && !s.turns.length) sessions.delete(s.key);
  };

  const queueFor = (instanceId: string): PQueue => {
    let q = queues.get(instanceId);
    if (!q) {
      q = new PQueue({ concurrency: options.concurrencyPerInstance });
      queues.set(instanceId, q);
    }
    return q;
  };

  const pump = (s: SessionSlot<T>) => {
    if (stopped || held || s.active || !s.turns.length) return;
    const items = s.turns.shift()!;
    const active = { items, started: false };
    s.active = active;
    const turn: Turn<T> = { instanceId: s.instanceId, sessionBase: s.sessionBase, items };
    queueFor(s.instanceId)
      .add(async () => {
        active.started = true;
        inFlight++;
        runningPer.set(s.instanceId, (runningPer.get(s.instanceId) ?? 0) + 1);
        changeWaiting(-items.length, s.instanceId);
        try {
          await options.run(turn);
        } catch (error) {
          options.onError?.(error, turn);
        } finally {
          runningPer.set(s.instanceId, (runningPer.get(s.instanceId) ?? 1) - 1);
          inFlight--;
          options.onDepth?.(s.instanceId);
          if (inFlight === 0) {
            const waiters = idleWaiters;
            idleWaiters = [];
            for (const w of waiters) w();
          }
        }
      })
      .catch(() => undefined)
      .finally(() => {
        if (s.active === active) s.active = undefined;
        pump(s);
        forget(s);
      });
  };

  const flush = (s: SessionSlot<T>) => {
    s.timer?.cancel();
    s.timer = undefined;
    if (!s.buffer.length) return;
    s.turns.push(s.buffer);
    s.buffer = [];
    pump(s);
  };

  const place = (s: SessionSlot<T>, item: T, debounce: boolean) => {
    if (!debounce || options.debounceMs <= 0) {
      // Keep arrival order behind anything still being debounced.
      if (s.buffer.length) flush(s);
      s.turns.push([item]);
      pump(s);
      return;
    }
    const now = clock.now();
    if (!s.buffer.length) s.firstBufferedAt = now;
    s.buffer.push(item);
    s.timer?.cancel();
    const due = Math.min(now + options.debounceMs, s.firstBufferedAt + maxDebounce);
    s.timer = clock.setTimeout(() => flush(s), Math.max(0, due - now));
  };

  return {
    reserve(instanceId, sessionBase) {
      const s = slotFor(instanceId, sessionBase);
      if (waitingOf(s) >= options.maxPendingPerSession) {
        forget(s);
        return { ok: false, reason: "session_full" };
      }
      if (totalWaiting >= options.maxPendingTotal) {
        forget(s);
        return { ok: false, reason: "total_full" };
      }
      s.reserved++;
      changeWaiting(1, instanceId);
      let used = false;
      return {
        ok: true,
        submit(item) {
          if (used) throw new Error("reservation already used");
          used = true;
          s.reserved--;
          // The slot's count moves from `reserved` to the buffer or a turn: the total stays.
          sessions.set(s.key, s);
          place(s, item, true);
        },
        cancel() {
          if (used) return;
          used = true;
          s.reserved--;
          changeWaiting(-1, instanceId);
          forget(s);
        },
      };
    },
    enqueue(instanceId, sessionBase, item, opts) {
      const s = slotFor(instanceId, sessionBase);
      changeWaiting(1, instanceId);
      place(s, item, opts?.debounce ?? true);
    },
    enqueueTurn(instanceId, sessionBase, items) {
      if (!items.length) return;
      const s = slotFor(instanceId, sessionBase);
      changeWaiting(items.length, instanceId);
      if (s.buffer.length) flush(s);
      s.turns.push(items);
      pump(s);
    },
    depth(instanceId, sessionBase) {
      const s = instanceId !== undefined && sessionBase !== undefined ? sessions.get(slotKeyOf(instanceId, sessionBase)) : undefined;
      const q = instanceId !== undefined ? queues.get(instanceId) : undefined;
      const instanceWaiting = instanceId !== undefined ? (waitingPer.get(instanceId) ?? 0) : 0;
      return {
        sessionWaiting: s ? waitingOf(s) : 0,
        sessionBusy: !!s?.active?.started,
        instanceWaiting,
        instanceRunning: q?.pending ?? 0,
        totalWaiting,
      };
    },
    running: () => new Map(runningPer),
    drop(instanceId, sessionBase) {
      const s = sessions.get(slotKeyOf(instanceId, sessionBase));
      if (!s) return [];
      s.timer?.cancel();
      s.timer = undefined;
      const taken = [...s.buffer, ...s.turns.flat()];
      s.buffer = [];
      s.turns = [];
      if (taken.length) changeWaiting(-taken.length, instanceId);
      const handed = s.active && !s.active.started ? [...s.active.items] : [];
      forget(s);
      return [...handed, ...taken];
    },
    release() {
      if (!held) return;
      held = false;
      for (const s of [...sessions.values()]) pump(s);
    },
    stop() {
      stopped = true;
      for (const s of sessions.values()) {
        s.timer?.cancel();
        s.timer = undefined;
      }
      for (const q of queues.values()) {
        q.pause();
        q.clear();
      }
    },
    whenIdle() {
      if (inFlight === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
}
