import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { createManualClock } from "../../shared/clock.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { replyTextOf } from "../../daemon/core/reply.js";
import { converse, startBridge, startService, tempDir, testConfig, type Bridge, type Service } from "./daemon-harness.js";
import { testHandle } from "../../daemon/test-handle.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

let service: Service;
beforeAll(async () => {
  service = await startService({ permissions: ["interact", "read", "files"] });
});
afterAll(async () => {
  await service.close();
});

async function bridge(overrides: Parameters<typeof testConfig>[2] = {}, options: Parameters<typeof startBridge>[1] = {}): Promise<Bridge> {
  const dir = tempDir();
  const b = await startBridge(testConfig(service, dir.path, overrides), options);
  onTestFinished(dir.remove);
  onTestFinished(() => b.daemon.stop({ graceMs: 0 }));
  return b;
}

describe("daemon against the emulator", () => {
  it("keeps each person's conversation to themselves", async () => {
    const { chat } = await bridge();
    await Promise.all([converse(chat, "alice", ["apples"]), converse(chat, "bob", ["bananas"])]);
    const [aliceRecall] = await converse(chat, "alice", ["!recall"]);
    const [bobRecall] = await converse(chat, "bob", ["!recall"]);
    expect(aliceRecall).toBe("apples");
    expect(bobRecall).toBe("bananas");
    expect(chat.repliesTo("alice").every((m) => m.target.chatId === "alice")).toBe(true);
  });

  it("continues one conversation over five turns", async () => {
    const { chat } = await bridge();
    const replies = await converse(chat, "carol", ["first", "second", "third", "fourth", "!recall"]);
    expect(replies.slice(0, 4)).toEqual(["You said: first", "You said: second", "You said: third", "You said: fourth"]);
    expect(replies[4]).toBe("first\nsecond\nthird\nfourth");
  });

  it("starts fresh on /new with a new session id, and /reset does the same", async () => {
    const { chat } = await bridge();
    const [who1] = await converse(chat, "dave", ["/whoami"]);
    await converse(chat, "dave", ["one", "two"]);
    const [fresh] = await converse(chat, "dave", ["/new"]);
    expect(fresh).toMatch(/new conversation/i);
    const [recall, who2] = await converse(chat, "dave", ["!recall", "/whoami"]);
    expect(recall).toBe("(nothing yet)");
    const sessionOf = (text: string | undefined) => /Session: (\S+)/.exec(text ?? "")?.[1];
    expect(sessionOf(who1)).toBeTruthy();
    expect(sessionOf(who2)).not.toBe(sessionOf(who1));
    await converse(chat, "dave", ["three", "/reset"]);
    const [afterReset] = await converse(chat, "dave", ["!recall"]);
    expect(afterReset).toBe("(nothing yet)");
  });

  it("answers commands at once, while a turn is still running", async () => {
    const { chat } = await bridge();
    const turn = service.hold(800);
    await chat.inject({ userId: "erin", text: "!sleep 800" });
    await turn.started;
    await chat.inject({ userId: "erin", text: "/status" });
    await chat.inject({ userId: "erin", text: "/help" });
    // Both answered while the turn is still out at the service.
    await chat.waitForReplies("erin", 2);
    turn.release();
    const replies = await chat.waitForReplies("erin", 3);
    expect(replies.map((r) => r.text.split("\n")[0])).toEqual([expect.stringMatching(/^Instance: .* \(running\)$/), "Commands:", "slept 800"]);
    expect(replies[0]!.text).toContain("1 being answered");
    const whoami = (await converse(chat, "erin", ["/whoami"]))[0]!;
    expect(whoami).toContain("Platform: fake (account acct0)");
    expect(whoami).toContain("User: erin");
  });

  it("merges a burst of messages within debounceMs into one turn", async () => {
    const clock = createManualClock(Date.now());
    const { chat } = await bridge({ queue: { debounceMs: 1000 } }, { clock });
    await chat.inject({ userId: "fay", text: "line one" });
    clock.advance(300);
    await chat.inject({ userId: "fay", text: "line two" });
    clock.advance(300);
    await chat.inject({ userId: "fay", text: "line three" });
    clock.advance(999);
    expect(chat.repliesTo("fay")).toEqual([]);
    clock.advance(1);
    const [reply] = await chat.waitForReplies("fay", 1);
    expect(reply!.text).toBe("You said: line one\nline two\nline three");
    await chat.inject({ userId: "fay", text: "!count" });
    clock.advance(1000);
    const replies = await chat.waitForReplies("fay", 2);
    expect(replies[1]!.text).toBe("1");
  });

  for (const limit of [4096, 2000]) {
    it(`splits a 9,000-character reply for a ${limit}-character limit with fences intact`, async () => {
      const { chat, daemon } = await bridge({}, { maxMessageLength: limit });
      const original = await service.org.createSessionResponse({
        instance_id: service.instanceIds[0]!,
        session_id: `direct-${limit}`,
        body: { model: "m", input: "!long 9000" },
      });
      const originalText = replyTextOf(original);
      expect(originalText.length).toBe(9000);

      await chat.inject({ userId: `long${limit}`, text: "!long 9000" });
      await chat.waitForReplies(`long${limit}`, Math.ceil(9000 / limit));
      await daemon.whenIdle(); // the turn is journaled as answered: every chunk it sends is out
      const chunks = chat.repliesTo(`long${limit}`).map((m) => m.text);
      expect(chunks.length).toBeGreaterThanOrEqual(Math.ceil(9000 / limit));
      for (const c of chunks) {
        expect(c.length).toBeLessThanOrEqual(limit);
        // Every chunk opens and closes the fences it has.
        expect((c.match(/^\s*```/gm) ?? []).length % 2).toBe(0);
      }
      const plain = (t: string) =>
        t
          .replace(/^\s*```.*$/gm, "")
          .replace(/\s+/g, " ")
          .trim();
      expect(plain(chunks.join("\n"))).toBe(plain(originalText));
      expect(chat.repliesTo(`long${limit}`).every((m) => m.format === "markdown")).toBe(true);
    });
  }

  it("drops messages refused by access rules or matching no route, without replying or journaling", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const config = testConfig(service, dir.path, {
      channels: [
        { type: "terminal", id: "acct0", access: { mode: "allowlist", users: ["alice"] } },
        { type: "terminal", id: "acct1", access: { mode: "open" } },
      ],
      routes: [{ match: { accountId: "acct0" }, instance: service.instanceIds[0]! }],
    });
    const b = await startBridge(config);
    onTestFinished(() => b.daemon.stop({ graceMs: 0 }));
    const [allowed, unrouted] = b.adapters;
    await allowed!.inject({ userId: "mallory", text: "let me in" });
    await unrouted!.inject({ userId: "alice", text: "anyone?" });
    expect(testHandle(b.daemon).store!.pending()).toEqual([]);
    expect(await converse(allowed!, "alice", ["hi"])).toEqual(["You said: hi"]);
    expect(allowed!.repliesTo("mallory")).toEqual([]);
    expect(unrouted!.repliesTo("alice")).toEqual([]);
  });

  it("answers a message delivered twice only once", async () => {
    const { chat } = await bridge();
    const m = await chat.inject({ userId: "gus", text: "once" });
    await chat.inject({ ...m });
    await chat.waitForReplies("gus", 1);
    await converse(chat, "gus", ["after"]);
    expect(chat.repliesTo("gus").map((r) => r.text)).toEqual(["You said: once", "You said: after"]);
  });

  it("tells the person when the queue is full instead of dropping silently", async () => {
    const { chat } = await bridge({ queue: { debounceMs: 0, maxPendingPerSession: 1 } });
    const turn = service.hold(300);
    await chat.inject({ userId: "hal", text: "!sleep 300" });
    await turn.started; // the first is in flight, so it no longer waits
    await chat.inject({ userId: "hal", text: "queued" });
    await chat.inject({ userId: "hal", text: "one too many" });
    await chat.waitForReplies("hal", 1);
    turn.release();
    const replies = await chat.waitForReplies("hal", 3);
    expect(replies.map((r) => r.text)).toEqual([expect.stringMatching(/busy/), "slept 300", "You said: queued"]);
  });

  it("tells of every refused message on a platform that cannot redeliver: one notice now, one later saying how many", async () => {
    const clock = createSteppableClock();
    const { chat, daemon } = await bridge({ queue: { debounceMs: 0, maxPendingPerSession: 1 } }, { clock });
    const turn = service.hold(1500);
    await chat.inject({ userId: "hub", text: "!sleep 1500" });
    // In flight (so no longer waiting): the one waiting slot is free for "queued".
    await vi.waitFor(() => expect(testHandle(daemon).scheduler!.running().get(service.instanceIds[0]!)).toBe(1));
    await chat.inject({ userId: "hub", text: "queued" });
    for (let i = 1; i <= 4; i++) await chat.inject({ userId: "hub", text: `extra ${i}` });
    expect(chat.outcomes.slice(2).map((o) => o.status === "refused" && o.reason)).toEqual(["busy", "busy", "busy", "busy"]);
    await chat.waitForReplies("hub", 1);
    // The cooldown (60 s) ends: the three refused since the first notice are told in one.
    clock.advance(60_000);
    await chat.waitForReplies("hub", 2);
    turn.release();
    const replies = await chat.waitForReplies("hub", 4);
    const texts = replies.map((r) => r.text);
    // Observation 2: the cooldown used to swallow the notices after the first.
    expect(texts.filter((t) => /busy/.test(t))).toEqual([
      expect.stringMatching(/this one was not taken/),
      expect.stringMatching(/3 more messages from you were not taken/),
    ]);
    expect(texts.filter((t) => !/busy/.test(t))).toEqual(["slept 1500", "You said: queued"]);
  });

  it("a busy notice still owed when the daemon stops is sent after the next start", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const config = testConfig(service, dir.path, { queue: { debounceMs: 0, maxPendingPerSession: 1 } });
    const first = await startBridge(config);
    const turn = service.hold(1000);
    await first.chat.inject({ userId: "owe", text: "!sleep 1000" });
    await vi.waitFor(() => expect(testHandle(first.daemon).scheduler!.running().get(service.instanceIds[0]!)).toBe(1));
    await first.chat.inject({ userId: "owe", text: "queued" });
    await first.chat.inject({ userId: "owe", text: "extra 1" });
    await first.chat.inject({ userId: "owe", text: "extra 2" }); // inside the 60 s cooldown: owed, not yet said
    await first.chat.waitForReplies("owe", 1);
    await turn.started; // the daemon stops with the turn out at the service
    await first.daemon.stop({ graceMs: 0 });
    expect(first.chat.repliesTo("owe").map((m) => m.text)).toEqual([expect.stringMatching(/this one was not taken/)]);
    const second = await startBridge(config);
    onTestFinished(() => second.daemon.stop({ graceMs: 0 }));
    turn.release();
    await second.chat.waitForReplies("owe", 3);
    await second.daemon.whenIdle();
    const texts = second.chat.repliesTo("owe").map((m) => m.text);
    expect(texts.filter((t) => /not taken/.test(t))).toEqual([expect.stringMatching(/1 more message from you was not taken/)]);
    expect(texts.filter((t) => !/not taken/.test(t))).toEqual(["slept 1000", "You said: queued"]);
  });

  it("leaves a busy message unacknowledged on a platform that redelivers, and tells nobody", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const b = await startBridge(testConfig(service, dir.path, { queue: { debounceMs: 0, maxPendingPerSession: 1 } }), { redelivers: true });
    onTestFinished(() => b.daemon.stop({ graceMs: 0 }));
    const turn = service.hold(1000);
    await b.chat.inject({ userId: "ike", text: "!sleep 1000" });
    await vi.waitFor(() => expect(testHandle(b.daemon).scheduler!.running().get(service.instanceIds[0]!)).toBe(1));
    await b.chat.inject({ userId: "ike", text: "queued" });
    await b.chat.inject({ userId: "ike", text: "later" });
    expect(b.chat.outcomes.map((o) => o.status)).toEqual(["accepted", "accepted", "deferred"]);
    expect(b.chat.outcomes[2]).toMatchObject({ acknowledge: false, reason: "busy" });
    await turn.started;
    turn.release();
    const replies = await b.chat.waitForReplies("ike", 2);
    expect(replies.map((r) => r.text)).toEqual(["slept 1000", "You said: queued"]);
  });

  it("applies the group mention rule in the core, from the adapter's mentioned flag (group settings and aliases included)", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const config = testConfig(service, dir.path, {
      channels: [
        {
          type: "telegram",
          id: "acct0",
          token: TELEGRAM_BOT_TOKEN,
          // The mention rule alone: the chatter kept as context (group-context tests) stays out of the echo.
          groupContext: { enabled: false },
          access: { mode: "open", groups: { open: { requireMention: false }, guild: { requireMention: false } } },
        },
      ],
      routes: [{ match: {}, instance: service.instanceIds[0]! }],
    });
    const b = await startBridge(config);
    onTestFinished(() => b.daemon.stop({ graceMs: 0 }));
    const group = (chatId: string, mentioned: boolean, text: string, groupAliases?: string[]) =>
      b.chat.inject({ userId: "gus", chatId, chatType: "group", mentioned, text, ...(groupAliases ? { groupAliases } : {}) });
    await group("quiet", false, "chatter");
    await group("quiet", true, "hi bot");
    await group("open", false, "no mention needed");
    await group("thread", false, "guild says no mention needed", ["guild"]);
    expect(b.chat.outcomes.map((o) => (o.status === "refused" ? o.reason : o.status))).toEqual(["not_mentioned", "accepted", "accepted", "accepted"]);
    await b.chat.waitForReplies("quiet", 1);
    await b.daemon.whenIdle();
    expect(b.chat.repliesTo("quiet").map((m) => m.text)).toEqual(["You said: hi bot"]);
  });

  it("tells the sender of files the adapter did not pass on, once the message is journaled, and also when nothing else was left", async () => {
    const { chat } = await bridge();
    await chat.inject({
      userId: "fay",
      text: "see the files",
      droppedAttachments: [
        { fileName: "big.pdf", reason: "too_large" },
        { fileName: "x.bin", reason: "unavailable" },
      ],
    });
    await chat.inject({ userId: "fay", text: "", droppedAttachments: [{ fileName: "only.zip", reason: "disabled" }] });
    const replies = await chat.waitForReplies("fay", 3);
    const texts = replies.map((r) => r.text);
    expect(texts).toContain("You said: see the files");
    expect(texts).toContainEqual(
      expect.stringMatching(/^"big\.pdf" is larger than the 20 MB limit; "x\.bin" could not be downloaded, so they were not passed on\.$/),
    );
    expect(texts).toContainEqual('attachments are off here ("only.zip"), so it was not passed on.');
    expect(chat.outcomes.map((o) => o.status)).toEqual(["accepted", "refused"]);
  });

  it("uploads attachments to the inbox and names them in the turn", async () => {
    const { chat } = await bridge();
    const data = Buffer.from("hello file\n");
    await chat.inject({
      userId: "ivy",
      chatId: "ivy",
      text: "see attached",
      sentAt: 1_700_000_000_000,
      attachments: [{ kind: "document", fileName: "notes.txt", mimeType: "text/plain", data }],
    });
    const [reply] = await chat.waitForReplies("ivy", 1);
    const path = "inbox/fake/ivy/1700000000000-notes.txt";
    expect(reply!.text).toBe(`You said: see attached\n\nAttached files (in the workspace):\n- ${path}`);
    const file = await service.org.readFile({ instance_id: service.instanceIds[0]!, query: { path } });
    expect(file.content).toBe("hello file\n");
  });

  it("says attachments are off when the key may not write files", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const noFiles = await service.mintKey(["interact"]);
    const b = await startBridge(testConfig({ ...service, key: noFiles.raw }, dir.path));
    onTestFinished(() => b.daemon.stop({ graceMs: 0 }));
    await b.chat.inject({ userId: "jay", text: "pic", attachments: [{ kind: "photo", fileName: "p.png", data: Buffer.from([1, 2, 3]) }] });
    const [reply] = await b.chat.waitForReplies("jay", 1);
    expect(reply!.text).toMatch(/^\(Attachments are off for this agent.*\)\n\nYou said: pic$/s);
  });

  it("shows typing once the answer takes queue.typingDelayMs, refreshes it while waiting, and stops once the reply is in", async () => {
    const clock = createManualClock(Date.now());
    const { chat, daemon } = await bridge({}, { clock, typingRefreshMs: 5000 });
    const turn = service.hold(400);
    await chat.inject({ userId: "tia", text: "!sleep 400" });
    await turn.started; // the call is out; its reply is not
    expect(chat.typing).toHaveLength(0);
    clock.advance(499);
    expect(chat.typing).toHaveLength(0);
    clock.advance(1); // the default delay, 500 ms
    expect(chat.typing).toHaveLength(1);
    clock.advance(5000);
    clock.advance(5000);
    expect(chat.typing).toHaveLength(3);
    expect(chat.typing[0]).toMatchObject({ chatId: "tia", platform: "fake" });
    turn.release();
    await chat.waitForReplies("tia", 1);
    await daemon.whenIdle();
    clock.advance(20_000);
    expect(chat.typing).toHaveLength(3);
  });

  it("sends an answer that comes within queue.typingDelayMs without a typing indicator; 0 shows it at once", async () => {
    const clock = createManualClock(Date.now());
    const { chat, daemon } = await bridge({}, { clock, typingRefreshMs: 5000 });
    await converse(chat, "uri", ["quick"]);
    await daemon.whenIdle();
    clock.advance(20_000);
    expect(chat.typing).toHaveLength(0);

    const eager = await bridge({ queue: { debounceMs: 0, typingDelayMs: 0 } }, { clock, typingRefreshMs: 5000 });
    const turn = service.hold(400);
    await eager.chat.inject({ userId: "uri", text: "!sleep 400" });
    await turn.started;
    expect(eager.chat.typing).toHaveLength(1);
    turn.release();
    await eager.chat.waitForReplies("uri", 1);
  });

  it("retries a send the platform refused and delivers it once", async () => {
    const { chat, daemon } = await bridge();
    chat.failNextSends(2);
    await chat.inject({ userId: "uma", text: "persist" });
    await chat.waitForReplies("uma", 1);
    await daemon.whenIdle();
    expect(chat.repliesTo("uma").map((m) => m.text)).toEqual(["You said: persist"]);
  });

  it("refuses a second daemon on the same dataDir", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const config = testConfig(service, dir.path);
    const first = await startBridge(config);
    onTestFinished(() => first.daemon.stop({ graceMs: 0 }));
    await expect(startBridge(config)).rejects.toThrow(/in use by another daemon/);
  });

  it("serves /healthz and /metrics, and counts turns", async () => {
    const { daemon, chat } = await bridge({ ops: { host: "127.0.0.1", port: 0 } });
    await converse(chat, "kim", ["hi"]);
    await daemon.whenIdle();
    const health = await fetch(`${daemon.opsUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ healthy: true, pending: 0 });
    const metrics = await (await fetch(`${daemon.opsUrl}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`turns_total\\{instance="${service.instanceIds[0]}",outcome="answered"\\} 1`));
    expect(metrics).toMatch(/agent_bridge_inbound_messages_total\{platform="fake",outcome="accepted"\} 1/);
    expect(metrics).toMatch(/agent_bridge_turns_total/);
    expect(metrics).not.toContain(service.key);
  });

  it("lets an in-flight turn finish on stop and answers nothing after", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const b = await startBridge(testConfig(service, dir.path));
    const atService = service.nextSleep(200);
    await b.chat.inject({ userId: "lou", text: "!sleep 200" });
    await atService; // the turn is in flight
    await b.daemon.stop({ graceMs: 5000 });
    expect(b.chat.repliesTo("lou").map((m) => m.text)).toEqual(["slept 200"]);
    expect(b.chat.running).toBe(false);
    await expect(b.chat.inject({ userId: "lou", text: "late" })).rejects.toThrow();
  });
});
