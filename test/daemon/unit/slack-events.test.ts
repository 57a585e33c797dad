/**
 * What the Slack adapter tells Slack about each event (events.ts), on a
 * manual clock: "received" once the core has the message, and at the latest
 * after the 2.5 s budget however long the journal takes; a retry of an
 * event id answered as the first, never handed over twice; a hand-over that
 * failed is not acknowledged and its retry is taken afresh.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { ACK_WITHIN_MS, SlackEventHandler } from "../../../daemon/adapters/slack/events.js";
import type { AcceptOutcome, InboundMessage } from "../../../daemon/vocabulary/adapter.js";
import { createManualClock } from "../../../shared/clock.js";

const bot = { userId: "U0BOT", botId: "B0BOT", name: "agent" };
const callback = (eventId: string, text = "hi") => ({
  type: "event_callback",
  event_id: eventId,
  event: { type: "message", channel_type: "im", channel: "D1", user: "U1", text, ts: "1700000000.000100" },
});

function handler(take: (message: InboundMessage) => Promise<AcceptOutcome | undefined>) {
  const clock = createManualClock();
  const taken: InboundMessage[] = [];
  const events = new SlackEventHandler({
    accountId: "sl",
    bot: () => bot,
    clock,
    log: pino({ level: "silent" }),
    redact: (t) => t,
    take: (message) => {
      taken.push(message);
      return take(message);
    },
    inActiveThread: () => false,
  });
  return { clock, events, taken };
}

/** A promise and its resolve/reject, for a hand-over the test finishes when it wants. */
function held<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const settledNow = async <T>(p: Promise<T>): Promise<T | "pending"> => Promise.race([p, new Promise<"pending">((r) => setImmediate(() => r("pending")))]);

describe("SlackEventHandler", () => {
  it("a tap (block_actions) is handed over once, even when Socket Mode sends its envelope again, and acknowledged within the budget", async () => {
    const journal = held<AcceptOutcome | undefined>();
    const { clock, events, taken } = handler(() => journal.promise);
    const tap = {
      type: "block_actions",
      user: { id: "U1", name: "ann" },
      container: { channel_id: "D1", message_ts: "1700000000.000200" },
      trigger_id: "123.abc",
      response_url: "http://127.0.0.1:9/unused",
      actions: [{ action_id: "q:qid1:2", action_ts: "1700000001.000300" }],
    };
    const first = events.handleAction(tap);
    const again = events.handleAction(tap);
    clock.advance(ACK_WITHIN_MS);
    expect(await first).toBe("ack");
    expect(await again).toBe("ack");
    expect(taken).toHaveLength(1);
    expect(taken[0]).toMatchObject({ chatId: "D1", chatType: "direct", text: "2", answers: { questionId: "qid1" }, messageId: "act-123.abc" });
    journal.resolve({ status: "accepted", acknowledge: true });
    // Not a tap on the bridge's buttons: acknowledged, nothing handed over.
    expect(await events.handleAction({ ...tap, trigger_id: "9.x", actions: [{ action_id: "someone_elses" }] })).toBe("ack");
    expect(taken).toHaveLength(1);
  });

  it("acknowledges as soon as the core has the message", async () => {
    const { events, taken } = handler(async () => ({ status: "accepted", acknowledge: true }) as const);
    expect(await events.handle(callback("Ev1"))).toBe("ack");
    expect(taken.map((m) => m.text)).toEqual(["hi"]);
  });

  it("acknowledges within Slack's budget even when the journal is slower, and the hand-over goes on", async () => {
    const journal = held<AcceptOutcome | undefined>();
    const { clock, events } = handler(() => journal.promise);
    const answer = events.handle(callback("Ev1"));
    clock.advance(ACK_WITHIN_MS - 1);
    expect(await settledNow(answer)).toBe("pending");
    clock.advance(1);
    expect(await answer).toBe("ack");
    journal.resolve({ status: "accepted", acknowledge: true });
  });

  it("answers a retry of an event id as the first, without a second hand-over, also while the first is under way", async () => {
    const journal = held<AcceptOutcome | undefined>();
    const { events, taken } = handler(() => journal.promise);
    const first = events.handle(callback("Ev1"));
    const retry = events.handle(callback("Ev1"), { num: 1, reason: "http_timeout" });
    journal.resolve({ status: "accepted", acknowledge: true });
    expect([await first, await retry]).toEqual(["ack", "ack"]);
    expect(await events.handle(callback("Ev1"), { num: 2, reason: "http_error" })).toBe("ack");
    expect(taken).toHaveLength(1);
  });

  it("does not acknowledge what the core could not take, and takes Slack's retry afresh", async () => {
    let fail = true;
    const { events, taken } = handler(async () => {
      if (fail) throw new Error("journal write failed");
      return { status: "accepted", acknowledge: true } as const;
    });
    expect(await events.handle(callback("Ev1"))).toBe("retry");
    fail = false;
    expect(await events.handle(callback("Ev1"), { num: 1, reason: "http_error" })).toBe("ack");
    expect(taken).toHaveLength(2);
  });

  it("acknowledges what is not a turn or not an event at all, handing nothing over", async () => {
    const { events, taken } = handler(async () => ({ status: "accepted", acknowledge: true }) as const);
    expect(await events.handle({ type: "event_callback", event_id: "Ev2" })).toBe("ack");
    expect(await events.handle({ ...callback("Ev3"), event: { ...callback("Ev3").event, subtype: "message_changed" } })).toBe("ack");
    expect(await events.handle("not even an object")).toBe("ack");
    expect(taken).toEqual([]);
  });
});
