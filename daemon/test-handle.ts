/**
 * A test's way into a daemon's insides: what a crash leaves behind, and the
 * store and scheduler it runs on. Kept out of the public `Daemon`: nothing
 * but a test needs them, and a caller holding them could write around the
 * daemon's own order of things.
 */
import type { Scheduler } from "./core/scheduler.js";
import type { ScheduleRunner } from "./core/schedules/runner.js";
import type { Store } from "./vocabulary/store.js";

export interface DaemonTestHandle {
  /** What a crash leaves behind: nothing more is written or sent, the lock is freed. */
  crash(): Promise<void>;
  /** Set once started. */
  readonly store: Store | undefined;
  /** Set once started. */
  readonly scheduler: Scheduler<string> | undefined;
  /** Set once started: the scheduled prompts and their timers. */
  readonly schedules: ScheduleRunner | undefined;
}

const handles = new WeakMap<object, DaemonTestHandle>();

/** Called by the daemon as it is built. */
export function registerTestHandle(daemon: object, handle: DaemonTestHandle): void {
  handles.set(daemon, handle);
}

/** The insides of a daemon built by `createDaemon`. */
export function testHandle(daemon: object): DaemonTestHandle {
  const handle = handles.get(daemon);
  if (!handle) throw new Error("not a daemon built by createDaemon");
  return handle;
}
