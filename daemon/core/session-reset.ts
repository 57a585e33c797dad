/**
 * Session resets: when a conversation ends on its own. A policy resets a
 * session daily at an hour in a time zone and/or after an idle time; the
 * reset is lazy - the first message after the reset moment starts a fresh
 * chain (turn.ts), so nothing runs on a timer and a daemon that was down at
 * 04:00 still resets on the next message. Pure: every function takes the
 * times it compares (epoch ms), so tests move a clock instead of waiting.
 */
import type { SessionResetConfig } from "../vocabulary/config-fields.js";
import type { DaemonConfig } from "../config/schema.js";
import { sessionKeyOf } from "../vocabulary/keys.js";
import type { SessionState, StoredRoute } from "../vocabulary/records.js";
import type { Store } from "../vocabulary/store.js";
import { sessionIdFor } from "./routing.js";

/** The policy for a message of this route and channel: the route's own (false: none), else its channel's. */
export function resetPolicyOf(config: DaemonConfig, ruleIndex: number, accountId: string): SessionResetConfig | undefined {
  const own = config.routes[ruleIndex]?.sessionReset;
  if (own !== undefined) return own === false ? undefined : own;
  return config.channels.find((channel) => channel.id === accountId)?.sessionReset;
}

/** Why a session is reset: the daily hour passed, or it was idle too long. */
export type ResetReason = "daily" | "idle";

/**
 * The reset due for a session whose last turn was at `lastTurnAt`, for a
 * message taken at `now`; undefined when none is (no policy, no earlier turn
 * in this chain, or neither moment has come).
 */
export function resetDue(policy: SessionResetConfig | undefined, lastTurnAt: number | undefined, now: number): ResetReason | undefined {
  if (!policy || lastTurnAt === undefined) return undefined;
  if (policy.daily && lastTurnAt < lastDailyBoundary(policy.daily, now)) return "daily";
  if (policy.idleMinutes !== undefined && now - lastTurnAt >= policy.idleMinutes * 60_000) return "idle";
  return undefined;
}

/** The moment a session last active at `lastTurnAt` resets (it may have passed), and why; undefined when it never does. */
export function nextReset(policy: SessionResetConfig | undefined, lastTurnAt: number): { at: number; reason: ResetReason } | undefined {
  if (!policy) return undefined;
  const daily = policy.daily && { at: nextDailyBoundary(policy.daily, lastTurnAt), reason: "daily" as const };
  const idle = policy.idleMinutes !== undefined ? { at: lastTurnAt + policy.idleMinutes * 60_000, reason: "idle" as const } : undefined;
  if (daily && idle) return idle.at < daily.at ? idle : daily;
  return daily ?? idle;
}

/**
 * What `/status` says of the session's reset: when the chain resets next and
 * why (whichever of the daily hour and the idle time comes first), or the
 * policy itself while there is no chain yet.
 */
export function describeReset(config: DaemonConfig, ruleIndex: number, accountId: string, session: SessionState, now: number): string {
  const policy = resetPolicyOf(config, ruleIndex, accountId);
  const next = policy && session.lastTurnAt !== undefined ? nextReset(policy, session.lastTurnAt) : undefined;
  if (!policy || !next) return describePolicy(policy);
  const zone = policy.daily?.timeZone ?? "UTC";
  const why = next.reason === "daily" ? "the daily reset" : `after ${policy.idleMinutes} minutes idle`;
  return next.at <= now ? `with your next message (${why})` : `${localTime(next.at, zone)}, ${why}, unless /new comes first`;
}

/** How a policy reads in `/status` when the session has no chain yet, e.g. `daily at 04:00 (Europe/Berlin), after 120 minutes idle`. */
export function describePolicy(policy: SessionResetConfig | undefined): string {
  if (!policy || (!policy.daily && policy.idleMinutes === undefined)) return "never on its own (only /new)";
  const parts: string[] = [];
  if (policy.daily) parts.push(`daily at ${String(policy.daily.atHour).padStart(2, "0")}:00 (${policy.daily.timeZone})`);
  if (policy.idleMinutes !== undefined) parts.push(`after ${policy.idleMinutes} minutes idle`);
  return parts.join(", ");
}

/** `2026-11-25 04:00 (Europe/Berlin)`: a moment as people in the policy's zone read it. */
export function localTime(at: number, timeZone: string): string {
  const p = zonedParts(at, timeZone);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${p.year}-${two(p.month)}-${two(p.day)} ${two(p.hour)}:${two(p.minute)} (${timeZone})`;
}

type Daily = NonNullable<SessionResetConfig["daily"]>;

/** The latest moment at or before `now` when the local clock in the zone showed `atHour`:00. */
export function lastDailyBoundary(daily: Daily, now: number): number {
  const today = zonedParts(now, daily.timeZone);
  const at = zonedInstant(daily.timeZone, today.year, today.month, today.day, daily.atHour);
  return at <= now ? at : zonedInstant(daily.timeZone, today.year, today.month, today.day - 1, daily.atHour);
}

/** The first moment after `now` when the local clock in the zone shows `atHour`:00. */
export function nextDailyBoundary(daily: Daily, now: number): number {
  const today = zonedParts(now, daily.timeZone);
  const at = zonedInstant(daily.timeZone, today.year, today.month, today.day, daily.atHour);
  return at > now ? at : zonedInstant(daily.timeZone, today.year, today.month, today.day + 1, daily.atHour);
}

interface ZonedParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function zonedParts(at: number, timeZone: string): ZonedParts {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timeZone, format);
  }
  const parts: Record<string, number> = {};
  for (const part of format.formatToParts(at)) if (part.type !== "literal") parts[part.type] = Number(part.value);
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour!, minute: parts.minute!, second: parts.second! };
}

/** The zone's offset from UTC at `at`, ms (positive east of Greenwich). */
function offsetAt(at: number, timeZone: string): number {
  const p = zonedParts(at, timeZone);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(at / 1000) * 1000;
}

/**
 * The moment the zone's clock shows `hour`:00 on the given local day (`day`
 * may run past the month's ends: Date.UTC carries it). On a day when that
 * hour does not exist (clocks jump forward over it) this is the moment just
 * after the jump; when it exists twice, the first.
 */
function zonedInstant(timeZone: string, year: number, month: number, day: number, hour: number): number {
  const wall = Date.UTC(year, month - 1, day, hour);
  const first = wall - offsetAt(wall, timeZone);
  const second = wall - offsetAt(first, timeZone);
  let at = first;
  if (second !== first) {
    // The offset changed between the guesses: a jump at this hour. The earlier reading that shows `hour` wins; else the later one (a skipped hour).
    const earlier = Math.min(first, second);
    at = zonedParts(earlier, timeZone).hour === hour ? earlier : Math.max(first, second);
  }
  // Clocks turned back over this hour: it showed once before, an hour earlier.
  const before = zonedParts(at - HOUR, timeZone);
  return before.hour === hour && before.minute === 0 ? at - HOUR : at;
}

const HOUR = 3_600_000;

/**
 * A fresh conversation for the route's session, as `/new` starts one (and the
 * operator's console): the next generation, no chain. Returns the new session id.
 * A session no account owns (a linked person's, on several machines) is moved
 * only while this node holds it, on behalf of the chat's `account`.
 */
export async function startFreshSession(
  store: Pick<Store, "session" | "setSession" | "holdSession">,
  route: Pick<StoredRoute, "instanceId" | "sessionBase">,
  account: { platform: string; accountId: string },
): Promise<string> {
  const key = sessionKeyOf(route);
  const release = await store.holdSession?.(key, account);
  try {
    const next = store.session(key).generation + 1;
    await store.setSession(key, { generation: next });
    return sessionIdFor(route.sessionBase, next);
  } finally {
    await release?.();
  }
}
