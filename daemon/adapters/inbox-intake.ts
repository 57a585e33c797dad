/**
 * Several machines, a platform that posts its events to any node (an HTTP
 * endpoint behind a load balancer): the owner's intake of the events every
 * node kept in the bridge's inbox (its receiver). Each round reads the kept
 * rows, hands each to the platform's handler in arrival order (the hand-over
 * keeps each chat's order; the journal's dedupe key holds across nodes), and
 * removes the rows the core took or deliberately refused, with a write fenced
 * by the lease. A row whose hand-over failed stays for the next round. A round
 * runs when a node says it kept a row (NOTIFY), and every `pollMs` in case
 * that word was lost. Each platform's own intake says only how one row is
 * taken (`take`).
 */
import type { Logger } from "pino";
import type { Clock, Timer } from "../../shared/clock.js";
import type { EventInbox } from "../vocabulary/adapter.js";

export interface KeptEventIntakeDeps {
  inbox: EventInbox;
  /**
   * Hands one kept row over; resolves true once the core took or deliberately
   * refused it (or it can never be taken: a row this version cannot read), so
   * the row goes; false leaves it for the next round.
   */
  take(key: string, body: unknown): Promise<boolean>;
  clock: Clock;
  log: Logger;
  pollMs: number;
  /** The platform, for the log lines: "slack". */
  name: string;
}

export class KeptEventIntake {
  /** The inbox, the hand-over, the clock (injected; never changes). */
  readonly #deps: KeptEventIntakeDeps;
  /** The round under way, or null. */
  #running: Promise<void> | null = null;
  /** Another round was asked for while one ran. */
  #again = false;
  /** Set by stop: no more rounds. */
  #stopped = false;
  /** Ends the NOTIFY wake-ups (set while started). */
  #unwatch: (() => void) | null = null;
  /** The next poll. */
  #timer: Timer | null = null;

  constructor(deps: KeptEventIntakeDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#unwatch = this.#deps.inbox.watch(() => this.kick());
    this.#poll();
  }

  /** A round now, or right after the one under way. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#round()
      .catch((error: unknown) =>
        this.#deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, `${this.#deps.name} inbox round failed; trying again`),
      )
      .finally(() => {
        this.#running = null;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unwatch?.();
    this.#timer?.cancel();
    await this.#running;
  }

  #poll(): void {
    if (this.#stopped) return;
    this.kick();
    this.#timer = this.#deps.clock.setTimeout(() => this.#poll(), this.#deps.pollMs);
  }

  async #round(): Promise<void> {
    const rows = await this.#deps.inbox.pending();
    if (rows.length === 0) return;
    // Handed over in arrival order, then awaited together.
    const results = await Promise.all(rows.map(async (row) => ({ key: row.key, taken: await this.#deps.take(row.key, row.body) })));
    const taken = results.filter((r) => r.taken).map((r) => r.key);
    await this.#deps.inbox.remove(taken);
    if (taken.length < rows.length) this.#deps.log.info({ left: rows.length - taken.length }, `${this.#deps.name} inbox: events left for the next round`);
  }
}
