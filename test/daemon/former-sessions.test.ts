/**
 * The lazy move of a thread's session from its name before the one thread
 * rule (core/former-sessions.ts), on the real file store: moved once, never
 * over a session the new key has, nothing for a message without a former
 * name, and a message joins its former session while an entry journaled
 * before the upgrade is still pending there (one order, no fork). The whole
 * path through the daemon, both stores, is test/daemon/thread-upgrade.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it, onTestFinished } from "vitest";
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
