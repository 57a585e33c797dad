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
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { checkOffline } from "../../daemon/config/reload.js";
import { createDaemon, describeReload } from "../../daemon/daemon.js";
import { createFakeAdapter, type FakeChatAdapter } from "../fakes/chat-adapter.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";

let service: Service;
const cleanups: (() => Promise<void> | void)[] = [];
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service.close();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function fileConfig(dataDir: string, over: { users0?: string[]; prompt1?: string; extra?: Record<string, unknown> } = {}) {
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

async function bridge() {
  const dir = tempDir();
  const file = join(dir.path, "daemon.json");
  const env = { BRIDGE_RELOAD_KEY: service.key };
  const write = (config: unknown) => writeFileSync(file, typeof config === "string" ? config : JSON.stringify(config));
  write(fileConfig(join(dir.path, "data")));
  const checked = await checkOffline(file, env);
  if (!checked.ok) throw new Error(checked.problems.join("\n"));
  const built = new Map<string, FakeChatAdapter[]>();
  const daemon = createDaemon({
    config: checked.config,
    logger: pino({ level: "silent" }),
    createAdapter: async (channel) => {
      const adapter = createFakeAdapter({ accountId: channel.id });
      built.set(channel.id, [...(built.get(channel.id) ?? []), adapter]);
      return adapter;
    },
    reloadFrom: () => checkOffline(file, env),
  });
  cleanups.push(dir.remove, () => daemon.stop({ graceMs: 0 }));
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
});
