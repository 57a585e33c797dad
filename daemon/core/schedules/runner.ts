/**
 * Fires scheduled prompts: for each schedule of an account this node owns, a
 * timer on the injected clock until its next slot; at the slot, the firing is
 * handed to the relay (which journals it like an inbound message, deduped by
 * the slot) and then the slot is recorded as the schedule's last. A slot
 * missed while no daemon ran is found at the next start (slots.ts decides
 * whether it still fires). Only the owner of the account's lease runs its
 * schedules, so on several machines a slot fires on one node; the journal's
 * dedupe key keeps it once even if a restart or takeover fires it again.
 */
import { isDeepStrictEqual } from "node:util";
import type { Logger } from "pino";
import { z } from "zod";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { Store } from "../../vocabulary/store.js";
import { errorSummary, isShutdownError, type ScheduleOutcome } from "../relay-types.js";
import type { ScheduleConfig } from "../../config/schedules.js";
import { cronOf, decide, nextSlot } from "./slots.js";
import type { Cron } from "croner";

/** The kv namespace of each schedule's last slot, keyed `<platform>\0<account>\0<schedule id>` (cluster-store.ts finds the account by it). */
export const SCHEDULES_NS = "schedules";

const LastSlotSchema = z.object({ lastSlot: z.number() });

/** What became of a slot (the `/metrics` outcome; "silent" is counted when the answer comes). */
export type FiringOutcome = Exclude<ScheduleOutcome, "silent">;

/** A timer is never set further ahead than this: a long wait is taken in steps (and a clock jump is noticed). */
const MAX_WAIT_MS = 60 * 60 * 1000;
/** After a firing the queue could not take, or a failed write: tried again this much later. */
const RETRY_MS = 60 * 1000;
/** A check that twice in a row found nothing due though its slot had come (the cron library disagreeing with itself) waits this long, instead of spinning. */
const RECHECK_FLOOR_MS = 1000;

export interface ScheduleRunnerDeps {
  /** The configured schedules, read at each look (a reload replaces them: then `refresh`). */
  readonly schedules: readonly ScheduleConfig[];
  /** The platform of a channel (its type), or undefined when the channel is not running here. */
  platformOf(accountId: string): string | undefined;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Journals the firing of `slot` (relay): "busy" when the queue cannot take it now (tried again later). */
  fire(schedule: ScheduleConfig, platform: string, slot: number): Promise<Exclude<FiringOutcome, "skipped">>;
  count(schedule: string, outcome: FiringOutcome): void;
}

/** One schedule as the runner keeps it. */
interface Running {
  readonly schedule: ScheduleConfig;
  readonly platform: string;
  readonly cron: Cron;
  timer: Timer | undefined;
  /** When the timer looks next (clock time); undefined while a check runs. */
  at: number | undefined;
  /** The check in progress, so two never overlap. */
  checking: Promise<void> | undefined;
  /** The last check found nothing due though the next slot had come: looked at again at once, but only once in a row. */
  recheckedAtOnce: boolean;
}

/** A row of `/schedule list`. */
export interface ScheduleListing {
  id: string;
  cron: string;
  timeZone: string;
  chat: string;
  session: "chat" | "own";
  next: number | undefined;
  last: number | undefined;
  running: boolean;
}

export class ScheduleRunner {
  readonly #deps: ScheduleRunnerDeps;
  /** The schedules of the accounts this node runs now, by id. */
  readonly #running = new Map<string, Running>();
  /** Once stopped, nothing fires again. */
  #stopped = false;
  /** The accounts whose schedules run here (account id to platform), and whether every running channel's do (`startAll`). */
  readonly #accounts = new Map<string, string>();
  #all = false;

  constructor(deps: ScheduleRunnerDeps) {
    this.#deps = deps;
  }

  /** Runs the schedules of this account (its lease is ours, or there is one node): a missed slot is looked at now. */
  startAccount(platform: string, accountId: string): void {
    if (this.#stopped) return;
    this.#accounts.set(accountId, platform);
    for (const schedule of this.#deps.schedules) {
      if (!schedule.enabled || schedule.channel !== accountId || this.#running.has(schedule.id)) continue;
      const running: Running = {
        schedule,
        platform,
        cron: cronOf(schedule.cron, schedule.timeZone),
        timer: undefined,
        at: undefined,
        checking: undefined,
        recheckedAtOnce: false,
      };
      this.#running.set(schedule.id, running);
      this.#check(running);
    }
  }

  /** Runs every schedule whose channel runs here (one node). */
  startAll(): void {
    this.#all = true;
    for (const schedule of this.#deps.schedules) {
      const platform = this.#deps.platformOf(schedule.channel);
      if (platform) this.startAccount(platform, schedule.channel);
      else if (schedule.enabled)
        this.#deps.logger.warn({ schedule: schedule.id, channel: schedule.channel }, "schedule's channel is not running: it does not fire");
    }
  }

  /** Stops the schedules of an account handed to another node. */
  stopAccount(platform: string, accountId: string): void {
    if (this.#accounts.get(accountId) === platform) this.#accounts.delete(accountId);
    for (const [id, r] of this.#running) {
      if (r.platform !== platform || r.schedule.channel !== accountId) continue;
      r.timer?.cancel();
      this.#running.delete(id);
    }
  }

  /** Nothing fires any more (the daemon stops); a check under way finishes its write. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const checks = [...this.#running.values()].map((r) => r.checking);
    for (const r of this.#running.values()) r.timer?.cancel();
    this.#running.clear();
    await Promise.allSettled(checks);
  }

  /**
   * The config was reloaded: a schedule gone, disabled, changed or whose channel no longer runs here stops;
   * a new or changed one starts on the accounts running here. A changed time starts from now, as a new
   * schedule does (slots before the change are not made up).
   */
  async refresh(): Promise<void> {
    if (this.#stopped) return;
    const current = new Map(this.#deps.schedules.map((s) => [s.id, s]));
    const retimed: { platform: string; schedule: ScheduleConfig }[] = [];
    const checking: Promise<void>[] = [];
    for (const [id, r] of this.#running) {
      const s = current.get(id);
      if (s && isDeepStrictEqual(s, r.schedule) && (!this.#all || this.#deps.platformOf(s.channel) === r.platform)) continue;
      r.timer?.cancel();
      if (r.checking) checking.push(r.checking);
      this.#running.delete(id);
      if (s && s.channel === r.schedule.channel && (s.cron !== r.schedule.cron || s.timeZone !== r.schedule.timeZone))
        retimed.push({ platform: r.platform, schedule: s });
    }
    // A check of the old timing still under way writes its slot first: the retimed start below is the last word.
    await Promise.all(checking);
    const now = this.#deps.clock.now();
    const kv = this.#deps.store.kv(SCHEDULES_NS);
    await Promise.all(retimed.map((r) => kv.set(this.#key(r.platform, r.schedule), { lastSlot: now })));
    if (this.#all) this.startAll();
    else for (const [accountId, platform] of this.#accounts) this.startAccount(platform, accountId);
  }

  /** When the schedule's timer looks next (clock time): undefined while it is not armed (not running here, or a check under way). */
  nextCheck(id: string): number | undefined {
    return this.#running.get(id)?.at;
  }

  /** The schedules that speak through this account, for `/schedule list`. */
  list(accountId: string): ScheduleListing[] {
    const now = this.#deps.clock.now();
    return this.#deps.schedules
      .filter((s) => s.channel === accountId)
      .map((s) => {
        const platform = this.#deps.platformOf(s.channel) ?? "";
        const last = this.#lastSlot(platform, s);
        return {
          id: s.id,
          cron: s.cron,
          timeZone: s.timeZone,
          chat: `${s.chatId} (${s.chatType})`,
          session: s.session,
          next: s.enabled ? nextSlot(cronOf(s.cron, s.timeZone), now) : undefined,
          last,
          running: this.#running.has(s.id),
        };
      });
  }

  #key(platform: string, schedule: ScheduleConfig): string {
    return [platform, schedule.channel, schedule.id].join("\u0000");
  }

  #lastSlot(platform: string, schedule: ScheduleConfig): number | undefined {
    const stored = LastSlotSchema.safeParse(this.#deps.store.kv(SCHEDULES_NS).get(this.#key(platform, schedule)));
    return stored.success ? stored.data.lastSlot : undefined;
  }

  /** Looks at the schedule now (one check at a time), then arms its timer. */
  #check(running: Running): void {
    if (running.checking) return;
    running.at = undefined;
    running.checking = this.#checkNow(running).finally(() => {
      running.checking = undefined;
    });
  }

  async #checkNow(running: Running): Promise<void> {
    const { schedule, platform, cron } = running;
    const { clock, logger } = this.#deps;
    const kv = this.#deps.store.kv(SCHEDULES_NS);
    const key = this.#key(platform, schedule);
    const ids = { schedule: schedule.id, platform, accountId: schedule.channel, chatId: schedule.chatId };
    let retryAt: number | undefined;
    let nothingDue = false;
    try {
      const now = clock.now();
      const last = this.#lastSlot(platform, schedule);
      if (last === undefined) {
        // First seen: it starts from now (slots before the schedule existed are not made up).
        await kv.set(key, { lastSlot: now });
      } else {
        const decision = decide(cron, last, now, schedule.graceMs);
        nothingDue = decision.kind === "wait";
        if (decision.kind !== "wait" && decision.passedOver) {
          const { first, count } = decision.passedOver;
          logger.info(
            { ...ids, firstSlot: new Date(first).toISOString(), slots: count, newest: new Date(decision.slot).toISOString() },
            "scheduled slots passed over: a newer slot was due too, and only the newest is looked at (several missed slots make one firing)",
          );
        }
        if (decision.kind === "skip") {
          logger.info({ ...ids, slot: new Date(decision.slot).toISOString(), lateMs: decision.lateMs }, "scheduled slot missed beyond the grace time: skipped");
          this.#deps.count(schedule.id, "skipped");
          await kv.set(key, { lastSlot: decision.slot });
        } else if (decision.kind === "fire") {
          const outcome = await this.#deps.fire(schedule, platform, decision.slot);
          this.#deps.count(schedule.id, outcome);
          logger.info({ ...ids, slot: new Date(decision.slot).toISOString(), outcome, late: now - decision.slot > 1000 }, "scheduled prompt");
          if (outcome === "busy") retryAt = now + RETRY_MS;
          else await kv.set(key, { lastSlot: decision.slot });
        }
      }
    } catch (error) {
      if (isShutdownError(error) || this.#stopped) return;
      logger.warn({ ...ids, err: errorSummary(error) }, "schedule check failed: trying again in a minute");
      retryAt = clock.now() + RETRY_MS;
    }
    this.#arm(running, retryAt, nothingDue);
  }

  /**
   * The timer to the first slot after the last one recorded (or the retry), at most MAX_WAIT_MS
   * ahead. Counted from the last slot, not from the time: a timer that fired a moment early finds
   * nothing due, and by the time it is armed again the clock may be past the slot it was for;
   * armed from the time, it would skip that slot without a word. A slot already due fires at once.
   * After a retry (the slot still unrecorded) the timer looks again at the retry or the next slot.
   */
  #arm(running: Running, retryAt: number | undefined, nothingDue: boolean): void {
    if (this.#stopped || this.#running.get(running.schedule.id) !== running) return;
    const now = this.#deps.clock.now();
    const last = this.#lastSlot(running.platform, running.schedule) ?? now;
    const next = nextSlot(running.cron, retryAt === undefined ? last : Math.max(last, now));
    let at = Math.min(retryAt ?? Number.POSITIVE_INFINITY, next ?? Number.POSITIVE_INFINITY, now + MAX_WAIT_MS);
    const atOnce = nothingDue && at <= now;
    if (atOnce && running.recheckedAtOnce) {
      this.#deps.logger.warn(
        { schedule: running.schedule.id, slot: new Date(at).toISOString() },
        "schedule's slot has come but is not due: looking again in a second",
      );
      at = now + RECHECK_FLOOR_MS;
    }
    running.recheckedAtOnce = atOnce && !running.recheckedAtOnce;
    running.timer?.cancel();
    running.at = at;
    running.timer = this.#deps.clock.setTimeout(() => this.#check(running), Math.max(0, at - now));
  }
}
