/**
 * How far into its backoff a client rebuild starts. A connection that lasted
 * `stableAfterMs` earns a fresh start; rebuilding again sooner means something
 * keeps breaking, so the backoff goes on from where it was instead of
 * hammering the gateway from zero. Pure: times come in as arguments.
 */
export class RebuildStreak {
  readonly #stableAfterMs: number;
  /** When the last connection came up (epoch ms); 0 before the first, so an early rebuild counts as unstable. */
  #lastConnectedAt = 0;
  /** Rebuilds in a row, each within `stableAfterMs` of the connection before it. */
  #streak = 0;

  constructor(stableAfterMs: number) {
    this.#stableAfterMs = stableAfterMs;
  }

  /** A client connected at `now`. */
  connected(now: number): void {
    this.#lastConnectedAt = now;
  }

  /** A rebuild starts at `now`: the attempt its backoff counts from (0: connect at once). */
  rebuild(now: number): number {
    this.#streak = now - this.#lastConnectedAt < this.#stableAfterMs ? this.#streak + 1 : 0;
    return this.#streak;
  }
}
