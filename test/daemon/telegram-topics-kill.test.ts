/**
 * A forum topic survives a SIGKILL (issue #27): the topic is journaled with
 * the message, so the reply the first life had out when it died is sent by
 * the next life into the same topic, naming it, and the topic's conversation
 * carries on there. The daemon as its own process (compiled), Telegram's
 * fake and the emulator in this process.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { startDaemonProcess, until, writeDaemonConfig, type DaemonChild } from "./daemon-process.js";

const TOKEN = "987654321:ZZZyyyXXXwwwVVVuuuTTTsssRRRqqqPPPoo";
const alice = { id: 5001, username: "alice" };
const FORUM = -1005556;

let service: Service;
let fake: FakeTelegram;
beforeAll(async () => {
  service = await startService();
  fake = await createFakeTelegram({ token: TOKEN });
});
afterAll(async () => {
  await fake.close();
  await service.close();
});

it("a reply out when the daemon is killed is sent by the next life into the topic asked in, and the topic's conversation goes on", {
  timeout: 60_000,
}, async () => {
  const dir = tempDir();
  const { configFile } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.url },
    apiKey: service.key,
    instance: service.instanceIds[0]!,
    channels: [
      {
        type: "telegram",
        token: TOKEN,
        apiRoot: fake.url,
        streaming: "off",
        setCommands: false,
        access: { users: [String(alice.id)], groups: { [String(FORUM)]: {} } },
      },
    ],
  });
  const children: DaemonChild[] = [];
  const inPlans = () => fake.sentMessages(FORUM).filter((m) => m.thread === plans);
  const plans = fake.createTopic(FORUM, "Plans", alice);
  fake.createTopic(FORUM, "Other", alice);
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    const stalled = fake.stall("sendMessage", 1);
    fake.groupText(FORUM, alice, "before the crash", { mention: true, topic: plans });
    await until(() => stalled.arrived() === 1, "the reply out to Telegram");
    first.kill();
    expect(await first.exited).toBe(null);

    const second = startDaemonProcess(configFile);
    children.push(second);
    await until(() => inPlans().length === 1, "the reply, sent by the next life");
    fake.groupText(FORUM, alice, "!recall", { mention: true, topic: plans });
    await until(() => inPlans().length === 2, "the recall");
    process.kill(Number(readFileSync(join(dir.path, "data", "daemon.lock"), "utf8")), "SIGTERM");
    expect(await second.exited).toBe(0);

    expect(fake.sentMessages(FORUM).map((m) => [m.text, m.thread, m.message_thread_id])).toEqual([
      ["You said: before the crash", plans, plans],
      ["before the crash", plans, plans],
    ]);
  } finally {
    for (const c of children) c.kill();
    delete process.env.BRIDGE_TEST_KEY;
    dir.remove();
  }
});
