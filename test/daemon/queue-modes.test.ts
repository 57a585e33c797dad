/**
 * What a message sent while the agent is still answering does (`queue.mode`,
 * `/queue`), through the whole chain on the terminal-shaped fake chat: the
 * journal, the scheduler, the service call to the emulator over real HTTP.
 * A turn is kept at the service with the fake model's `!sleep`, held until
 * the test releases it, never by sleeping; `!recall` then shows what the
 * conversation holds, so "each message exactly once" is read from the
 * service's own chain.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { startBridge, startService, tempDir, testConfig, type Service } from "./daemon-harness.js";
import type { DaemonConfigInput } from "../../daemon/config/schema.js";
import { testHandle } from "../../daemon/test-handle.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service.close();
});

async function bridge(overrides: Partial<DaemonConfigInput> = {}) {
  const dir = tempDir();
  const { chat, daemon } = await startBridge(testConfig(service, dir.path, overrides));
  onTestFinished(dir.remove);
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  return { chat, daemon };
}

const texts = (chat: { repliesTo(id: string): { text: string }[] }, user: string) => chat.repliesTo(user).map((r) => r.text);

/** The inputs the conversation holds, as the fake model's `!recall` lists them (one per turn). */
async function recall(chat: Awaited<ReturnType<typeof bridge>>["chat"], user: string): Promise<string> {
  const before = chat.repliesTo(user).length;
  await chat.inject({ userId: user, text: "!recall" });
  return (await chat.waitForReplies(user, before + 1))[before]!.text;
}

/** Calls to /responses the emulator's console lists (a line is written when a request ends: answered, or left by its client). */
async function endedResponseCalls(): Promise<number> {
  const res = await fetch(`${service.url}/_emulator/console/requests`);
  const lines = (await res.json()) as { method: string; path: string }[];
  return lines.filter((l) => l.method === "POST" && l.path.endsWith("/responses")).length;
}

const count = (haystack: string, needle: string) => haystack.split(needle).length - 1;

describe("queue modes", () => {
  it("followup (the default): a message sent while busy waits and is answered on its own", async () => {
    const { chat, daemon } = await bridge();
    const held = service.hold(901);
    onTestFinished(held.release);
    await chat.inject({ userId: "fu", text: "!sleep 901" });
    await held.started;
    await chat.inject({ userId: "fu", text: "one" });
    await chat.inject({ userId: "fu", text: "two" });
    held.release();
    await chat.waitForReplies("fu", 3);
    await daemon.whenIdle();
    expect(texts(chat, "fu")).toEqual(["slept 901", "You said: one", "You said: two"]);
  });

  it("collect: what came while a turn ran is one next turn, in order, marked as several messages; each is in the conversation once", async () => {
    const { chat, daemon } = await bridge({ queue: { debounceMs: 0, mode: "collect" } });
    const held = service.hold(902);
    onTestFinished(held.release);
    await chat.inject({ userId: "co", text: "!sleep 902" });
    await held.started;
    let last = "";
    for (const t of ["alpha", "beta", "gamma"]) last = (await chat.inject({ userId: "co", text: t })).messageId;
    expect(testHandle(daemon).scheduler?.depth().totalWaiting).toBe(3);
    held.release();
    await chat.waitForReplies("co", 2);
    await daemon.whenIdle();
    expect(texts(chat, "co")).toEqual(["slept 902", "You said: (3 messages, in the order they were sent:)\n\n[1] alpha\n\n[2] beta\n\n[3] gamma"]);
    // The one reply answers the last of them.
    expect(chat.repliesTo("co")[1]!.target.replyToMessageId).toBe(last);
    const chain = await recall(chat, "co");
    for (const t of ["!sleep 902", "[1] alpha", "[2] beta", "[3] gamma"]) expect(count(chain, t)).toBe(1);
  });

  it("interrupt: a newer message stops the running answer and is answered together with the stopped one, each once", async () => {
    const { chat, daemon } = await bridge({ queue: { debounceMs: 0, mode: "interrupt" } });
    const held = service.hold(903);
    onTestFinished(held.release);
    const callsBefore = await endedResponseCalls();
    await chat.inject({ userId: "in", text: "!sleep 903" });
    await held.started;
    await chat.inject({ userId: "in", text: "never mind, do this" });
    const [reply] = await chat.waitForReplies("in", 1);
    expect(reply!.text).toBe("You said: (2 messages, in the order they were sent:)\n\n[1] !sleep 903\n\n[2] never mind, do this");
    // The stopped call was closed at the service while the model still ran, not left to finish.
    await vi.waitFor(async () => expect(await endedResponseCalls()).toBe(callsBefore + 2));
    held.release();
    await daemon.whenIdle();
    expect(texts(chat, "in")).toHaveLength(1);
    const chain = await recall(chat, "in");
    expect(count(chain, "!sleep 903")).toBe(1);
    expect(count(chain, "never mind, do this")).toBe(1);
    expect(chain).not.toContain("slept 903");
  });

  it("a route's mode wins over the channel's and the top level's; /queue sets a chat's own, and /queue default goes back", async () => {
    const dir = tempDir();
    const base = testConfig(service, dir.path);
    const acct = base.channels[0]!.id;
    const config = testConfig(service, dir.path, {
      queue: { debounceMs: 0, mode: "interrupt" },
      channels: [{ type: "terminal", id: acct, access: { mode: "open" }, queue: { mode: "followup" } }],
      routes: [
        { match: { userId: "ru" }, instance: service.instanceIds[0]!, queue: { mode: "collect" } },
        { match: {}, instance: service.instanceIds[0]! },
      ],
    });
    const { chat, daemon } = await startBridge(config);
    onTestFinished(dir.remove);
    onTestFinished(() => daemon.stop({ graceMs: 0 }));

    await chat.inject({ userId: "ru", text: "/queue" });
    await chat.inject({ userId: "ch", text: "/queue" });
    const [routeSays] = await chat.waitForReplies("ru", 1);
    const [channelSays] = await chat.waitForReplies("ch", 1);
    expect(routeSays!.text).toMatch(/^Queue mode: collect \(the bridge's setting\)/);
    expect(channelSays!.text).toMatch(/^Queue mode: followup \(the bridge's setting\)/);

    await chat.inject({ userId: "ch", text: "/queue collect" });
    await chat.waitForReplies("ch", 2);
    expect(texts(chat, "ch")[1]).toMatch(/^Queue mode for this chat: collect/);
    const held = service.hold(904);
    onTestFinished(held.release);
    await chat.inject({ userId: "ch", text: "!sleep 904" });
    await held.started;
    await chat.inject({ userId: "ch", text: "x" });
    await chat.inject({ userId: "ch", text: "y" });
    held.release();
    await chat.waitForReplies("ch", 4);
    await daemon.whenIdle();
    expect(texts(chat, "ch").slice(2)).toEqual(["slept 904", "You said: (2 messages, in the order they were sent:)\n\n[1] x\n\n[2] y"]);

    await chat.inject({ userId: "ch", text: "/queue default" });
    await chat.inject({ userId: "ch", text: "/queue" });
    await chat.waitForReplies("ch", 6);
    expect(texts(chat, "ch").slice(4)).toEqual([
      "This chat follows the bridge's queue setting again.",
      expect.stringMatching(/^Queue mode: followup \(the bridge's setting\)/),
    ]);
    await chat.inject({ userId: "ch", text: "/queue steer" });
    await chat.waitForReplies("ch", 7);
    expect(texts(chat, "ch")[6]).toMatch(/^Unknown queue mode "steer"/);
  });
});
