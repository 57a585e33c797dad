/**
 * The owner's intake of the events other nodes kept (inbox-intake.ts), with
 * the real event handler on a manual clock and the inbox held in memory (the
 * PostgreSQL inbox itself: leases.test.ts and postgres/slack-cluster.test.ts):
 * a row is removed only once the core has its message, even when that takes
 * longer than Slack's 3 s (nothing waits on the verdict); a row whose
 * hand-over failed stays and is taken on the next round; a word from another
 * node starts a round at once.
 */
import pino from "pino";
import { expect, it } from "vitest";
import { SlackEventHandler } from "../../../daemon/adapters/slack/events.js";
import { InboxIntake } from "../../../daemon/adapters/slack/inbox-intake.js";
import type { EventInbox, InboundMessage } from "../../../daemon/vocabulary/adapter.js";
import { createManualClock } from "../../../shared/clock.js";
import { waitUntil } from "../../helpers/wait.js";

const bot = { userId: "U0BOT", botId: "B0BOT", name: "agent" };
const callback = (eventId: string, text: string, ts: string) => ({
  type: "event_callback",
  event_id: eventId,
  event: { type: "message", channel_type: "im", channel: "D1", user: "U1", text, ts },
});

function memoryInbox() {
  const rows = new Map<string, unknown>();
  const wakes = new Set<() => void>();
  const inbox: EventInbox = {
    pending: async () => [...rows].map(([key, body]) => ({ key, body })),
    remove: async (keys) => {
      for (const k of keys) rows.delete(k);
    },
    watch: (wake) => {
      wakes.add(wake);
      return () => wakes.delete(wake);
    },
  };
  /** What another node's receiver does: keep the row, then say so. */
  const put = (key: string, body: unknown) => {
    if (!rows.has(key)) rows.set(key, body);
    for (const w of wakes) w();
  };
  return { inbox, rows, put };
}

it("removes a kept event only once the core has it, leaves a failed one for the next round, and takes each once", async () => {
  const clock = createManualClock();
  const { inbox, rows, put } = memoryInbox();
  const taken: string[] = [];
  let failNext = true;
  let releaseSlow: (() => void) | undefined;
  const events = new SlackEventHandler({
    accountId: "sl",
    bot: () => bot,
    clock,
    log: pino({ level: "silent" }),
    redact: (t) => t,
    take: async (message: InboundMessage) => {
      if (message.text === "flaky" && failNext) {
        failNext = false;
        throw new Error("journal unreachable");
      }
      if (message.text === "slow") await new Promise<void>((resolve) => (releaseSlow = resolve));
      taken.push(message.text);
      return { status: "accepted", acknowledge: true } as const;
    },
    inActiveThread: () => false,
    ackWithinMs: null,
  });
  const intake = new InboxIntake({ inbox, events, clock, log: pino({ level: "silent" }), pollMs: 1000 });
  intake.start();

  put("event:Ev1", callback("Ev1", "slow", "1700000000.000100"));
  await waitUntil(() => releaseSlow !== undefined, "the slow hand-over under way");
  // Past Slack's budget: nothing waits on this verdict, so the row stays until the core has it.
  clock.advance(5_000);
  await Promise.resolve();
  expect([...rows.keys()]).toEqual(["event:Ev1"]);
  releaseSlow?.();
  await waitUntil(() => rows.size === 0, "the slow row removed once taken");

  put("event:Ev2", callback("Ev2", "flaky", "1700000000.000200"));
  await waitUntil(() => !failNext, "the failed hand-over");
  await waitUntil(async () => (await inbox.pending()).length === 1, "the failed row kept");
  // Slack's retry of it, kept by another node meanwhile, is the same row.
  put("event:Ev2", callback("Ev2", "flaky", "1700000000.000200"));
  await waitUntil(() => rows.size === 0, "the failed row taken on the next round");
  expect(taken).toEqual(["slow", "flaky"]);
  await intake.stop();
});
