/** Scheduled prompts' pure parts: which slot is due, the firing's message, the config's checks. */
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../daemon/config/load.js";
import { scheduleSchema } from "../../../daemon/config/schedules.js";
import { ownSessionBase, scheduledMessage, scheduleIdOf } from "../../../daemon/core/schedules/message.js";
import { sessionBaseFor } from "../../../daemon/core/routing.js";
import { cronOf, decide, MAX_COUNTED, nextSlot } from "../../../daemon/core/schedules/slots.js";
import { targetOf } from "../../../daemon/core/delivery.js";

const at = (iso: string) => Date.parse(iso);
const HOUR = 60 * 60 * 1000;

describe("which slot is due", () => {
  const weekdays8 = cronOf("0 8 * * 1-5", "Europe/Berlin");

  it("fires the newest slot after the last one, once", () => {
    const last = at("2026-11-24T07:00:00Z"); // Tuesday 08:00 Berlin
    expect(decide(weekdays8, last, at("2026-11-25T06:59:59Z"), HOUR)).toEqual({ kind: "wait" });
    expect(decide(weekdays8, last, at("2026-11-25T07:00:00Z"), HOUR)).toEqual({ kind: "fire", slot: at("2026-11-25T07:00:00Z") });
    expect(decide(weekdays8, at("2026-11-25T07:00:00Z"), at("2026-11-25T07:30:00Z"), HOUR)).toEqual({ kind: "wait" });
  });

  it("makes up several missed slots as one, and skips it past the grace time", () => {
    const last = at("2026-11-20T07:00:00Z"); // Friday
    // Down over the weekend until Tuesday 08:20: only Tuesday's slot fires; Monday's is passed over (and said so).
    const monday = { first: at("2026-11-23T07:00:00Z"), count: 1 };
    expect(decide(weekdays8, last, at("2026-11-24T07:20:00Z"), HOUR)).toEqual({ kind: "fire", slot: at("2026-11-24T07:00:00Z"), passedOver: monday });
    expect(decide(weekdays8, last, at("2026-11-24T08:00:01Z"), HOUR)).toEqual({
      kind: "skip",
      slot: at("2026-11-24T07:00:00Z"),
      lateMs: HOUR + 1000,
      passedOver: monday,
    });
    // A per-second schedule down for a day: the count stops at MAX_COUNTED ("at least").
    const everySecond = cronOf("* * * * * *", "UTC");
    const day = decide(everySecond, at("2026-11-24T00:00:00Z"), at("2026-11-25T00:00:00Z"), HOUR);
    expect(day).toMatchObject({ kind: "fire", passedOver: { first: at("2026-11-24T00:00:01Z"), count: MAX_COUNTED } });
  });

  it("reads the hour in the schedule's time zone, across daylight saving", () => {
    // Berlin leaves summer time on 25 October 2026: 08:00 is 06:00 UTC before, 07:00 UTC after.
    expect(nextSlot(weekdays8, at("2026-10-22T12:00:00Z"))).toBe(at("2026-10-23T06:00:00Z"));
    expect(nextSlot(weekdays8, at("2026-10-23T12:00:00Z"))).toBe(at("2026-10-26T07:00:00Z"));
    const hourly = cronOf("0 * * * *", "UTC");
    const slots: number[] = [];
    let t = at("2026-11-25T00:00:00Z");
    while (slots.length < 24) {
      t = nextSlot(hourly, t)!;
      slots.push(t);
    }
    expect(slots.at(-1)).toBe(at("2026-11-26T00:00:00Z"));
  });
});

describe("a firing as a message", () => {
  const schedule = scheduleSchema.parse({ id: "inbox", cron: "0 8 * * *", timeZone: "UTC", channel: "tg", chatId: "5001", prompt: "summarise my inbox" });

  it("is the schedule's chat and person, its id naming the slot, and quotes nothing", () => {
    const message = scheduledMessage(schedule, "telegram", at("2026-11-25T08:00:00Z"));
    expect(message).toMatchObject({ platform: "telegram", accountId: "tg", chatId: "5001", chatType: "direct", userId: "5001", text: "summarise my inbox" });
    expect(message.messageId).toBe("schedule:inbox:2026-11-25T08:00:00.000Z");
    expect(scheduleIdOf(message)).toBe("inbox");
    expect(scheduleIdOf({ messageId: "12345" })).toBeUndefined();
    expect(targetOf(message).replyToMessageId).toBeUndefined();
    expect(ownSessionBase("telegram.tg.dm.5001", "inbox")).toBe("telegram.tg.dm.5001.schedule.inbox");
  });

  it("speaks in a thread of the chat where it names one: the thread's conversation, answered into it", () => {
    const inTopic = scheduleSchema.parse({ ...schedule, chatId: "-1005555", chatType: "group", threadId: "7", userId: "5001" });
    const message = scheduledMessage(inTopic, "telegram", at("2026-11-25T08:00:00Z"));
    expect(message).toMatchObject({ chatId: "-1005555", threadId: "7" });
    expect(sessionBaseFor(message, "group")).toBe("telegram.tg.group.-1005555.topic.7");
    expect(targetOf(message)).toMatchObject({ chatId: "-1005555", threadId: "7" });
  });
});

describe("schedules in the config", () => {
  const base = {
    service: { apiKey: "svc_org_x" },
    routes: [{ instance: "i" }],
    channels: [{ type: "telegram", id: "tg", token: "123:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghi", access: { users: ["1"] } }],
  };
  const good = { id: "inbox", cron: "0 8 * * 1-5", timeZone: "Europe/Berlin", channel: "tg", chatId: 5001, prompt: "summarise" };

  it("fills the defaults", () => {
    const [s] = parseConfig({ ...base, schedules: [good] }).schedules;
    expect(s).toMatchObject({ chatId: "5001", chatType: "direct", session: "chat", silentWord: "NO_REPLY", graceMs: HOUR, enabled: true });
  });

  it("names each problem by its key: a bad expression, an unknown zone or channel, a repeated id", () => {
    const problems = (() => {
      try {
        parseConfig({
          ...base,
          schedules: [
            { ...good, cron: "61 8 * * *" },
            { ...good, id: "b", timeZone: "Mars/Olympus" },
            { ...good, id: "c", channel: "nope" },
          ],
        });
      } catch (error) {
        return (error as { problems: string[] }).problems;
      }
      return [];
    })();
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^schedules\[0\]\.cron: is not a cron expression croner reads \(.*minute.*\)/),
        expect.stringMatching(/^schedules\[1\]\.timeZone: must be an IANA time zone/),
        'schedules[2].channel: no channel has id "nope"',
      ]),
    );
  });

  it("refuses two schedules with one id", () => {
    expect(() => parseConfig({ ...base, schedules: [good, good] })).toThrow(/schedules\[1\]\.id: duplicate schedule id "inbox" \(also schedules\[0\]\)/);
  });
});
