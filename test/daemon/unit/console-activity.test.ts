/**
 * The console's activity feed: what the operator sees of the traffic stays
 * bounded however long the daemon runs (chats, turns per chat, latencies),
 * a merged turn counts once, turns per minute is a sliding minute, and the
 * events carry no message text.
 */
import { describe, expect, it } from "vitest";
import { type ActivityEvent, ActivityFeed } from "../../../daemon/ops/console/activity.js";
import { dedupeKeyOf } from "../../../daemon/vocabulary/keys.js";
import type { JournalEntry } from "../../../daemon/vocabulary/records.js";
import { createManualClock } from "../../../shared/clock.js";
import { chatNamer } from "../../../daemon/ops/console/chat-name.js";

let seq = 0;
function entry(chatId: string, text: string, at: number, extra: Partial<JournalEntry> = {}): JournalEntry {
  const id = `e${++seq}`;
  const message = { platform: "telegram", accountId: "tg", chatId, chatType: "direct" as const, userId: chatId, messageId: id, text, sentAt: at };
  return {
    id,
    seq,
    kind: "turn",
    key: dedupeKeyOf(message),
    acceptedAt: at,
    message,
    route: { ruleIndex: 0, instanceId: "inst", model: "m", scope: "user", sessionBase: `tg.${chatId}` },
    sent: 0,
    ...extra,
  };
}

describe("the console's activity feed", () => {
  it("keeps the 1000 most recently active chats and the last 20 turns of each", () => {
    const clock = createManualClock(1_000_000);
    const feed = new ActivityFeed(clock);
    for (let i = 0; i < 1001; i++) feed.accepted(entry(`c${i}`, "hi", clock.now()));
    // c0 writes again: it is the most recent now, and c1 is the one let go.
    feed.accepted(entry("c0", "again", clock.now()));
    for (let i = 0; i < 1001; i++) feed.accepted(entry(`x${i}`, "hi", clock.now()));
    const chats = feed.chats();
    expect(chats).toHaveLength(1000);
    expect(chats[0]!.chatId).toBe("x1000");
    for (let i = 0; i < 25; i++) feed.accepted(entry("busy", `m${i}`, clock.now()));
    const busy = feed.chats()[0]!;
    expect(busy.turns.map((t) => t.text)).toEqual(Array.from({ length: 20 }, (_, i) => `m${i + 5}`));
  });

  it("shows two topics of one forum as two chats, each named by its topic", () => {
    const clock = createManualClock(1_000_000);
    const feed = new ActivityFeed(clock);
    const inTopic = (threadId: string, text: string) => {
      const e = entry("-100", text, clock.now());
      return { ...e, message: { ...e.message, chatType: "group" as const, threadId } };
    };
    feed.accepted(inTopic("7", "plans"));
    feed.accepted(inTopic("8", "bugs"));
    feed.accepted(entry("-100", "general", clock.now()));
    const chats = feed.chats();
    expect(chats.map((c) => [c.chatId, c.threadId, c.turns.map((t) => t.text)])).toEqual([
      ["-100", undefined, ["general"]],
      ["-100", "8", ["bugs"]],
      ["-100", "7", ["plans"]],
    ]);
    expect(new Set(chats.map((c) => c.key)).size).toBe(3);
  });

  it("counts a turn once for its leader, with its latency, and turns per minute over a sliding minute", () => {
    const clock = createManualClock(1_000_000);
    const feed = new ActivityFeed(clock);
    const events: ActivityEvent[] = [];
    feed.subscribe((e) => events.push(e));
    const lead = entry("c", "first secret words", clock.now());
    const merged = entry("c", "second", clock.now(), { leader: lead.id });
    feed.accepted(lead);
    feed.accepted(merged);
    clock.advance(1_500);
    feed.replied(lead, { chunks: ["You said: first"], members: [lead.id, merged.id], format: "markdown", text: "You said: first" }, [lead, merged]);
    feed.completed([lead, merged]);
    expect(events.filter((e) => e.type === "delivered")).toEqual([expect.objectContaining({ entry: lead.id, latencyMs: 1_500 })]);
    expect(feed.chat(feed.chats()[0]!.key)!.turns[0]).toMatchObject({ text: "first secret words\nsecond", reply: "You said: first", latencyMs: 1_500 });
    expect(feed.turnsPerMinute()).toBe(1);
    expect(feed.medianLatencyMs()).toBe(1_500);
    clock.advance(60_000);
    expect(feed.turnsPerMinute()).toBe(0);
    expect(JSON.stringify(events)).not.toContain("secret");
  });

  it("counts turns per minute exactly over thousands of deliveries, as old ones leave the minute", () => {
    const clock = createManualClock(1_000_000);
    const feed = new ActivityFeed(clock);
    // 3,000 turns, one every 40 ms (two minutes): the minute before the last holds the 1,499 sent after its start.
    for (let i = 0; i < 3_000; i++) {
      const e = entry(`c${i % 50}`, "hi", clock.now());
      feed.accepted(e);
      feed.completed([e]);
      clock.advance(40);
    }
    expect(feed.turnsPerMinute()).toBe(1_499);
    clock.advance(30_000);
    expect(feed.turnsPerMinute()).toBe(749);
    clock.advance(30_000);
    expect(feed.turnsPerMinute()).toBe(0);
  });

  it("plots the last hour: a point per delivered turn (turns per minute, latency) and per queue move (depth over every instance)", () => {
    const clock = createManualClock(1_000_000);
    const feed = new ActivityFeed(clock);
    expect(feed.history()).toEqual({ now: 1_000_000, turnsPerMinute: [], latencyMs: [], queueDepth: [] });
    const first = entry("a", "hi", clock.now());
    feed.accepted(first);
    clock.advance(800);
    feed.completed([first]);
    feed.emit({ type: "queue", at: clock.now(), instance: "one", waiting: 2, running: 1 });
    feed.emit({ type: "queue", at: clock.now(), instance: "two", waiting: 1, running: 0 });
    const second = entry("b", "hi", clock.now());
    feed.accepted(second);
    clock.advance(200);
    feed.completed([second]);
    const now = clock.now();
    expect(feed.history()).toEqual({
      now,
      turnsPerMinute: [
        [now - 200, 1],
        [now, 2],
      ],
      latencyMs: [
        [now - 200, 800],
        [now, 200],
      ],
      queueDepth: [
        [now - 200, 3],
        [now - 200, 4],
      ],
    });
    // An hour on, the points have left the plot.
    clock.advance(60 * 60_000);
    expect(feed.history()).toEqual({ now: clock.now(), turnsPerMinute: [], latencyMs: [], queueDepth: [] });
  });

  it("keeps at most 720 points a series however busy the hour", () => {
    const clock = createManualClock(1_000_000);
    const feed = new ActivityFeed(clock);
    for (let i = 0; i < 2000; i++) {
      clock.advance(1_000);
      feed.emit({ type: "queue", at: clock.now(), instance: "one", waiting: i % 7, running: 0 });
    }
    const depth = feed.history().queueDepth;
    expect(depth).toHaveLength(720);
    expect(depth.at(-1)).toEqual([clock.now(), 1999 % 7]);
  });
});

describe("chat names", () => {
  const ref = { platform: "telegram", accountId: "tg", chatId: "7001", chatType: "direct" as const };
  it("read as a person says them: the platform's name, group or not, the id, the topic; the channel only when there are several of the platform", () => {
    const one = chatNamer({ channels: [{ type: "telegram" }, { type: "terminal" }] });
    expect(one({ platform: "terminal", accountId: "terminal", chatId: "local", chatType: "direct" })).toBe("Terminal (local)");
    expect(one(ref)).toBe("Telegram (7001)");
    expect(one({ ...ref, chatType: "group", chatId: "-1001", threadId: "7" })).toBe("Telegram group (-1001), topic 7");
    const two = chatNamer({ channels: [{ type: "slack" }, { type: "slack" }] });
    expect(two({ platform: "slack", accountId: "slack-eu", chatId: "C42", chatType: "group" })).toBe("Slack group (C42) via slack-eu");
  });

  it("follow the live config: a reload (which changes the running config in place) that adds a second channel of a platform adds 'via'", () => {
    const config: { channels: { type: string }[] } = { channels: [{ type: "telegram" }] };
    const name = chatNamer(config);
    expect(name(ref)).toBe("Telegram (7001)");
    config.channels = [{ type: "telegram" }, { type: "telegram" }];
    expect(name(ref)).toBe("Telegram (7001) via tg");
    expect(name({ ...ref, accountId: "tg-2" })).not.toBe(name(ref));
    config.channels = [{ type: "telegram" }];
    expect(name(ref)).toBe("Telegram (7001)");
  });
});
