/**
 * The daemon's one reconnect loop. Every platform whose link can drop (a
 * socket, a long poll, an event stream) runs it and keeps only two things of
 * its own: how to run one session ("connect once, and stay until it ends")
 * and what an error means (fatal, or worth another try, and how soon). The
 * loop owns the rest, the same way for every platform:
 *
 * - the backoff between tries (the daemon's one formula, `shared/backoff.ts`,
 *   jittered so many bridges do not reconnect in step);
 * - when it starts over: once a session has proven healthy (by default as
 *   soon as it says it is connected; with `healthyAfterMs`, only after it
 *   stayed up that long; or when it says so itself with `ctx.healthy()`);
 * - when a platform's "new connection, now" is honoured: once per healthy
 *   link, so a server that asks for it on every connection is backed off
 *   like any failure instead of being reconnected to in a hot loop;
 * - stopping: the `signal` ends the wait at once and is the session's signal
 *   too, so nothing reconnects after it aborted;
 * - status news (connected / reconnecting with attempt and delay / stopped /
 *   failed) for the console, the logs and /metrics;
 * - time: waits run on the injected `Clock`, so tests move time instead of
 *   sleeping.
 *
 * Like `retry` (retry.ts), and unlike it: `retry` runs an operation until it
 * succeeds once; this runs sessions until it is stopped or a failure is fatal.
 */
import { createBackoff, type BackoffPolicy } from "../../shared/backoff.js";
import type { Clock } from "../../shared/clock.js";
import type { Random } from "../../shared/random.js";

/** Why a link is being re-made, as the fixed words /metrics counts (see `AdapterStatusEvent.reason`). */
export type ReconnectReason = "deaf" | "closed" | "refresh";

/** The delays between tries unless a platform says otherwise: 1 s doubling to 30 s (each jittered down to half). */
export const DEFAULT_RECONNECT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 30_000 };

/** What one session is given. */
export interface SessionContext {
  /** The loop's signal: when it aborts, the session must end promptly (its outcome is then ignored). */
  readonly signal: AbortSignal;
  /** Tries since the link last proved healthy, before this one: 0 on the first try and right after a healthy session. */
  readonly attempt: number;
  /**
   * The link is up. The first call after a start or a "reconnecting" reports
   * "connected" (later calls only repeat it silently, so a session may call it
   * after every answered poll); it also starts the healthy period.
   */
  connected(detail?: string): void;
  /** Proof the link works (a poll answered, an event arrived): the backoff starts over now. */
  healthy(): void;
}

/** What a failure means: decided by the platform. */
export type ReconnectVerdict =
  /** Trying again cannot help (a refused token, a logged-out account): the loop ends with "failed". */
  | { fatal: true; detail?: string }
  | {
      fatal?: false;
      /** The status detail (default: the error's message). Must hold no secret. */
      detail?: string;
      /** The fixed word /metrics counts (default "closed" for a session that ended by itself). */
      reason?: ReconnectReason;
      /** Wait at least this long (a server's retry-after), ms; the backoff still counts the failure. */
      afterMs?: number;
      /**
       * The platform asked for a new connection (WhatsApp's 515 after pairing, Slack's refresh):
       * try again now, without counting a failure. Honoured once per healthy link: only for the
       * first at-once verdict since the link last proved healthy (or since the loop started), which
       * a session that proved healthy always is. A repeat with no healthy session in between
       * (a server that answers every connection so, a broken account) is a fault: it counts as a
       * failure and waits the backoff (and `afterMs`), reported as "reconnecting" with its attempt
       * and delay, the detail marked as asked again, until a session proves healthy.
       */
      atOnce?: boolean;
    };

/** The loop's news, for the platform to pass on as its adapter status. */
export type ReconnectStatus =
  | { state: "connected"; detail?: string }
  | {
      state: "reconnecting";
      /** Tries since the link last proved healthy, this one included (from 1). */
      attempt: number;
      /** The wait before that try, ms (0: at once). */
      delayMs: number;
      error: unknown;
      detail: string;
      reason?: ReconnectReason;
    }
  | { state: "stopped" }
  | { state: "failed"; error: unknown; detail: string };

/** How the loop ended. */
export type ReconnectEnd = { state: "stopped" } | { state: "failed"; error: unknown; detail: string };

/** The first thing that happened: what a platform's `start` waits for, so an outage never holds up the daemon. */
export type FirstOutcome = "connected" | "retrying" | "failed" | "stopped";

export interface ReconnectOptions {
  /**
   * One session: connect, and resolve when the link ends by itself (it is
   * then re-made, as a `SessionEnded` failure) or reject with why it failed.
   * Must end promptly once `ctx.signal` aborts.
   */
  session(ctx: SessionContext): Promise<void>;
  /** What a failure means. Default: every failure is worth another try. */
  classify?(error: unknown): ReconnectVerdict;
  /** The status detail of an error the verdict did not name. Default: its message. Must remove secrets. */
  describe?(error: unknown): string;
  clock: Clock;
  random: Random;
  /** Default `DEFAULT_RECONNECT_BACKOFF`. */
  backoff?: BackoffPolicy;
  /**
   * How long a session must stay connected to count as healthy, ms, which
   * starts the backoff over. Default 0: being connected is enough.
   * `Infinity`: only `ctx.healthy()` counts.
   */
  healthyAfterMs?: number;
  /** After a healthy session ends, try once at once before backing off (a link that lasted has earned it). Default false. */
  retryHealthyAtOnce?: boolean;
  /** Stops the loop: the session's signal too. Default: never. */
  signal?: AbortSignal;
  /** Told each change; a listener that throws does not stop the loop. */
  onStatus?(status: ReconnectStatus): void;
}

export interface ReconnectLoop {
  /** Settles at the first outcome: connected, the first try failed and retries go on, fatal, or stopped. Never rejects. */
  readonly firstOutcome: Promise<FirstOutcome>;
  /** Settles when the loop ends (stopped, or a fatal failure), after the last session settled. Never rejects. */
  readonly done: Promise<ReconnectEnd>;
}

/** A session that resolved: the link ended by itself. */
export class SessionEnded extends Error {
  override readonly name = "SessionEnded";
  constructor() {
    super("the connection ended");
  }
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Starts the loop: the first session begins at once (synchronously). */
export function startReconnectLoop(options: ReconnectOptions): ReconnectLoop {
  const { clock } = options;
  const backoff = createBackoff(options.backoff ?? DEFAULT_RECONNECT_BACKOFF, options.random);
  const healthyAfterMs = options.healthyAfterMs ?? 0;
  const signal = options.signal ?? new AbortController().signal;
  const describe = options.describe ?? messageOf;
  // A platform's classify or describe that throws is its bug, not the link's: the loop must still
  // never reject, so the failure gets the default verdict and a detail that cannot hold a secret.
  const classify = (error: unknown): ReconnectVerdict => {
    try {
      return options.classify?.(error) ?? {};
    } catch {
      return {};
    }
  };
  const describeSafely = (error: unknown): string => {
    try {
      return describe(error);
    } catch {
      return "the error could not be described";
    }
  };
  let settleFirst: (outcome: FirstOutcome) => void = () => undefined;
  const firstOutcome = new Promise<FirstOutcome>((resolve) => {
    settleFirst = resolve;
  });
  const emit = (status: ReconnectStatus): void => {
    try {
      options.onStatus?.(status);
    } catch {
      // A listener's fault is not the link's: the loop goes on.
    }
  };
  const end = (result: ReconnectEnd): ReconnectEnd => {
    emit(result);
    settleFirst(result.state);
    return result;
  };

  /** Tries since the link last proved healthy. */
  let tries = 0;
  /** "connected" was said since the last "reconnecting". */
  let announced = false;
  /** An at-once verdict came since the link last proved healthy: the next one counts as a failure. */
  let askedAtOnce = false;

  /** One session, settled; its outcome as an error (a `SessionEnded` when it resolved), and whether it proved healthy. */
  async function runSession(): Promise<{ error: unknown; healthy: boolean }> {
    let connectedAt: number | undefined;
    let healthy = false;
    let over = false;
    const markHealthy = (): void => {
      if (over || signal.aborted) return;
      healthy = true;
      tries = 0;
      backoff.reset();
      askedAtOnce = false;
    };
    const ctx: SessionContext = {
      signal,
      attempt: tries,
      connected(detail) {
        if (over || signal.aborted) return;
        connectedAt ??= clock.now();
        if (healthyAfterMs <= 0) markHealthy();
        if (announced) return;
        announced = true;
        emit(detail === undefined ? { state: "connected" } : { state: "connected", detail });
        settleFirst("connected");
      },
      healthy: markHealthy,
    };
    let error: unknown;
    try {
      await options.session(ctx);
      error = new SessionEnded();
    } catch (thrown) {
      error = thrown;
    }
    if (connectedAt !== undefined && clock.now() - connectedAt >= healthyAfterMs) markHealthy();
    over = true;
    return { error, healthy };
  }

  const done = (async (): Promise<ReconnectEnd> => {
    for (;;) {
      if (signal.aborted) return end({ state: "stopped" });
      const { error, healthy } = await runSession();
      if (signal.aborted) return end({ state: "stopped" });
      const verdict = classify(error);
      const named = verdict.detail ?? describeSafely(error);
      if (verdict.fatal) return end({ state: "failed", error, detail: named });
      const askedAgain = verdict.atOnce === true && askedAtOnce;
      if (verdict.atOnce === true) askedAtOnce = true;
      const detail = askedAgain ? `${named} (again, with no working connection in between)` : named;
      const atOnce = (verdict.atOnce === true && !askedAgain) || (healthy && options.retryHealthyAtOnce === true);
      const delayMs = atOnce ? 0 : Math.max(backoff.failed(), verdict.afterMs ?? 0);
      const reason = verdict.reason ?? (error instanceof SessionEnded ? "closed" : undefined);
      tries++;
      announced = false;
      emit({ state: "reconnecting", attempt: tries, delayMs, error, detail, ...(reason ? { reason } : {}) });
      settleFirst("retrying");
      if (delayMs > 0) {
        const waited = await clock.sleep(delayMs, signal).then(
          () => true,
          () => false,
        );
        if (!waited) return end({ state: "stopped" });
      } else {
        // Not time, a turn of the event loop: a session that ends at once, retried at once, must
        // not keep the process in microtasks, where no stop, timer or I/O could ever reach it.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
  })();
  return { firstOutcome, done };
}

/** Resolves when `signal` aborts: the rest of a session whose link needs nothing more from it (a webhook that is set). */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}
