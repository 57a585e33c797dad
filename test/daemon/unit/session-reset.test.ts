import { describe, expect, it } from "vitest";
import { sessionResetSchema } from "../../../daemon/vocabulary/config-fields.js";
import { daemonConfigSchema } from "../../../daemon/config/schema.js";
import { describePolicy, lastDailyBoundary, localTime, nextDailyBoundary, nextReset, resetDue, resetPolicyOf } from "../../../daemon/core/session-reset.js";

const at = (iso: string) => Date.parse(iso);
const policy = (input: unknown) => sessionResetSchema.parse(input);
const berlin4 = { atHour: 4, timeZone: "Europe/Berlin" };

describe("the daily reset hour in a time zone", () => {
  it("is 04:00 Berlin time: 03:00 UTC in winter, 02:00 UTC in summer", () => {
    expect(lastDailyBoundary(berlin4, at("2026-11-25T10:00:00Z"))).toBe(at("2026-11-25T03:00:00Z"));
    expect(lastDailyBoundary(berlin4, at("2026-11-25T02:59:00Z"))).toBe(at("2026-11-24T03:00:00Z"));
    expect(nextDailyBoundary(berlin4, at("2026-07-01T01:00:00Z"))).toBe(at("2026-07-01T02:00:00Z"));
    expect(nextDailyBoundary(berlin4, at("2026-07-01T02:00:00Z"))).toBe(at("2026-07-02T02:00:00Z"));
  });

  it("on the day clocks jump over the hour, is the moment just after the jump; on the day it repeats, the first", () => {
    // 2026-03-29: Berlin goes from 02:00 CET straight to 03:00 CEST (01:00 UTC).
    expect(nextDailyBoundary({ atHour: 2, timeZone: "Europe/Berlin" }, at("2026-03-28T12:00:00Z"))).toBe(at("2026-03-29T01:00:00Z"));
    // 2026-10-25: 02:00-03:00 happens twice; the first is 00:00 UTC (CEST).
    expect(nextDailyBoundary({ atHour: 2, timeZone: "Europe/Berlin" }, at("2026-10-24T12:00:00Z"))).toBe(at("2026-10-25T00:00:00Z"));
    // A zone west of UTC and across a month's end.
    expect(nextDailyBoundary({ atHour: 23, timeZone: "America/New_York" }, at("2026-12-01T05:00:00Z"))).toBe(at("2026-12-02T04:00:00Z"));
  });

  it("reads in the zone for /status", () => {
    expect(localTime(at("2026-11-25T03:00:00Z"), "Europe/Berlin")).toBe("2026-11-25 04:00 (Europe/Berlin)");
  });
});

describe("resetDue", () => {
  const daily = policy({ daily: berlin4 });
  const idle = policy({ idleMinutes: 30 });
  const both = policy({ daily: berlin4, idleMinutes: 30 });

  it("resets the first message after the daily hour, not one a minute before", () => {
    const last = at("2026-11-24T20:00:00Z");
    expect(resetDue(daily, last, at("2026-11-25T02:59:00Z"))).toBeUndefined();
    expect(resetDue(daily, last, at("2026-11-25T03:00:00Z"))).toBe("daily");
    // The chain's last turn was after today's hour: no reset until tomorrow's.
    expect(resetDue(daily, at("2026-11-25T03:01:00Z"), at("2026-11-25T22:00:00Z"))).toBeUndefined();
    // Down over several days: one reset, all the same.
    expect(resetDue(daily, last, at("2026-11-29T12:00:00Z"))).toBe("daily");
  });

  it("resets after the idle time, and a message every few minutes keeps the session alive", () => {
    const last = at("2026-11-25T12:00:00Z");
    expect(resetDue(idle, last, last + 29 * 60_000)).toBeUndefined();
    expect(resetDue(idle, last, last + 30 * 60_000)).toBe("idle");
    expect(resetDue(both, last, last + 10 * 60_000)).toBeUndefined();
  });

  it("never resets without a policy or before a chain has a turn", () => {
    expect(resetDue(undefined, 0, at("2030-01-01T00:00:00Z"))).toBeUndefined();
    expect(resetDue(both, undefined, at("2030-01-01T00:00:00Z"))).toBeUndefined();
    expect(resetDue(policy({}), 0, at("2030-01-01T00:00:00Z"))).toBeUndefined();
  });
});

describe("nextReset and how it reads", () => {
  it("names whichever comes first", () => {
    const both = policy({ daily: berlin4, idleMinutes: 60 });
    expect(nextReset(both, at("2026-11-25T01:00:00Z"))).toEqual({ at: at("2026-11-25T02:00:00Z"), reason: "idle" });
    expect(nextReset(both, at("2026-11-25T02:30:00Z"))).toEqual({ at: at("2026-11-25T03:00:00Z"), reason: "daily" });
  });

  it("describes the policy, and takes the host's zone when none is named", () => {
    expect(describePolicy(undefined)).toBe("never on its own (only /new)");
    expect(describePolicy(policy({ daily: berlin4, idleMinutes: 120 }))).toBe("daily at 04:00 (Europe/Berlin), after 120 minutes idle");
    expect(policy({ daily: { atHour: 4 } }).daily?.timeZone).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone);
  });

  it("refuses an unknown time zone and an hour out of range", () => {
    expect(sessionResetSchema.safeParse({ daily: { atHour: 4, timeZone: "Mars/Olympus" } }).success).toBe(false);
    expect(sessionResetSchema.safeParse({ daily: { atHour: 24 } }).success).toBe(false);
  });
});

describe("resetPolicyOf", () => {
  it("takes the route's own policy, false turning it off, else the channel's", () => {
    const config = daemonConfigSchema.parse({
      service: { apiKey: "svc_org_test" },
      channels: [{ type: "terminal", sessionReset: { idleMinutes: 5 } }],
      routes: [
        { match: { userId: "a" }, instance: "i", sessionReset: false },
        { match: { userId: "b" }, instance: "i", sessionReset: { idleMinutes: 60 } },
        { instance: "i" },
      ],
    });
    expect(resetPolicyOf(config, 0, "terminal")).toBeUndefined();
    expect(resetPolicyOf(config, 1, "terminal")?.idleMinutes).toBe(60);
    expect(resetPolicyOf(config, 2, "terminal")?.idleMinutes).toBe(5);
    expect(resetPolicyOf(config, 2, "another")).toBeUndefined();
  });
});
