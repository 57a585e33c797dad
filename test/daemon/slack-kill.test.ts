/**
 * Slack under the same delivery contract as the other platforms: the compiled
 * daemon as its own process, the Slack fake and the emulator in this one,
 * SIGKILL in the middle of a reply, then a new life.
 * - HTTP Events API, mid-stream: the preview message (chat.postMessage) is out
 *   and journaled while the gateway is still writing (its clock has not
 *   moved); after the restart the same message is edited (chat.update) to the
 *   complete answer, shown once, never posted anew.
 * - Socket Mode, mid-upload: the photo is shared, the document's bytes are on
 *   their way to the upload URL; the next life uploads the document again
 *   (the half-done upload was never completed, so Slack never shared it):
 *   each file once, the text once.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { markdownToMrkdwn } from "../../daemon/adapters/slack/mrkdwn.js";
import { splitReply } from "../../daemon/core/chunking.js";
import { streamText } from "../../emulator/gateway/model.js";
import { createFakeSlack, type FakeSlack } from "../fakes/slack.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { startDaemonProcess, until, writeDaemonConfig, type DaemonChild } from "./daemon-process.js";

const BOT_TOKEN = "xoxb-1111-2222-killTestBotTokenThatStaysSecret";
const APP_TOKEN = "xapp-1-A0APP00001-3333-killTestAppToken";
const SIGNING_SECRET = "killTestSigningSecret0123456789ab";
const ALICE = "U0ALICE001";
const DM = "D0ALICE001";
/** A 1x1 PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");

let streaming: ServiceFixture;
let files: Service;
// File-wide: each beforeAll returns its release, which the runner calls after the last test (last made, first released).
beforeAll(async () => {
  const fixture = await openServiceFixture("slack-kill-");
  streaming = fixture;
  return fixture.close;
});
beforeAll(async () => {
  files = await startService({ permissions: ["interact", "files"] });
  return () => files.close();
});
afterAll(() => {
  delete process.env.BRIDGE_TEST_KEY;
});

/** The Events API URL a child daemon logged (it listens on port 0). */
function endpointOf(child: DaemonChild): string | undefined {
  const found = /"url":"(http:\/\/127\.0\.0\.1:\d+\/slack\/events)"/.exec(`${child.out()}${child.err()}`);
  return found?.[1];
}

it("HTTP Events API: a kill -9 mid-stream finishes the same message in place after the restart, nothing doubled", { timeout: 60_000 }, async () => {
  const fake = await createFakeSlack({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, mode: "http", postBurst: 50 });
  const dir = tempDir();
  const apiKey = streaming.configFor({ type: "terminal", id: "terminal" }).service.apiKey;
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: streaming.baseUrl },
    apiKey,
    instance: streaming.instanceId,
    extra: { logLevel: "info" },
    channels: [
      {
        type: "slack",
        id: "sl",
        botToken: BOT_TOKEN,
        signingSecret: SIGNING_SECRET,
        http: { port: 0 },
        api: fake.apiBase,
        access: { users: [ALICE] },
        minEditIntervalMs: 100,
      },
    ],
  });
  const children: DaemonChild[] = [];
  const journal = () => readFileSync(join(dataDir, "journal.jsonl"), "utf8");
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    const url = await waitForValue(() => endpointOf(first), "the first life's endpoint");
    fake.setRequestUrl(url);
    fake.say({ user: ALICE, channel: DM, text: "!stream 3" });
    const preview = await waitForValue(() => fake.messages(DM)[0], "the preview");
    await until(() => journal().includes('{"t":"preview"'), "the preview journaled");
    expect(journal().includes('{"t":"reply"')).toBe(false); // the kill is mid-stream
    first.kill();
    expect(await first.exited).toBe(null);
    const atKill = fake.messages(DM)[0]?.text;

    const second = startDaemonProcess(configFile);
    children.push(second);
    fake.setRequestUrl(await waitForValue(() => endpointOf(second), "the second life's endpoint"));
    const final = splitReply(streamText(600), 4000, (c) => markdownToMrkdwn(c).length).map((c) => markdownToMrkdwn(c));
    await vi.waitFor(
      () => {
        streaming.emulator.clock.advance(250);
        expect(fake.messages(DM).map((m) => m.text)).toEqual(final);
      },
      { timeout: 30_000, interval: 20 },
    );
    expect(atKill).not.toBe(final[0]);
    // Finished in place: the one message the preview started, edited, never posted anew.
    expect(fake.messages(DM).map((m) => m.ts)).toEqual([preview.ts]);
    expect(fake.calls().filter((c) => c.call === "chat.postMessage")).toHaveLength(final.length);
    expect(`${first.out()}${first.err()}${second.out()}${second.err()}`).not.toContain(BOT_TOKEN);
    expect(`${first.out()}${first.err()}${second.out()}${second.err()}`).not.toContain(SIGNING_SECRET);
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
});

it("Socket Mode: a kill -9 mid-upload sends the file in flight once in the next life, and the one already shared not again", { timeout: 60_000 }, async () => {
  const fake = await createFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SIGNING_SECRET, mode: "socket", postBurst: 50 });
  const instance = files.instanceIds[0] ?? "";
  await files.org.uploadFile({ instance_id: instance, path: "workspace/chart.png", data: PNG, fileName: "chart.png" });
  await files.org.uploadFile({ instance_id: instance, path: "workspace/report.txt", data: Buffer.from("the numbers\n"), fileName: "report.txt" });
  const dir = tempDir();
  const { configFile } = writeDaemonConfig(dir.path, {
    service: { baseUrl: files.url },
    apiKey: files.key,
    instance,
    channels: [
      { type: "slack", id: "sl", botToken: BOT_TOKEN, mode: "socket", appToken: APP_TOKEN, api: fake.apiBase, streaming: "off", access: { users: [ALICE] } },
    ],
  });
  const children: DaemonChild[] = [];
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    await until(() => fake.openConnections() === 1, "the first life's socket");
    // The first upload goes through; the second one's bytes are held at Slack's upload URL.
    const held = fake.holdUploads(1);
    fake.say({ user: ALICE, channel: DM, text: "see ![the chart](workspace/chart.png) and [the report](workspace/report.txt)" });
    await until(() => sharedFiles(fake).length === 1 && held.arrived() === 1, "the photo shared and the document's upload out");
    first.kill();
    expect(await first.exited).toBe(null);
    held.release();

    const second = startDaemonProcess(configFile);
    children.push(second);
    await until(() => sharedFiles(fake).length === 2, "the document, sent by the next life");
    // SIGTERM drains what is pending before the exit: anything sent twice would be in by then.
    process.kill(Number(readFileSync(join(dir.path, "data", "daemon.lock"), "utf8")), "SIGTERM");
    expect(await second.exited).toBe(0);

    expect(
      fake
        .messages(DM)
        .filter((m) => m.files.length === 0)
        .map((m) => m.text),
    ).toEqual(["You said: see the chart and the report"]);
    expect(sharedFiles(fake).map((f) => f.name)).toEqual(["chart.png", "report.txt"]);
    expect(sharedFiles(fake)[1]?.data.toString()).toBe("the numbers\n");
    expect(`${first.out()}${first.err()}${second.out()}${second.err()}`).not.toContain(BOT_TOKEN);
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
});

it("Socket Mode, a native stream in a channel thread: a kill -9 mid-stream; the next life stops the stream and finishes the same message", {
  timeout: 60_000,
}, async () => {
  const fake = await createFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SIGNING_SECRET, mode: "socket", postBurst: 50 });
  const dir = tempDir();
  const apiKey = streaming.configFor({ type: "terminal", id: "terminal" }).service.apiKey;
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: streaming.baseUrl },
    apiKey,
    instance: streaming.instanceId,
    channels: [
      {
        type: "slack",
        id: "sl",
        botToken: BOT_TOKEN,
        mode: "socket",
        appToken: APP_TOKEN,
        api: fake.apiBase,
        access: { users: [ALICE], groups: { C0GENERAL1: {} } },
        ackReaction: { scope: "off" },
        minEditIntervalMs: 100,
      },
    ],
  });
  const children: DaemonChild[] = [];
  const journal = () => readFileSync(join(dataDir, "journal.jsonl"), "utf8");
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    await until(() => fake.openConnections() === 1, "the first life's socket");
    const asked = fake.say({ user: ALICE, channel: "C0GENERAL1", text: `<@${fake.bot.userId}> !stream 3` });
    const stream = await waitForValue(() => fake.messages("C0GENERAL1")[0], "the stream started");
    await until(() => journal().includes('{"t":"preview"'), "the preview journaled");
    first.kill();
    expect(await first.exited).toBe(null);
    expect(fake.messages("C0GENERAL1")[0]?.stream).toBe("open"); // left open by the dead process

    const second = startDaemonProcess(configFile);
    children.push(second);
    const final = markdownToMrkdwn(streamText(600));
    await vi.waitFor(
      () => {
        streaming.emulator.clock.advance(250);
        expect(fake.messages("C0GENERAL1").map((m) => [m.ts, m.threadTs, m.text, m.stream])).toEqual([[stream.ts, asked.ts, final, "stopped"]]);
      },
      { timeout: 30_000, interval: 20 },
    );
    expect(fake.calls().filter((c) => c.call === "chat.startStream")).toHaveLength(1);
    expect(fake.calls().filter((c) => c.call === "chat.postMessage")).toHaveLength(0);
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
});

const sharedFiles = (fake: FakeSlack) => fake.messages(DM).flatMap((m) => m.files);

async function waitForValue<T>(read: () => T | undefined, what: string): Promise<T> {
  let value: T | undefined;
  await until(() => {
    value = read();
    return value !== undefined;
  }, what);
  return value as T;
}
