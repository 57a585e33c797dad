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
import { pino } from "pino";
import { expect, it, onTestFinished } from "vitest";
import { placeOf as discordPlace } from "../../daemon/adapters/discord/inbound.js";
import { placeOf, threadOf, translateMessage as slackMessage } from "../../daemon/adapters/slack/inbound.js";
import { placeOf as teamsPlace } from "../../daemon/adapters/teams/inbound.js";
import { formerPlaceOf } from "../../daemon/config/former-places.js";
import { scheduleSchema } from "../../daemon/config/schedules.js";
import { targetOf } from "../../daemon/core/delivery.js";
import { carryOverFormerSession } from "../../daemon/core/former-sessions.js";
import { answerMessageId, createQuestions, QUESTIONS_NAMESPACE } from "../../daemon/core/questions/questions.js";
import { effectiveScope, sessionBaseFor } from "../../daemon/core/routing.js";
import { ownSessionBase, scheduledMessage } from "../../daemon/core/schedules/message.js";
import { openStore } from "../../daemon/state/store.js";
import type { InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { dedupeKeyOf, sessionKeyOf } from "../../daemon/vocabulary/keys.js";
import { createManualClock } from "../../shared/clock.js";
import { waitUntil } from "../helpers/wait.js";

async function store(clock = createManualClock()) {
  const dataDir = mkdtempSync(join(tmpdir(), "former-sessions-"));
  const s = await openStore({ dataDir, clock });
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

it("moves an open question's expiry with its session: it expires into the thread's moved conversation once, as the thread's tap would be named", async () => {
  const clock = createManualClock();
  const s = await store(clock);
  const m = { ...inThread("1"), text: "/status" };
  const from = sessionKeyOf(formerRoute(m));
  const to = sessionKeyOf(routeOf(m));
  const question = {
    id: "q1",
    callId: "call_1",
    tool: "choice" as const,
    text: "Deploy where?",
    options: ["staging", "production"],
    allowText: false,
    askerId: "alice",
    askedAt: clock.now(),
    expiresAt: clock.now() + 60_000,
    otherOutputs: [],
  };
  await s.setSession(from, { generation: 0, lastResponseId: "resp_asked", sessionId: "svc", question });
  // The question's expiry as the daemon before the rule indexed it: the former key, the thread as the chat.
  const indexKey = `discord\u0000dc\u0000${question.id}`;
  await s.kv(QUESTIONS_NAMESPACE).set(indexKey, {
    key: from,
    expiresAt: question.expiresAt,
    chat: { platform: "discord", accountId: "dc", chatId: "thread", chatType: "group", userId: "alice", groupAliases: ["guild"] },
  });
  const injected: InboundMessage[] = [];
  const questions = createQuestions({
    config: () => {
      throw new Error("the expiry reads no settings");
    },
    store: s,
    clock,
    logger: pino({ level: "silent" }),
    adapterFor: () => undefined,
    channelFor: () => undefined,
    inject: async (message) => void injected.push(message),
    newId: () => "unused",
  });
  onTestFinished(() => questions.close());
  questions.start();

  // A command in the thread (it closes no question) moves the session.
  expect(await carryOverFormerSession(s, m, routeOf(m))).toEqual({ kind: "moved", from, to });
  expect(s.session(to).question).toEqual(question);
  // The former copy is no longer an open question: nothing can answer or expire it there.
  expect(s.session(from).question).toBeUndefined();

  clock.advance(60_000);
  await waitUntil(() => injected.length > 0, "the expiry injected");
  clock.advance(120_000);
  expect(injected).toHaveLength(1);
  const [expiry] = injected;
  // Into the thread as today's code names it, so the moved conversation hears of it (and no other).
  expect(expiry).toMatchObject({ chatId: "parent", threadId: "thread", answers: { questionId: "q1", closed: "expired" } });
  expect(sessionKeyOf(routeOf(expiry!))).toBe(to);
  // A tap on the question in the thread is the same message: one answer, whichever comes first.
  const tap = { ...inThread("tap"), messageId: answerMessageId("q1"), text: "staging", answers: { questionId: "q1" } };
  expect(dedupeKeyOf(expiry!)).toBe(dedupeKeyOf(tap));
});

/** A schedule's firing into `place` on `platform`, as fire.ts journals it (its thread's former name asked of the platform). */
async function firingIn(platform: string, place: { chatId: string; threadId?: string | undefined; chatType: "direct" | "group" }) {
  const schedule = scheduleSchema.parse({
    id: "digest",
    cron: "0 * * * *",
    timeZone: "UTC",
    channel: "acc",
    chatId: place.chatId,
    ...(place.threadId !== undefined ? { threadId: place.threadId } : {}),
    chatType: place.chatType,
    prompt: "news?",
  });
  return scheduledMessage(schedule, platform, 0, await formerPlaceOf({ platform, ...place }));
}

it("names a schedule's thread as the platform's own messages there name it before the one thread rule, so its firing moves the same session", async () => {
  // Each platform's messages in a thread, by its inbound code; a schedule naming that chat and thread says the same `formerly`.
  const places = [
    { platform: "discord", chatType: "group" as const, ...discordPlace({ channelId: "thread", parentChannelId: "parent", guildId: "guild" }) },
    { platform: "slack", chatType: "group" as const, ...threadOf("C0CHANNEL1", false, "1700000001.000200", "1700000009.000300") },
    { platform: "slack", chatType: "direct" as const, ...threadOf("D0ALICE01", true, "1700000002.000100", "1700000003.000100") },
    { platform: "teams", chatType: "group" as const, ...teamsPlace("19:abc@thread.tacv2;messageid=1700000000000") },
  ];
  for (const { platform, formerly, ...place } of places) {
    expect(formerly).toBeDefined();
    expect((await firingIn(platform, place)).formerly).toEqual(formerly);
  }
  // A chat's top level, and a platform whose threads never changed name (a Telegram topic): nothing to move.
  expect((await firingIn("discord", { chatId: "parent", chatType: "group" })).formerly).toBeUndefined();
  expect((await firingIn("slack", { chatId: "C0CHANNEL1", chatType: "group" })).formerly).toBeUndefined();
  expect((await firingIn("teams", { chatId: "19:abc@thread.tacv2", chatType: "group" })).formerly).toBeUndefined();
  expect((await firingIn("telegram", { chatId: "-1005555", threadId: "7", chatType: "group" })).formerly).toBeUndefined();
  // A person's direct chat has no Discord thread or Teams chain: never their whole conversation moved into one.
  expect((await firingIn("discord", { chatId: "dm", threadId: "x", chatType: "direct" })).formerly).toBeUndefined();
  expect((await firingIn("teams", { chatId: "a:1personal", threadId: "x", chatType: "direct" })).formerly).toBeUndefined();
});

it("moves a schedule's own conversation in a thread (`session: own`) to the thread's new name, beside the thread's conversation, which stays", async () => {
  const s = await store();
  const firing = { ...(await firingIn("discord", { chatId: "parent", threadId: "thread", chatType: "group" })), accountId: "dc" };
  const own = (chatBase: string) => ownSessionBase(chatBase, "digest");
  const chat = routeOf(firing);
  const route = { ...chat, sessionBase: own(chat.sessionBase) };
  const from = sessionKeyOf({ ...route, sessionBase: own(formerRoute(inThread("1")).sessionBase) });
  expect(from).toBe("inst discord.dc.group.thread.schedule.digest");
  const kept = { generation: 1, lastResponseId: "resp_own", sessionId: "svc_own" };
  await s.setSession(from, kept);
  const thread = { generation: 0, lastResponseId: "resp_thread", sessionId: "svc" };
  await s.setSession(sessionKeyOf(formerRoute(inThread("1"))), thread);

  const to = sessionKeyOf(route);
  expect(await carryOverFormerSession(s, firing, route, own)).toEqual({ kind: "moved", from, to });
  expect(s.session(to)).toEqual(kept);
  // The thread's own conversation is the thread's next message's to move, not the schedule's.
  expect(s.session(sessionKeyOf(chat))).toEqual({ generation: 0 });
  expect(s.session(sessionKeyOf(formerRoute(inThread("1"))))).toEqual(thread);
});
