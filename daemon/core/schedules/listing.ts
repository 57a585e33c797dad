/** `/schedule list` as text: each schedule, when it fires next and when it last did. Pure. */
import type { ScheduleListing } from "./runner.js";

/** A time as the schedule's zone reads it: `2026-11-25 08:00 (Europe/Berlin)`. */
function inZone(epochMs: number, timeZone: string): string {
  const parts = new Intl.DateTimeFormat("en-CA", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).formatToParts(new Date(epochMs));
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
  return `${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")} (${timeZone})`;
}

export function describeSchedules(listings: readonly ScheduleListing[], _now: number): string {
  if (!listings.length) return "No scheduled prompts speak through this channel.";
  const lines = listings.map((s) => {
    const next = s.next === undefined ? "never (disabled)" : inZone(s.next, s.timeZone);
    const last = s.last === undefined ? "not yet" : inZone(s.last, s.timeZone);
    const where = s.running ? "" : " (not running on this node)";
    return `${s.id}: "${s.cron}" in chat ${s.chat}, ${s.session === "own" ? "its own conversation" : "the chat's conversation"}${where}\n  next: ${next}; last slot: ${last}`;
  });
  return [`Scheduled prompts (${listings.length}):`, ...lines].join("\n");
}
