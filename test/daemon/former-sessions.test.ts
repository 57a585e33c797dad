/**
 * The lazy move of a thread's session from its name before the one thread
 * rule (core/former-sessions.ts), on the real file store: moved once, never
 * over a session the new key has, nothing for a message without a former
 * name, and a message joins its former session while an entry journaled
 * before the upgrade is still pending there (one order, no fork). The whole
 * path through the daemon, both stores, is test/daemon/thread-upgrade.test.ts.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it, onTestFinished } from "vitest";
import { placeOf, translateMessage as slackMessage } from "../../daemon/adapters/slack/inbound.js";
import { targetOf } from "../../daemon/core/delivery.js";
import { carryOverFormerSession } from "../../daemon/core/former-sessions.js";
import { effectiveScope, sessionBaseFor } from "../../daemon/core/routing.js";
import { openStore } from "../../daemon/state/store.js";
import type { InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { dedupeKeyOf, sessionKeyOf } from "../../daemon/vocabulary/keys.js";
import { createManualClock } from "../../shared/clock.js";

async function store() {
  const dataDir = mkdtempSync(join(tmpdir(), "former-sessions-"));
  const s = await openStore({ dataDir, clock: createManualClock() });
  onTestFinished(async () => {
    await s.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return s;
}

/** A Discord thread's message as today's code names it: the parent channel's thread, the thread its former chat. */
const inThread = (id: string): InboundMessage => ({
  platform: "discord",
  accountId: "dc",
  chatId: "parent",
  threadId: "thread",
  chatType: "group",
  groupAliases: ["guild"],
  formerly: { chatId: "thread" },
  userId: "alice",
  messageId: id,
  text: "hi",
  sentAt: 0,
});

const routeOf = (m: InboundMessage) => {
  const scope = effectiveScope(undefined, m);
  return { ruleIndex: 0, instanceId: "inst", model: "m", scope, sessionBase: sessionBaseFor(m, scope) };
};
const formerRoute = (m: InboundMessage) => {
  const { threadId: _t, formerly: _f, ...rest } = m;
  return routeOf({ ...rest, chatId: "thread" });
};

it("moves a former session to the thread's new key once, and never over one the new key has", async () => {
  const s = await store();
  const m = inThread("1");
  const from = sessionKeyOf(formerRoute(m));
  const to = sessionKeyOf(routeOf(m));
  expect(from).toBe("inst discord.dc.group.thread");
  expect(to).toBe("inst discord.dc.group.parent.topic.thread");
  const kept = { generation: 2, lastResponseId: "resp_kept", sessionId: "svc", lastTurnAt: 5 };
  await s.setSession(from, kept);

  expect(await carryOverFormerSession(s, m, routeOf(m))).toEqual({ kind: "moved", from, to });
  expect(s.session(to)).toEqual(kept);
  // Once: the new key's chain goes on from there; the former record is never read again.
  await s.setSession(to, { ...kept, lastResponseId: "resp_next" });
  expect(await carryOverFormerSession(s, inThread("2"), routeOf(m))).toEqual({ kind: "none" });
  expect(s.session(to).lastResponseId).toBe("resp_next");
});

it("does nothing for a message without a former name, or a former session with nothing stored", async () => {
  const s = await store();
  const { formerly: _f, ...plain } = inThread("1");
  expect(await carryOverFormerSession(s, plain, routeOf(plain))).toEqual({ kind: "none" });
  const m = inThread("2");
  expect(await carryOverFormerSession(s, m, routeOf(m))).toEqual({ kind: "none" });
  expect(s.session(sessionKeyOf(routeOf(m)))).toEqual({ generation: 0 });
});

it("joins the former session while an entry journaled before the upgrade is pending there, and moves with the next message after", async () => {
  const s = await store();
  const m = inThread("2");
  const old = formerRoute(m);
  await s.setSession(sessionKeyOf(old), { generation: 0, lastResponseId: "resp_before", sessionId: "svc" });
  const { threadId: _t, formerly: _f, ...before } = inThread("1");
  const pending = await s.add({ kind: "turn", key: dedupeKeyOf({ ...before, chatId: "thread" }), message: { ...before, chatId: "thread" }, route: old });

  expect(await carryOverFormerSession(s, m, routeOf(m))).toEqual({ kind: "joined", route: old });
  expect(s.session(sessionKeyOf(routeOf(m)))).toEqual({ generation: 0 });

  // The pending turn answered (its chain moved on), the next message moves the chain as it is then.
  await s.recordReply(
    pending.id,
    { chunks: ["ok"], members: [pending.id], format: "markdown" },
    { key: sessionKeyOf(old), state: { generation: 0, lastResponseId: "resp_after", sessionId: "svc" } },
  );
  await s.complete([pending.id]);
  expect(await carryOverFormerSession(s, inThread("3"), routeOf(m))).toMatchObject({ kind: "moved" });
  expect(s.session(sessionKeyOf(routeOf(m))).lastResponseId).toBe("resp_after");
});

it("reads an entry the daemon before the rule left pending (a Slack thread as the chat <channel>:<ts>), answers it into its thread, and keeps the thread's next message behind it", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "former-pending-"));
  onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }));
  cpSync(new URL("../fixtures/threads-before/pending-slack", import.meta.url), dataDir, { recursive: true });
  const s = await openStore({ dataDir, clock: createManualClock() });
  onTestFinished(() => s.close());
  const [entry] = s.pending();
  if (!entry) throw new Error("the fixture's pending entry");
  // Its former shape reads (the group context it named is dropped), and its reply still finds the thread.
  expect(entry.message).toMatchObject({ chatId: "C0CHANNEL1:1700000001.000200", text: "the word is plum" });
  expect(placeOf(targetOf(entry.message))).toEqual({ channel: "C0CHANNEL1", threadTs: "1700000001.000200" });
  // The thread's next message, as today's code names it, goes behind it in its former session (no state there yet).
  const event = {
    type: "message",
    channel: "C0CHANNEL1",
    channel_type: "channel",
    user: "U0ALICE001",
    ts: "1700000009.000300",
    thread_ts: "1700000001.000200",
    text: "<@U0BOT0001> !recall",
  };
  const next = slackMessage(event, { accountId: "sl", bot: { userId: "U0BOT0001", name: "bridge" } });
  if (next.kind !== "accept") throw new Error("a turn");
  const route = { ...routeOf(next.message), instanceId: "INSTANCE" };
  expect(await carryOverFormerSession(s, next.message, route)).toEqual({ kind: "joined", route: { ...route, sessionBase: entry.route.sessionBase } });
});
