/**
 * Crash-safe streaming: the compiled daemon as its own process, with a
 * Telegram channel pointed at the Bot API fake in this process, killed with
 * SIGKILL while a `!stream` reply is being shown, then started again. The
 * person must end up with the complete answer exactly once, in the message
 * the preview started, and the conversation must hold the input once. The
 * emulator runs on a manual clock: the first daemon's stream cannot complete
 * before the kill (it is mid-stream by construction, not by timing), and the
 * restarted daemon's stream completes as soon as the test moves the clock.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it, vi } from "vitest";
import { splitReply } from "../../daemon/core/chunking.js";
import { telegramMarkdownToHtml, telegramVisibleLength } from "../../daemon/adapters/telegram/index.js";
import { streamText } from "../../emulator/gateway/model.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { tempDir } from "./daemon-harness.js";
import { startDaemonProcess, until, type DaemonChild, writeDaemonConfig } from "./daemon-process.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };

let service: ServiceFixture;
let apiKey: string;
beforeAll(async () => {
  const fixture = await openServiceFixture("streaming-kill-");
  service = fixture;
  apiKey = service.configFor({ type: "terminal", id: "terminal" }).service.apiKey;
  return fixture.close;
});

const shown = (fake: FakeTelegram) => fake.shownMessages(alice.id);
const journalHas = (dataDir: string, record: string) => {
  const file = join(dataDir, "journal.jsonl");
  return existsSync(file) && readFileSync(file, "utf8").includes(record);
};

it("a kill -9 in the middle of a streamed reply: after the restart the same message is edited to the complete answer, shown once; !recall holds the input once", {
  timeout: 60_000,
}, async () => {
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  const dir = tempDir();
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.baseUrl },
    apiKey,
    instance: service.instanceId,
    // The daemon runs on the real clock here: a tenth of Telegram's pace keeps the edits (and the `!recall` answer after them) quick.
    channels: [{ type: "telegram", id: "tg", token: TELEGRAM_BOT_TOKEN, apiRoot: fake.url, access: { users: [String(alice.id)] }, minEditIntervalMs: 100 }],
  });
  const children: DaemonChild[] = [];
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    fake.privateText(alice, "!stream 3");
    // The preview message is out and its id journaled; the gateway is still writing (its clock has not moved).
    const preview = await fake.waitFor(() => shown(fake)[0], 30_000);
    await until(() => journalHas(dataDir, '{"t":"preview"'), "the preview journaled");
    expect(journalHas(dataDir, '{"t":"reply"')).toBe(false); // no answer recorded yet: the kill is mid-stream
    first.kill();
    expect(await first.exited).toBe(null);
    const atKill = shown(fake)[0]!.text;

    const second = startDaemonProcess(configFile);
    children.push(second);
    const answer = streamText(600);
    const final = splitReply(answer, 4096, (c) => telegramVisibleLength(telegramMarkdownToHtml(c))).map((c) => telegramMarkdownToHtml(c));
    // Moves the gateway on until the restarted daemon's new call for `!stream 3` completes and its text is shown.
    await vi.waitFor(
      () => {
        service.emulator.clock.advance(250);
        expect(shown(fake).map((m) => m.text)).toEqual(final);
      },
      { timeout: 30_000, interval: 20 },
    );
    expect(atKill).not.toBe(final[0]); // it was half-written when the daemon died
    expect(shown(fake).map((m) => m.message_id)).toEqual([preview.message_id]); // finished in place
    expect(fake.sentMessages(alice.id)).toHaveLength(1); // never sent anew
    // The channel's pace held across the restart as well: operations in the chat at least 100 ms apart.
    const times = shown(fake)
      .flatMap((m) => m.versions.map((v) => v.at))
      .sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(100);

    fake.privateText(alice, "!recall");
    await fake.waitFor(() => shown(fake).length === 2 || undefined, 30_000);
    await fake.waitFor(() => (shown(fake)[1]!.text === "!stream 3" ? true : undefined), 10_000);
  } finally {
    // Nothing is asserted of a graceful stop here (the daemon-kill tests cover it): SIGKILL, no waiting out its shutdown.
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
});
