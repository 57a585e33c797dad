/**
 * Live config: the daemon reads its file again while messages keep coming.
 * Access lists apply from the next message; a channel whose connection
 * settings changed restarts alone (the other keeps its adapter); a file with
 * problems is refused with them named (the outcome, /healthz, a metric) and
 * the running config stays. Every message sent across the reloads is
 * answered exactly once. The chats are fake adapters the daemon builds from
 * its channels (its `createAdapter` seam), the service is the emulator over
 * real HTTP.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { checkOffline } from "../../daemon/config/reload.js";
import { cronOf, nextSlot } from "../../daemon/core/schedules/slots.js";
import { createDaemon, describeReload } from "../../daemon/daemon.js";
import { testHandle } from "../../daemon/test-handle.js";
import type { Clock } from "../../shared/clock.js";
import { createFakeAdapter, type FakeChatAdapter } from "../fakes/chat-adapter.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service.close();
});

type FileOptions = { users0?: string[]; prompt1?: string; extra?: Record<string, unknown> };

function fileConfig(dataDir: string, over: FileOptions = {}) {
  return {
    service: { baseUrl: service.url, apiKey: "${BRIDGE_RELOAD_KEY}", requestTimeoutMs: 10_000 },
    dataDir,
    logLevel: "silent",
    ops: { port: null },
    queue: { debounceMs: 0, maxPendingPerSession: 100 },
    retry: { maxAttempts: 5, baseDelayMs: 5, maxDelayMs: 40 },
    routes: [{ match: {}, instance: service.instanceIds[0]! }],
    channels: [
      { type: "terminal", id: "acct0", access: { mode: "allowlist", users: over.users0 ?? ["ann", "bob", "zed"] } },
      { type: "terminal", id: "acct1", access: { mode: "open" }, prompt: over.prompt1 ?? "you> " },
    ],
    ...over.extra,
  };
}

async function bridge(options: { first?: FileOptions; clock?: Clock; failToBuild?: string } = {}) {
  const dir = tempDir();
  const file = join(dir.path, "daemon.json");
  const env = { BRIDGE_RELOAD_KEY: service.key };
  const write = (config: unknown) => writeFileSync(file, typeof config === "string" ? config : JSON.stringify(config));
  write(fileConfig(join(dir.path, "data"), options.first));
  const checked = await checkOffline(file, env);
  if (!checked.ok) throw new Error(checked.problems.join("\n"));
  const built = new Map<string, FakeChatAdapter[]>();
  const daemon = createDaemon({
    config: checked.config,
    logger: pino({ level: "silent" }),
    ...(options.clock ? { clock: options.clock } : {}),
    createAdapter: async (channel) => {
      if (channel.id === options.failToBuild) throw new Error(`no adapter for ${channel.id} (as the test asks)`);
      // The channel's own platform: its schedules run only where its adapter is.
      const adapter = createFakeAdapter({ platform: channel.type, accountId: channel.id });
      built.set(channel.id, [...(built.get(channel.id) ?? []), adapter]);
      return adapter;
    },
    reloadFrom: () => checkOffline(file, env),
  });
  onTestFinished(dir.remove);
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { daemon, built, write, dataDir: join(dir.path, "data") };
}

describe("config reload", () => {
  it("applies access from the next message and restarts only the changed channel, answering every message once under load", async () => {
    const { daemon, built, write, dataDir } = await bridge();
    const chat0 = built.get("acct0")![0]!;
    const chat1 = built.get("acct1")![0]!;
    const sent: Promise<unknown>[] = [];
    const load = (from: number, to: number) => {
      for (let i = from; i < to; i++) sent.push(chat0.inject({ userId: i % 2 ? "ann" : "bob", text: `m${i}` }));
    };
    load(0, 20);
    // zed is let out, acct1's prompt (a setting of its own, not read per message) changes.
    write(fileConfig(dataDir, { users0: ["ann", "bob"], prompt1: "> " }));
    const reloading = daemon.reload();
    load(20, 40);
    const outcome = await reloading;
    expect(outcome).toMatchObject({ ok: true, changed: true, restarted: ["acct1"], added: [], removed: [], restartNeeded: [] });
    load(40, 60);
    await Promise.all(sent);

    // Only acct1 was rebuilt; acct0 kept its adapter (and its connection) throughout.
    expect(built.get("acct0")).toHaveLength(1);
    expect(chat0.running).toBe(true);
    expect(built.get("acct1")).toHaveLength(2);
    expect(chat1.running).toBe(false);
    expect(built.get("acct1")![1]!.running).toBe(true);

    // The access list applies from the next message: zed is refused now, in the same chat adapter.
    await chat0.inject({ userId: "zed", text: "still me" });
    expect(chat0.outcomes.at(-1)).toMatchObject({ status: "refused", reason: "access" });

    await chat0.waitForReplies("ann", 30);
    await chat0.waitForReplies("bob", 30);
    await daemon.whenIdle();
    const replies = [...chat0.repliesTo("ann"), ...chat0.repliesTo("bob")].map((r) => r.text);
    expect(replies).toHaveLength(60);
    for (let i = 0; i < 60; i++) expect(replies.filter((t) => t === `You said: m${i}`)).toHaveLength(1);
    expect(chat0.repliesTo("zed")).toEqual([]);
    expect(daemon.health().config).toMatchObject({ lastReload: { ok: true } });

    // The new channel adapter answers too.
    const next = built.get("acct1")![1]!;
    await next.inject({ userId: "cy", text: "after" });
    expect((await next.waitForReplies("cy", 1))[0]!.text).toBe("You said: after");
  });

  it("a reload whose new channel fails to start is settled as failed, naming it, with the rest of the new config in place", async () => {
    const { daemon, built, write, dataDir } = await bridge({ failToBuild: "acct2" });
    const config = fileConfig(dataDir, { users0: ["ann"] });
    write({ ...config, channels: [...config.channels, { type: "terminal", id: "acct2", access: { mode: "open" } }] });
    const outcome = await daemon.reload();
    expect(outcome).toMatchObject({ ok: false, problems: [expect.stringMatching(/^restarting the changed channels failed: no adapter for acct2/)] });
    // Settled, not left half-way: the outcome is the last reload's, and the live part applies.
    expect(daemon.health().config).toMatchObject({ lastReload: { ok: false } });
    const acct0 = built.get("acct0")!.at(-1)!;
    await acct0.inject({ userId: "bob", text: "hello" });
    expect(acct0.outcomes.at(-1)).toMatchObject({ status: "refused", reason: "access" });
  });

  it("refuses a file with problems, names them (outcome, /healthz, metric), and keeps the running config", async () => {
    const { daemon, built, write, dataDir } = await bridge();
    const chat0 = built.get("acct0")![0]!;
    const before = daemon.health().config as { hash: string };

    write(fileConfig(dataDir, { users0: ["ann"], extra: { queue: { debounceMs: -1, maxPendingPerSession: 100 }, routez: [] } }));
    const outcome = await daemon.reload();
    expect(outcome.ok).toBe(false);
    const problems = outcome.ok ? [] : outcome.problems;
    expect(problems.join("\n")).toMatch(/queue\.debounceMs/);
    expect(problems.join("\n")).toMatch(/routez/);
    expect(describeReload(outcome)).toMatchObject({ ok: false, error: expect.stringMatching(/^Config refused; the running one stays:/) });
    expect(daemon.health().config).toEqual({ hash: before.hash, lastReload: { ok: false, at: expect.any(Number), problems } });
    expect(await daemon.metrics.text()).toMatch(/config_reloads_total\{result="refused"\} 1/);
    expect(await daemon.metrics.text()).toMatch(/config_last_reload_ok 0/);

    // The running config stays: bob is still let in, and no channel was rebuilt.
    await chat0.inject({ userId: "bob", text: "still here" });
    expect((await chat0.waitForReplies("bob", 1))[0]!.text).toBe("You said: still here");
    expect(built.get("acct0")).toHaveLength(1);
    expect(built.get("acct1")).toHaveLength(1);

    write("{ not json");
    const broken = await daemon.reload();
    expect(broken.ok).toBe(false);

    // A good file again: taken, the gauge back to 1.
    write(fileConfig(dataDir));
    expect(await daemon.reload()).toMatchObject({ ok: true, changed: false, restarted: [] });
    expect(await daemon.metrics.text()).toMatch(/config_last_reload_ok 1/);
  });

  it("starts and stops schedules and applies identity links added or removed by a reload, under load, each message answered once", {
    timeout: 60_000,
  }, async () => {
    const clock = createSteppableClock();
    const schedule = (id: string, cron: string, chatId: string) => ({ id, cron, timeZone: "UTC", channel: "acct0", chatId, prompt: id });
    const annEverywhere = [
      { channel: "acct0", userId: "ann" },
      { channel: "acct1", userId: "ann" },
    ];
    const first = { schedules: [schedule("pulse", "0 * * * *", "s1"), schedule("gone", "0 * * * *", "s2")] };
    const { daemon, built, write, dataDir } = await bridge({ first: { extra: first }, clock });
    const chat0 = built.get("acct0")![0]!;
    const chat1 = built.get("acct1")![0]!;
    const armed = (id: string) => waitUntil(() => testHandle(daemon).schedules?.nextCheck(id) !== undefined, `${id}'s timer`);
    /** Once the timers are armed, the clock to a second past the expression's next slot. */
    const toNextSlot = async (cron: string, ...ids: string[]) => {
      for (const id of ids) await armed(id);
      clock.advance(nextSlot(cronOf(cron, "UTC"), clock.now())! - clock.now() + 1000);
    };
    const texts = (adapter: FakeChatAdapter, chatId: string) => adapter.repliesTo(chatId).map((r) => r.text);

    // Before: both schedules fire at the hour; ann's chats on the two channels are two conversations.
    await toNextSlot("0 * * * *", "pulse", "gone");
    await chat0.waitForReplies("s1", 1);
    await chat0.waitForReplies("s2", 1);
    await chat0.inject({ userId: "ann", text: "alpha" });
    await chat1.inject({ userId: "ann", text: "beta" });
    await chat1.inject({ userId: "ann", text: "!recall" });
    expect((await chat1.waitForReplies("ann", 2))[1]!.text).toBe("beta");

    // The reload comes while bob's messages flow: "gone" is removed, "pulse" moves to half past, "fresh" is new, ann is linked.
    const sent: Promise<unknown>[] = [];
    const load = (from: number, to: number) => {
      for (let i = from; i < to; i++) sent.push(chat0.inject({ userId: "bob", text: `m${i}` }));
    };
    load(0, 20);
    const second = { schedules: [schedule("pulse", "30 * * * *", "s1"), schedule("fresh", "0 * * * *", "s3")], identityLinks: [annEverywhere] };
    write(fileConfig(dataDir, { extra: second }));
    const reloading = daemon.reload();
    load(20, 40);
    expect(await reloading).toMatchObject({ ok: true, changed: true, restarted: [], added: [], removed: [], restartNeeded: [] });
    load(40, 60);

    // The link applies to ann's next message: what she says on acct0 is in the conversation she has on acct1.
    await chat0.inject({ userId: "ann", text: "gamma" });
    await chat0.waitForReplies("ann", 2);
    await chat1.inject({ userId: "ann", text: "!recall" });
    expect((await chat1.waitForReplies("ann", 3))[2]!.text).toBe("gamma");

    // Half past: "pulse" fires at its new time; the next hour: "fresh" fires, "gone" does not.
    await toNextSlot("30 * * * *", "pulse", "fresh");
    await chat0.waitForReplies("s1", 2);
    await toNextSlot("0 * * * *", "pulse", "fresh");
    await chat0.waitForReplies("s3", 1);
    expect(testHandle(daemon).schedules?.nextCheck("gone")).toBeUndefined();

    // A reload without the link: ann's chats are their own again (acct1's conversation is the one from before the link).
    write(fileConfig(dataDir, { extra: { schedules: second.schedules } }));
    expect(await daemon.reload()).toMatchObject({ ok: true, changed: true });
    await chat1.inject({ userId: "ann", text: "!recall" });
    expect((await chat1.waitForReplies("ann", 4))[3]!.text).toBe("beta\n!recall");

    await Promise.all(sent);
    await chat0.waitForReplies("bob", 60);
    await daemon.whenIdle();
    const replies = texts(chat0, "bob");
    expect(replies).toHaveLength(60);
    for (let i = 0; i < 60; i++) expect(replies.filter((t) => t === `You said: m${i}`)).toHaveLength(1);
    expect(texts(chat0, "s1")).toEqual(["You said: pulse", "You said: pulse"]);
    expect(texts(chat0, "s2")).toEqual(["You said: gone"]);
    expect(texts(chat0, "s3")).toEqual(["You said: fresh"]);
  });

  it("starts a schedule whose time a reload changed from the reload, making up no slot of its new time from before", { timeout: 30_000 }, async () => {
    const clock = createSteppableClock();
    const pulse = (cron: string) => ({ schedules: [{ id: "pulse", cron, timeZone: "UTC", channel: "acct0", chatId: "s1", prompt: "pulse" }] });
    const { daemon, built, write, dataDir } = await bridge({ first: { extra: pulse("0 * * * *") }, clock });
    const chat0 = built.get("acct0")![0]!;
    const armed = () => waitUntil(() => testHandle(daemon).schedules?.nextCheck("pulse") !== undefined, "pulse's timer");
    const fired = async () => Number(/scheduled_prompts_total\{schedule="pulse",outcome="fired"\} (\d+)/.exec(await daemon.metrics.text())?.[1] ?? 0);
    await armed();
    clock.advance(nextSlot(cronOf("0 * * * *", "UTC"), clock.now())! - clock.now() + 1000);
    await chat0.waitForReplies("s1", 1);
    // Ten minutes on, every five minutes: its slot of ten past is after the last firing, but before the change.
    await armed();
    clock.advance(10 * 60 * 1000);
    write(fileConfig(dataDir, { extra: pulse("*/5 * * * *") }));
    expect(await daemon.reload()).toMatchObject({ ok: true, changed: true, restartNeeded: [] });
    await armed();
    expect(await fired()).toBe(1);
    // Its next slot fires.
    clock.advance(nextSlot(cronOf("*/5 * * * *", "UTC"), clock.now())! - clock.now() + 1000);
    await chat0.waitForReplies("s1", 2);
    expect(await fired()).toBe(2);
  });
});
