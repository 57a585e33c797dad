import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { sessionKeyOf } from "../../daemon/vocabulary/keys.js";
import { sessionBaseFor } from "../../daemon/core/routing.js";
import type { Daemon } from "../../daemon/daemon.js";
import { createLogger } from "../../daemon/ops/logger.js";
import { converse, startBridge, startService, tempDir, testConfig, type Bridge, type Service } from "./daemon-harness.js";
import type { FakeChatAdapter } from "../fakes/chat-adapter.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";
import { testHandle } from "../../daemon/test-handle.js";

let service: Service;
beforeAll(async () => {
  service = await startService({ permissions: ["interact", "read"] });
});
afterAll(async () => {
  await service.close();
});
afterEach(async () => {
  await service.clearFaults();
});
beforeEach(() => {
  // Registered before the test's own releases, so it runs after them: the instances start again
  // once the test's daemons have stopped.
  onTestFinished(async () => {
    for (const id of service.instanceIds) {
      const { status } = await service.org.getInstanceStatus({ instance_id: id });
      if (status === "stopped") await service.org.startInstance({ instance_id: id });
    }
  });
});

async function bridge(overrides: Parameters<typeof testConfig>[2] = {}, key = service.key, options: Parameters<typeof startBridge>[1] = {}): Promise<Bridge> {
  const dir = tempDir();
  const b = await startBridge(testConfig({ ...service, key }, dir.path, overrides), options);
  onTestFinished(dir.remove);
  onTestFinished(() => b.daemon.stop({ graceMs: 0 }));
  return b;
}

const instance = () => service.instanceIds[0]!;

/**
 * Every fault rule used up and no turn queued or running: each message has had its
 * last try and has either been told of or is counted for the next notice.
 */
async function allGaveUp(daemon: Daemon): Promise<void> {
  await vi.waitFor(() => {
    expect(service.emulator.env.faults.list()).toHaveLength(0);
    expect(testHandle(daemon).scheduler!.depth(instance()).totalWaiting).toBe(0);
    expect(testHandle(daemon).scheduler!.running().get(instance()) ?? 0).toBe(0);
  });
}
const texts = (chat: FakeChatAdapter, user: string) => chat.repliesTo(user).map((m) => m.text);

/**
 * The daemon found the instance stopped, was refused starting it (its key may
 * not) and has asked for its status again since: it is waiting, not giving up.
 */
async function waitingForStoppedInstance(since: number): Promise<boolean> {
  const requests = (await (await fetch(`${service.url}/_emulator/requests`)).json()) as { at: string; method: string; path: string; status: number }[];
  const recent = requests.filter((r) => Date.parse(r.at) >= since);
  const base = `/v1/instances/${instance()}`;
  const refused = recent.map((r) => r.method === "POST" && r.path === `${base}/start` && r.status === 403).lastIndexOf(true);
  return refused >= 0 && recent.slice(refused + 1).some((r) => r.method === "GET" && r.path === `${base}/status`);
}

async function sendAll(chat: FakeChatAdapter, users: string[], count: number): Promise<void> {
  for (let i = 1; i <= count; i++) for (const u of users) await chat.inject({ userId: u, text: `${u} ${i}` });
}

describe("daemon under service faults", () => {
  it("answers every message exactly once, in order, through 502s and connection resets", async () => {
    const { chat, daemon } = await bridge();
    const users = ["ann", "ben", "cat"];
    await service.admin("/_emulator/faults", { target: "gateway", instance_id: instance(), status: 502, times: 3 });
    await sendAll(chat, users, 3);
    await service.admin("/_emulator/faults", { target: "gateway", instance_id: instance(), error: "reset", times: 3 });
    for (let i = 4; i <= 6; i++) for (const u of users) await chat.inject({ userId: u, text: `${u} ${i}` });
    for (const u of users) await chat.waitForReplies(u, 6);
    await daemon.whenIdle();
    // One more message each, answered: a stray duplicate of an earlier reply would have come before it.
    for (const u of users) await converse(chat, u, ["done"]);
    for (const u of users) expect(texts(chat, u)).toEqual([...[1, 2, 3, 4, 5, 6].map((i) => `You said: ${u} ${i}`), "You said: done"]);
    const metrics = await daemon.metrics.text();
    expect(metrics).toMatch(/retries_total\{instance="[^"]+",reason="server"\} [1-9]/);
  });

  it("gives up after maxAttempts and tells the person of every message: at once, then one notice per cooldown saying how many", async () => {
    const clock = createSteppableClock();
    const { chat, daemon } = await bridge(
      { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5, errorCooldownMs: 60_000, instanceWaitMs: 1000 } },
      undefined,
      { clock },
    );
    await service.admin("/_emulator/faults", { target: "gateway", instance_id: instance(), status: 503, times: 9 });
    await chat.inject({ userId: "dan", text: "first" });
    await chat.inject({ userId: "dan", text: "second" });
    await chat.inject({ userId: "dan", text: "third" });
    await chat.waitForReplies("dan", 1);
    // All nine failures served and no turn left: the second and third have given up inside the cooldown.
    await allGaveUp(daemon);
    expect(texts(chat, "dan")).toHaveLength(1);
    // Observation 3: the cooldown used to swallow the second and third without a word.
    clock.advance(60_000);
    await chat.waitForReplies("dan", 2);
    await daemon.whenIdle();
    expect(texts(chat, "dan")).toEqual([
      expect.stringMatching(/^Sorry, your message could not be answered: the agent service kept failing/),
      expect.stringMatching(/^Sorry, 2 of your messages could not be answered: the agent service kept failing/),
    ]);
    expect(await converse(chat, "dan", ["fourth"])).toEqual(["You said: fourth"]);
    // A gateway error that is not worth retrying is said at once (another chat, so no cooldown).
    expect(await converse(chat, "eve", ["!fail 400"])).toEqual([expect.stringMatching(/refused the message \(HTTP 400\)/)]);
    // The agent's own 403 (passed through from the gateway) is not the service refusing the key.
    expect(await converse(chat, "eli", ["!fail 403"])).toEqual([expect.stringMatching(/refused the message \(HTTP 403\)/)]);
    // Nor is the agent's own 404 a missing instance: the client tells the two apart, once.
    expect(await converse(chat, "eva", ["!fail 404"])).toEqual([expect.stringMatching(/refused the message \(HTTP 404\)/)]);
    expect(daemon.health().stoppedRoutes).toEqual([]);
  });

  it("logs the request id the service answered with when a turn gives up, the one its journal lists for the failure", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
    const { chat, daemon } = await bridge(
      { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, errorCooldownMs: 60_000, instanceWaitMs: 1000 } },
      undefined,
      { logger },
    );
    await service.admin("/_emulator/faults", { target: "gateway", instance_id: instance(), status: 503, times: 2 });
    await chat.inject({ userId: "rid", text: "hello" });
    await chat.waitForReplies("rid", 1);
    await allGaveUp(daemon);
    const journal = (await (await fetch(`${service.url}/_emulator/requests`)).json()) as { method: string; path: string; status: number; request_id: string }[];
    const failures = journal.filter((r) => r.method === "POST" && r.path.endsWith("/responses") && r.status === 502).slice(-2);
    expect(failures).toHaveLength(2);
    // Each try is logged with the id of its answer; the turn that gave up names the last one.
    expect(lines.filter((l) => l.msg === "service call failed: retrying").map((l) => l.requestId)).toEqual([failures[0]!.request_id]);
    expect(lines.filter((l) => l.msg === "turn gave up")).toEqual([
      expect.objectContaining({ requestId: failures[1]!.request_id, reason: expect.stringMatching(/^502: /) }),
    ]);
  });

  it("turns that gave up but are not yet covered by a notice stay journaled: a restart tries them again", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const config = testConfig(service, dir.path, { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, errorCooldownMs: 60_000, instanceWaitMs: 1000 } });
    const first = await startBridge(config);
    await service.admin("/_emulator/faults", { target: "gateway", instance_id: instance(), status: 503, times: 4 });
    await first.chat.inject({ userId: "dot", text: "one" });
    await first.chat.inject({ userId: "dot", text: "two" });
    await first.chat.waitForReplies("dot", 1);
    // Both turns used up their attempts (the fault rule retires after 4 hits), and none is running.
    await vi.waitFor(() => expect(service.emulator.env.faults.list()).toHaveLength(0));
    await vi.waitFor(() => expect(testHandle(first.daemon).scheduler!.running().get(instance()) ?? 0).toBe(0));
    expect(testHandle(first.daemon).store!.pending()).toHaveLength(1);
    await first.daemon.stop({ graceMs: 0 });
    expect(texts(first.chat, "dot")).toEqual([expect.stringMatching(/^Sorry, your message could not be answered/)]);
    const second = await startBridge(config);
    onTestFinished(() => second.daemon.stop({ graceMs: 0 }));
    await second.chat.waitForReplies("dot", 1);
    expect(texts(second.chat, "dot")).toEqual(["You said: two"]);
  });

  it("waits for a stopped instance to run again and loses nothing (autoStart on, but the key may not start it)", async () => {
    const { chat } = await bridge({ service: { baseUrl: service.url, apiKey: service.key, autoStart: true } });
    expect(await converse(chat, "fred", ["one", "two"])).toEqual(["You said: one", "You said: two"]);
    await service.org.stopInstance({ instance_id: instance() });
    const since = Date.now();
    await sendAll(chat, ["fred"], 3);
    await waitUntil(() => waitingForStoppedInstance(since), "the daemon to wait for the stopped instance");
    expect(texts(chat, "fred")).toHaveLength(2);
    await service.org.startInstance({ instance_id: instance() });
    await chat.waitForReplies("fred", 5);
    expect(texts(chat, "fred").slice(2)).toEqual(["You said: fred 1", "You said: fred 2", "You said: fred 3"]);
    expect(await converse(chat, "fred", ["!recall"])).toEqual(["one\ntwo\nfred 1\nfred 2\nfred 3"]);
  });

  it("starts a stopped instance itself when autoStart is on and the key may", async () => {
    const key = await service.mintKey(["interact", "read", "configure"]);
    const { chat } = await bridge({ service: { baseUrl: service.url, apiKey: key.raw, autoStart: true } }, key.raw);
    await service.org.stopInstance({ instance_id: instance() });
    expect(await converse(chat, "gil", ["wake up"])).toEqual(["You said: wake up"]);
    expect((await service.org.getInstanceStatus({ instance_id: instance() })).status).toBe("running");
  });

  it("gives up on an instance that stays stopped beyond instanceWaitMs, and says so", async () => {
    const { chat } = await bridge({ retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, errorCooldownMs: 60_000, instanceWaitMs: 150 } });
    await service.org.stopInstance({ instance_id: instance() });
    const [reply] = await converse(chat, "hank", ["anyone home?"]);
    expect(reply).toMatch(/instance is not running/);
  });

  it("stops a route whose key the service refuses, telling the log and the person of every message (coalesced)", async () => {
    const key = await service.mintKey(["interact"]);
    const clock = createSteppableClock();
    const { chat, daemon } = await bridge(
      { retry: { maxAttempts: 5, baseDelayMs: 5, maxDelayMs: 40, errorCooldownMs: 60_000, instanceWaitMs: 10_000 } },
      key.raw,
      { clock },
    );
    expect(await converse(chat, "ida", ["before"])).toEqual(["You said: before"]);
    await service.org.revokeKey({ key_id: key.id });
    await chat.inject({ userId: "ida", text: "after 1" });
    await chat.inject({ userId: "ida", text: "after 2" });
    await chat.inject({ userId: "ida", text: "after 3" });
    await chat.waitForReplies("ida", 2);
    await allGaveUp(daemon);
    clock.advance(60_000); // the cooldown ends: one notice for the two since the first
    await chat.waitForReplies("ida", 3);
    await daemon.whenIdle();
    expect(texts(chat, "ida").slice(1)).toEqual([
      expect.stringMatching(/refused this bridge's access key, so this message could not be answered/),
      expect.stringMatching(/refused this bridge's access key, so 2 of your messages could not be answered/),
    ]);
    expect(daemon.health().stoppedRoutes).toEqual([0]);
    const [status] = await converse(chat, "ida", ["/status"]);
    expect(status).toMatch(/Route stopped: the service answered 403/);
    const calls = await service.responseCalls();
    await chat.inject({ userId: "ida", text: "after 4" });
    await allGaveUp(daemon);
    clock.advance(60_000);
    await chat.waitForReplies("ida", 5);
    await daemon.whenIdle();
    expect(await service.responseCalls()).toBe(calls); // a stopped route does not keep knocking
  });

  it("a route whose instance does not exist tells the person the route is misconfigured, not to try later", async () => {
    const dir = tempDir();
    const config = testConfig(service, dir.path, {
      routes: [{ match: {}, instance: "inst_doesnotexist0000" }],
    });
    const b = await startBridge(config);
    onTestFinished(dir.remove);
    onTestFinished(() => b.daemon.stop({ graceMs: 0 }));
    const [reply] = await converse(b.chat, "una", ["hello?"]);
    expect(reply).toMatch(/routed to an agent instance that does not exist/);
    expect(reply).not.toMatch(/try again later/i);
  });

  it("starts a fresh chain when the service lost the previous response, and says so", async () => {
    const { chat, daemon } = await bridge();
    await converse(chat, "jan", ["remember me"]);
    await daemon.whenIdle();
    const base = sessionBaseFor({ platform: "fake", accountId: "acct0", chatId: "jan", chatType: "direct", userId: "jan" }, "user");
    const key = sessionKeyOf({ instanceId: instance(), sessionBase: base });
    await testHandle(daemon).store!.setSession(key, { generation: 0, lastResponseId: `resp_${"0".repeat(32)}` });
    const [reply] = await converse(chat, "jan", ["hello again"]);
    expect(reply).toMatch(/^\(The earlier conversation could not be found.*\)\n\nYou said: hello again$/s);
    expect(await converse(chat, "jan", ["!recall"])).toEqual(["hello again"]);
    expect(testHandle(daemon).store!.session(key).generation).toBe(1);
  });
});
