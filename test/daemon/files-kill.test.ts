/**
 * Files back to the chat are journaled like chunks: the daemon as its own
 * process (compiled), Telegram's fake and the emulator in this process. The
 * reply names two workspace files; the daemon is killed with SIGKILL while
 * Telegram has the text and the photo and the document's upload is out. The
 * next life sends only the document: nothing twice, nothing lost.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { startDaemonProcess, until, writeDaemonConfig, type DaemonChild } from "./daemon-process.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };
/** A 1x1 PNG: Telegram takes a photo only if it is an image. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");

let service: Service;
let fake: FakeTelegram;
beforeAll(async () => {
  service = await startService({ permissions: ["interact", "files"] });
  fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
});
afterAll(async () => {
  await fake.close();
  await service.close();
});

it("a file sent before a SIGKILL is not sent again; the one in flight is sent by the next life", { timeout: 60_000 }, async () => {
  const instance = service.instanceIds[0]!;
  await service.org.uploadFile({ instance_id: instance, path: "workspace/chart.png", data: PNG, fileName: "chart.png" });
  await service.org.uploadFile({ instance_id: instance, path: "workspace/report.txt", data: Buffer.from("the numbers\n"), fileName: "report.txt" });
  const dir = tempDir();
  const { configFile } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.url },
    apiKey: service.key,
    instance,
    channels: [{ type: "telegram", token: TELEGRAM_BOT_TOKEN, apiRoot: fake.url, streaming: "off", setCommands: false, access: { users: [String(alice.id)] } }],
  });
  const children: DaemonChild[] = [];
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    const stalled = fake.stall("sendDocument", 1);
    // The fake model echoes it ("You said: ..."), so the reply names both files.
    fake.privateText(alice, "see ![the chart](workspace/chart.png) and [the report](workspace/report.txt)");
    await until(() => fake.sentFiles(alice.id).length === 1 && stalled.arrived() === 1, "the photo sent and the document's upload out");
    first.kill();
    expect(await first.exited).toBe(null);

    const second = startDaemonProcess(configFile);
    children.push(second);
    await until(() => fake.sentFiles(alice.id).length === 2, "the document, sent by the next life");
    // SIGTERM drains what is pending before the exit: anything sent twice would be in by then.
    process.kill(Number(readFileSync(join(dir.path, "data", "daemon.lock"), "utf8")), "SIGTERM");
    expect(await second.exited).toBe(0);

    expect(fake.sentMessages(alice.id).map((m) => m.text)).toEqual(["You said: see the chart and the report"]);
    expect(fake.sentFiles(alice.id).map((f) => [f.method, f.file_name])).toEqual([
      ["sendPhoto", "chart.png"],
      ["sendDocument", "report.txt"],
    ]);
    expect(fake.sentFiles(alice.id)[1]!.data.toString()).toBe("the numbers\n");
    expect(`${first.err()}${second.err()}`).not.toContain(TELEGRAM_BOT_TOKEN);
  } finally {
    for (const c of children) c.kill();
    delete process.env.BRIDGE_TEST_KEY;
    dir.remove();
  }
});
