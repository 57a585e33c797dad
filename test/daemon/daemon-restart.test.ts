import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { createManualClock } from "../../shared/clock.js";
import { splitReply } from "../../daemon/core/chunking.js";
import { longText } from "../../emulator/gateway/model.js";
import { startBridge, startService, tempDir, testConfig, type Service } from "./daemon-harness.js";
import { testHandle } from "../../daemon/test-handle.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service.close();
});

function dataDir(): string {
  const dir = tempDir();
  onTestFinished(dir.remove);
  return dir.path;
}

describe("daemon across a crash", () => {
  it("resumes every pending turn once, in order, after a crash", async () => {
    const dir = dataDir();
    // A long debounce on a clock that never moves: the turns are journaled but never start.
    const clock = createManualClock(Date.now());
    const first = await startBridge(testConfig(service, dir, { queue: { debounceMs: 60_000 } }), { clock });
    await first.chat.inject({ userId: "ann", text: "a1" });
    await first.chat.inject({ userId: "bob", text: "b1" });
    await first.chat.inject({ userId: "ann", text: "a2" });
    await first.chat.inject({ userId: "ann", text: "/whoami" });
    await testHandle(first.daemon).crash();
    expect(first.chat.sent.filter((m) => !m.text.startsWith("Platform:"))).toEqual([]);

    const second = await startBridge(testConfig(service, dir));
    onTestFinished(() => second.daemon.stop({ graceMs: 0 }));
    await second.daemon.whenIdle();
    expect(
      second.chat
        .repliesTo("ann")
        .filter((m) => !m.text.startsWith("Platform:"))
        .map((m) => m.text),
    ).toEqual(["You said: a1", "You said: a2"]);
    expect(second.chat.repliesTo("bob").map((m) => m.text)).toEqual(["You said: b1"]);
    // The command was answered exactly once, by one daemon or the other.
    const whoami = [...first.chat.sent, ...second.chat.sent].filter((m) => m.text.startsWith("Platform:"));
    expect(whoami).toHaveLength(1);
    // Nothing is pending afterwards: a third start answers nothing again.
    await second.daemon.stop();
    const third = await startBridge(testConfig(service, dir));
    onTestFinished(() => third.daemon.stop({ graceMs: 0 }));
    await third.daemon.whenIdle();
    expect(third.chat.sent).toEqual([]);
  });

  it("does not ask the service again for a recorded reply, and sends each chunk once", async () => {
    const dir = dataDir();
    const first = await startBridge(testConfig(service, dir), { maxMessageLength: 2000 });
    first.chat.hangAfter(2); // the process dies while sending the third chunk
    await first.chat.inject({ userId: "cy", text: "!long 9000" });
    await first.chat.waitForReplies("cy", 2);
    const calls = await service.responseCalls();
    await testHandle(first.daemon).crash();

    const second = await startBridge(testConfig(service, dir), { maxMessageLength: 2000 });
    onTestFinished(() => second.daemon.stop({ graceMs: 0 }));
    await second.daemon.whenIdle();
    expect(await service.responseCalls()).toBe(calls);
    const chunks = [...first.chat.repliesTo("cy"), ...second.chat.repliesTo("cy")].map((m) => m.text);
    expect(first.chat.repliesTo("cy")).toHaveLength(2);
    expect(chunks).toEqual(splitReply(longText(9000), 2000));
  });

  it("tells the person instead of answering turns older than maxTurnAgeMs after a restart", async () => {
    const dir = dataDir();
    const clock = createManualClock(Date.now());
    const overrides = { queue: { debounceMs: 60_000, maxTurnAgeMs: 3_600_000 } };
    const first = await startBridge(testConfig(service, dir, overrides), { clock });
    await first.chat.inject({ userId: "dee", text: "stale 1" });
    await first.chat.inject({ userId: "dee", text: "stale 2" });
    await testHandle(first.daemon).crash();
    const calls = await service.responseCalls();

    clock.advance(3_600_001);
    const second = await startBridge(testConfig(service, dir, overrides), { clock });
    onTestFinished(() => second.daemon.stop({ graceMs: 0 }));
    await second.daemon.whenIdle();
    const replies = second.chat.repliesTo("dee").map((m) => m.text);
    expect(replies).toEqual([expect.stringMatching(/too old to answer/), expect.stringMatching(/too old to answer/)]);
    expect(await service.responseCalls()).toBe(calls);
  });
});
