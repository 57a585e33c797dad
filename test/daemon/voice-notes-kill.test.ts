/**
 * A kill -9 during a voice note's transcription: the daemon as its own
 * process (compiled), Telegram's fake and the emulator in this process, the
 * transcription a real local program (test/fakes/transcribe-command.mjs). The
 * first life is killed while the program runs; the next one transcribes the
 * note again and answers it once: the conversation holds the transcript once.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { startDaemonProcess, until, writeDaemonConfig, type DaemonChild } from "./daemon-process.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };
const FAKE_COMMAND = join(import.meta.dirname, "../fakes/transcribe-command.mjs");

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

it("a voice note whose transcription a SIGKILL cut short is transcribed by the next life and answered once", { timeout: 60_000 }, async () => {
  const dir = tempDir();
  const started = join(dir.path, "transcriber-started");
  const runs = join(dir.path, "transcriber-runs");
  const { configFile } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.url },
    apiKey: service.key,
    instance: service.instanceIds[0]!,
    channels: [{ type: "telegram", token: TELEGRAM_BOT_TOKEN, apiRoot: fake.url, streaming: "off", setCommands: false, access: { users: [String(alice.id)] } }],
    extra: { transcription: { kind: "command", command: [process.execPath, FAKE_COMMAND, "--started", started, "--log", runs, "{file}"] } },
  });
  const children: DaemonChild[] = [];
  let hungPid: number | undefined;
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    fake.voice(alice, Buffer.from("!hang-once\nwater the plants at six"), 4);
    await until(() => existsSync(started), "the transcription under way");
    hungPid = Number(readFileSync(started, "utf8"));
    first.kill();
    expect(await first.exited).toBe(null);
    expect(fake.sentMessages(alice.id)).toEqual([]);

    const second = startDaemonProcess(configFile);
    children.push(second);
    await until(() => fake.sentMessages(alice.id).length === 1, "the answer from the next life");
    const [answer] = fake.sentMessages(alice.id).map((m) => m.text);
    expect(answer).toContain("water the plants at six");
    expect(readFileSync(runs, "utf8")).toBe("run\nrun\n");

    // The conversation holds the voice note's turn once: one earlier input, with the transcript once.
    fake.privateText(alice, "!recall");
    await until(() => fake.sentMessages(alice.id).length === 2, "the recall");
    const recall = fake.sentMessages(alice.id)[1]!.text;
    expect(recall.split("water the plants at six").length - 1).toBe(1);
    fake.privateText(alice, "!count");
    await until(() => fake.sentMessages(alice.id).length === 3, "the count");
    expect(fake.sentMessages(alice.id)[2]!.text).toBe("2");
  } finally {
    for (const c of children) c.kill();
    // The first life's transcriber outlived it (it was the daemon's child, not in its process group): ended here.
    if (hungPid) {
      try {
        process.kill(hungPid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    delete process.env.BRIDGE_TEST_KEY;
    dir.remove();
  }
});
