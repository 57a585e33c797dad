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
  /**
   * Whether this waiting turn may start as one with the session's other
   * waiting turns (queue mode `collect` or `interrupt`): when a session's
   * next turn starts, it takes every joinable turn behind it, in order.
   * Default: never (each formed turn runs on its own).
   */
  joins?(items: readonly T[]): boolean;
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
  /** Puts the items of a turn that was interrupted back at the head of its session, to start again (with what joins them). */
  putBack(instanceId: string, sessionBase: string, items: T[]): void;
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
  timer: Timer | undefined;
  /** Formed turns not yet handed to the instance queue, in order. */
  turns: T[][];
  /** The turn handed to the instance queue, and whether it has started. */
  active: { items: T[]; started: boolean } | undefined;
}

export function createScheduler<T>(options: SchedulerOptions<T>): Scheduler<T> {
  return new TurnScheduler(options);
}

/** The `Scheduler`: the state every session, instance queue and waiter shares lives here. */
export class TurnScheduler<T> implements Scheduler<T> {
  readonly #options: SchedulerOptions<T>;
  /** One queue per instance, created on its first turn: bounds its turns in flight to `concurrencyPerInstance`. */
  readonly #queues = new Map<string, PQueue>();
  /** Slots with anything reserved, buffered, queued or active; an empty one is forgotten (`#forget`). */
  readonly #sessions = new Map<SlotKey, SessionSlot<T>>();
  /** Turns running now, per instance (an entry may sit at 0). */
  readonly #runningPer = new Map<string, number>();
  /** Messages waiting (reserved, buffered, in a formed turn, or handed over but not started), across every session. */
  #totalWaiting = 0;
  /**
   * The same count per instance (the sum of `#waitingOf` over its slots; no entry at 0), kept
   * as it changes: `depth` is read on every change (the queue-depth gauge), and
   * summing every slot there cost O(chats) per message.
   */
  readonly #waitingPer = new Map<string, number>();
  /** `stop()` was called: nothing starts any more, ever. */
  #stopped = false;
  /** Nothing starts until `release()`; only ever goes from true to false. */
  #held: boolean;
  /** Turns running now, in all; `#idleWaiters` are called (and emptied) when it falls to 0. */
  #inFlight = 0;
  /** `whenIdle` callers waiting for `#inFlight` to reach 0. */
  #idleWaiters: (() => void)[] = [];

  constructor(options: SchedulerOptions<T>) {
    this.#options = options;
    this.#held = options.held ?? false;
  }

  reserve(instanceId: string, sessionBase: string): Reservation<T> | Refusal {
    const s = this.#slotFor(instanceId, sessionBase);
    if (this.#waitingOf(s) >= this.#options.maxPendingPerSession) {
      this.#forget(s);
      return { ok: false, reason: "session_full" };
    }
    if (this.#totalWaiting >= this.#options.maxPendingTotal) {
      this.#forget(s);
      return { ok: false, reason: "total_full" };
    }
    s.reserved++;
    this.#changeWaiting(1, instanceId);
    let used = false;
    return {
      ok: true,
      submit: (item) => {
        if (used) throw new Error("reservation already used");
        used = true;
        s.reserved--;
        // The slot's count moves from `reserved` to the buffer or a turn: the total stays.
        this.#sessions.set(s.key, s);
        this.#place(s, item, true);
      },
      cancel: () => {
        if (used) return;
        used = true;
        s.reserved--;
        this.#changeWaiting(-1, instanceId);
        this.#forget(s);
      },
    };
  }

  enqueue(instanceId: string, sessionBase: string, item: T, opts?: { debounce?: boolean }): void {
    const s = this.#slotFor(instanceId, sessionBase);
    this.#changeWaiting(1, instanceId);
    this.#place(s, item, opts?.debounce ?? true);
  }

  enqueueTurn(instanceId: string, sessionBase: string, items: T[]): void {
    if (!items.length) return;
    const s = this.#slotFor(instanceId, sessionBase);
    this.#changeWaiting(items.length, instanceId);
    if (s.buffer.length) this.#flush(s);
    s.turns.push(items);
    this.#pump(s);
  }

  putBack(instanceId: string, sessionBase: string, items: T[]): void {
    if (!items.length) return;
    const s = this.#slotFor(instanceId, sessionBase);
    this.#changeWaiting(items.length, instanceId);
    s.turns.unshift(items);
    this.#pump(s);
  }

  depth(instanceId?: string, sessionBase?: string): QueueDepth {
    const s = instanceId !== undefined && sessionBase !== undefined ? this.#sessions.get(slotKeyOf(instanceId, sessionBase)) : undefined;
    const q = instanceId !== undefined ? this.#queues.get(instanceId) : undefined;
    const instanceWaiting = instanceId !== undefined ? (this.#waitingPer.get(instanceId) ?? 0) : 0;
    return {
      sessionWaiting: s ? this.#waitingOf(s) : 0,
      sessionBusy: !!s?.active?.started,
      instanceWaiting,
      instanceRunning: q?.pending ?? 0,
      totalWaiting: this.#totalWaiting,
    };
  }

  running(): Map<string, number> {
    return new Map(this.#runningPer);
  }

  drop(instanceId: string, sessionBase: string): T[] {
    const s = this.#sessions.get(slotKeyOf(instanceId, sessionBase));
    if (!s) return [];
    s.timer?.cancel();
    s.timer = undefined;
    const taken = [...s.buffer, ...s.turns.flat()];
    s.buffer = [];
    s.turns = [];
    if (taken.length) this.#changeWaiting(-taken.length, instanceId);
    const handed = s.active && !s.active.started ? [...s.active.items] : [];
    this.#forget(s);
    return [...handed, ...taken];
  }

  release(): void {
    if (!this.#held) return;
    this.#held = false;
    for (const s of [...this.#sessions.values()]) this.#pump(s);
  }

  stop(): void {
    this.#stopped = true;
    for (const s of this.#sessions.values()) {
      s.timer?.cancel();
      s.timer = undefined;
    }
    for (const q of this.#queues.values()) {
      q.pause();
      q.clear();
    }
  }

  whenIdle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  #slotFor(instanceId: string, sessionBase: string): SessionSlot<T> {
    const key = slotKeyOf(instanceId, sessionBase);
    const known = this.#sessions.get(key);
    if (known) return known;
    const s: SessionSlot<T> = { key, instanceId, sessionBase, reserved: 0, buffer: [], firstBufferedAt: 0, timer: undefined, turns: [], active: undefined };
    this.#sessions.set(key, s);
    return s;
  }

  #waitingOf(s: SessionSlot<T>): number {
    return s.reserved + s.buffer.length + s.turns.reduce((n, t) => n + t.length, 0) + (s.active && !s.active.started ? s.active.items.length : 0);
  }

  #changeWaiting(delta: number, instanceId: string): void {
    this.#totalWaiting += delta;
    const waiting = (this.#waitingPer.get(instanceId) ?? 0) + delta;
    if (waiting === 0) this.#waitingPer.delete(instanceId);
    else this.#waitingPer.set(instanceId, waiting);
    this.#options.onDepth?.(instanceId);
  }

  #forget(s: SessionSlot<T>): void {
    if (!s.active && !s.reserved && !s.buffer.length && !s.turns.length) this.#sessions.delete(s.key);
  }

  #queueFor(instanceId: string): PQueue {
    const known = this.#queues.get(instanceId);
    if (known) return known;
    const q = new PQueue({ concurrency: this.#options.concurrencyPerInstance });
    this.#queues.set(instanceId, q);
    return q;
  }

  /** Hands the session's next formed turn to its instance queue, unless one is there already (or nothing may start). */
  #pump(s: SessionSlot<T>): void {
    if (this.#stopped || this.#held || s.active || !s.turns.length) return;
    const items = this.#nextItems(s);
    const active = { items, started: false };
    s.active = active;
    const turn: Turn<T> = { instanceId: s.instanceId, sessionBase: s.sessionBase, items };
    this.#queueFor(s.instanceId)
      .add(async () => {
        active.started = true;
        await this.#run(turn);
      })
      .catch(() => undefined)
      .finally(() => {
        if (s.active === active) s.active = undefined;
        this.#pump(s);
        this.#forget(s);
      });
  }

  /** The session's next turn: the first formed one, with every joinable one behind it (and a joinable buffer) when it joins. */
  #nextItems(s: SessionSlot<T>): T[] {
    const first = s.turns.shift()!;
    const joins = this.#options.joins;
    if (!joins?.(first)) return first;
    const items = [...first];
    while (s.turns.length && joins(s.turns[0]!)) items.push(...s.turns.shift()!);
    // What is still being debounced arrived while the last turn ran too: it comes along, unless something waits between.
    if (!s.turns.length && s.buffer.length && joins(s.buffer)) {
      s.timer?.cancel();
      s.timer = undefined;
      items.push(...s.buffer);
      s.buffer = [];
    }
    return items;
  }

  /** Runs a started turn, counted in flight and out of the waiting counts. */
  async #run(turn: Turn<T>): Promise<void> {
    const { instanceId, items } = turn;
    this.#inFlight++;
    this.#runningPer.set(instanceId, (this.#runningPer.get(instanceId) ?? 0) + 1);
    this.#changeWaiting(-items.length, instanceId);
    try {
      await this.#options.run(turn);
    } catch (error) {
      this.#options.onError?.(error, turn);
    } finally {
      this.#runningPer.set(instanceId, (this.#runningPer.get(instanceId) ?? 1) - 1);
      this.#inFlight--;
      this.#options.onDepth?.(instanceId);
      if (this.#inFlight === 0) {
        const waiters = this.#idleWaiters;
        this.#idleWaiters = [];
        for (const w of waiters) w();
      }
    }
  }

  #flush(s: SessionSlot<T>): void {
    s.timer?.cancel();
    s.timer = undefined;
    if (!s.buffer.length) return;
    s.turns.push(s.buffer);
    s.buffer = [];
    this.#pump(s);
  }

  #place(s: SessionSlot<T>, item: T, debounce: boolean): void {
    const { clock, debounceMs } = this.#options;
    if (!debounce || debounceMs <= 0) {
      // Keep arrival order behind anything still being debounced.
      if (s.buffer.length) this.#flush(s);
      s.turns.push([item]);
      this.#pump(s);
      return;
    }
    const now = clock.now();
    if (!s.buffer.length) s.firstBufferedAt = now;
    s.buffer.push(item);
    s.timer?.cancel();
    // A burst is cut into a turn at most `maxDebounceMs` (default 4 × debounceMs, read now: a reload may change it) after its first message.
    const due = Math.min(now + debounceMs, s.firstBufferedAt + (this.#options.maxDebounceMs ?? debounceMs * 4));
    s.timer = clock.setTimeout(() => this.#flush(s), Math.max(0, due - now));
  }
}
