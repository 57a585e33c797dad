/**
 * A kill -9 at a scheduled slot: the daemon as its own process (compiled),
 * Telegram's fake and the emulator in this process. The first life fires a
 * slot and is killed while the agent answers it; the next life answers that
 * slot once (from the journal) and does not fire it again, then goes on with
 * the later slots: every slot fired is answered exactly once.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { waitUntil } from "../helpers/wait.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { startDaemonProcess, writeDaemonConfig, type DaemonChild } from "./daemon-process.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };

/** The slots a life's log says it fired (journaled), and those it found journaled already. */
function firings(out: string): { fired: string[]; duplicate: string[] } {
  const lines = out
    .split("\n")
    .filter((l) => l.includes('"msg":"scheduled prompt"'))
    .map((l) => JSON.parse(l) as { slot: string; outcome: string });
  return { fired: lines.filter((l) => l.outcome === "fired").map((l) => l.slot), duplicate: lines.filter((l) => l.outcome === "duplicate").map((l) => l.slot) };
}

let service: Service;
let fake: FakeTelegram;
beforeAll(async () => {
  service = await startService();
  fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
});
afterAll(async () => {
  await fake.close();
  await service.close();
});

it("a slot whose turn a SIGKILL cut short is answered once by the next life, and not fired again", { timeout: 60_000 }, async () => {
  const dir = tempDir();
  const { configFile } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.url },
    apiKey: service.key,
    instance: service.instanceIds[0]!,
    channels: [{ type: "telegram", token: TELEGRAM_BOT_TOKEN, apiRoot: fake.url, streaming: "off", setCommands: false, access: { users: [String(alice.id)] } }],
    extra: {
      logLevel: "info", // the test reads the firings from the log
      schedules: [{ id: "tick", cron: "*/2 * * * * *", timeZone: "UTC", channel: "telegram", chatId: String(alice.id), prompt: "!sleep 700" }],
    },
  });
  const children: DaemonChild[] = [];
  try {
    // The first slot's turn waits at the service until released.
    const held = service.hold(700);
    const first = startDaemonProcess(configFile);
    children.push(first);
    await first.waitFor((out) => firings(out).fired.length === 1, "the first slot fired");
    await held.started;
    first.kill();
    expect(await first.exited).toBe(null);
    const [killed] = firings(first.out()).fired;
    held.release();

    const second = startDaemonProcess(configFile);
    children.push(second);
    await waitUntil(() => fake.sentMessages(alice.id).length >= 3, "the killed slot and two more answered", 30_000);
    second.proc.kill("SIGTERM");
    expect(await second.exited).toBe(0);

    const later = firings(second.out());
    expect(later.fired).not.toContain(killed);
    expect(new Set(later.fired).size).toBe(later.fired.length);
    // The killed slot (from the journal) and each slot the next life fired: one answer each.
    expect(fake.sentMessages(alice.id).map((m) => m.text)).toEqual([killed, ...later.fired].map(() => "slept 700"));
  } finally {
    for (const c of children) c.kill();
    delete process.env.BRIDGE_TEST_KEY;
    dir.remove();
  }
});
