/**
 * Several machines, mode "http": the owner's intake of the events any node
 * kept (receiver.ts). Each round reads the kept rows, hands each to the event
 * handler (events.ts: a repeated event id is answered once, the journal's
 * dedupe key holds across nodes), and removes the rows the core took or
 * refused, with a write fenced by the lease. A row whose hand-over failed
 * stays for the next round. A round runs when a node says it kept a row, and
 * every `pollMs` in case that word was lost. (Slack's inbox-intake.ts, for
 * Feishu's events.)
 */
import type { Logger } from "pino";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import type { FeishuEventHandler } from "./events.js";
import { keptEvent } from "./receiver.js";

export interface InboxIntakeDeps {
  inbox: EventInbox;
  events: FeishuEventHandler;
  clock: Clock;
  log: Logger;
  pollMs: number;
}

export class InboxIntake {
  readonly #deps: InboxIntakeDeps;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  #unwatch: (() => void) | null = null;
  #timer: Timer | null = null;

  constructor(deps: InboxIntakeDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#unwatch = this.#deps.inbox.watch(() => this.kick());
    this.#poll();
  }

  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#round()
      .catch((error: unknown) =>
        this.#deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, "feishu inbox round failed; trying again"),
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
    const verdicts = await Promise.all(
      rows.map(async (row) => {
        const input = keptEvent(row.body);
        // A row this version cannot read is dropped rather than blocking the inbox.
        if (!input) return { key: row.key, taken: true };
        return { key: row.key, taken: (await this.#deps.events.handle(input)).kind === "ack" };
      }),
    );
    const taken = verdicts.filter((r) => r.taken).map((r) => r.key);
    await this.#deps.inbox.remove(taken);
    if (taken.length < rows.length) this.#deps.log.info({ left: rows.length - taken.length }, "feishu inbox: events left for the next round");
  }
}
