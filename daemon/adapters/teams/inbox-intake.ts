/**
 * Several machines: the owner's intake of the activities any node kept
 * (receiver.ts). Each round reads the kept rows, hands each (parsed again:
 * read, never trusted as cast) to the connection's handler, and removes the
 * ones the core took or refused, with a write fenced by the lease; a row
 * whose hand-over failed stays for the next round. A round runs when a node
 * says it kept a row, and every `pollMs` in case that word was lost.
 */
import type { Logger } from "pino";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { EventInbox } from "../../vocabulary/adapter.js";
import { TeamsActivity } from "./inbound.js";

/** What became of one activity: answered to the connector as 200, or 500 (it may come again). */
export type ActivityVerdict = "ack" | "retry";

export interface TeamsInboxIntakeDeps {
  inbox: EventInbox;
  handle(activity: TeamsActivity): Promise<ActivityVerdict>;
  clock: Clock;
  log: Logger;
  pollMs: number;
}

export class TeamsInboxIntake {
  readonly #deps: TeamsInboxIntakeDeps;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  #unwatch: (() => void) | null = null;
  #timer: Timer | null = null;

  constructor(deps: TeamsInboxIntakeDeps) {
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
      .catch((error: unknown) => this.#deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, "teams inbox round failed; trying again"))
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
        const activity = TeamsActivity.safeParse(row.body);
        // A row that is not an activity can never be taken: removed, not retried for ever.
        return { key: row.key, v: activity.success ? await this.#deps.handle(activity.data) : "ack" };
      }),
    );
    const taken = verdicts.filter((r) => r.v === "ack").map((r) => r.key);
    await this.#deps.inbox.remove(taken);
    if (taken.length < rows.length) this.#deps.log.info({ left: rows.length - taken.length }, "teams inbox: activities left for the next round");
  }
}
