/**
 * Several machines: the owner's intake of the LINE events any node kept
 * (receiver.ts), as Slack's (../slack/inbox-intake.ts). Each round reads the kept rows, hands each to the
 * event handler (events.ts: a repeated `webhookEventId` is answered once, the
 * journal's dedupe key holds across nodes), and removes the rows the core
 * took or refused, with a write fenced by the lease. A row whose hand-over
 * failed stays for the next round. A round runs when a node says it kept a
 * row (NOTIFY), and every `pollMs` in case that word was lost.
 */
import type { Logger } from "pino";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import type { EventVerdict, LineEventHandler } from "./events.js";

export interface InboxIntakeDeps {
  inbox: EventInbox;
  /** Built without an acknowledgement budget: its verdict is the hand-over's own. */
  events: LineEventHandler;
  clock: Clock;
  log: Logger;
  pollMs: number;
}

export class LineInboxIntake {
  /** The inbox, the handler, the clock (injected; never changes). */
  readonly #deps: InboxIntakeDeps;
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

  constructor(deps: InboxIntakeDeps) {
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
      .catch((error: unknown) => this.#deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, "line inbox round failed; trying again"))
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
    // Handed over in arrival order (the hand-over keeps each chat's order), then awaited together.
    const verdicts = await Promise.all(rows.map((row) => this.#take(row.key, row.body).then((v) => ({ key: row.key, v }))));
    const taken = verdicts.filter((r) => r.v === "ack").map((r) => r.key);
    await this.#deps.inbox.remove(taken);
    if (taken.length < rows.length) this.#deps.log.info({ left: rows.length - taken.length }, "line inbox: events left for the next round");
  }

  #take(_key: string, body: unknown): Promise<EventVerdict> {
    return this.#deps.events.handle(body);
  }
}
