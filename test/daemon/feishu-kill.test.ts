/**
 * Feishu/Lark under the same delivery contract as the other platforms: the
 * compiled daemon as its own process, the fake Feishu and the emulator in
 * this one, SIGKILL, then a new life.
 * - Mid-stream (HTTP): the preview card is out and journaled while the
 *   gateway is still writing; after the restart the same card is updated to
 *   the complete answer, shown once, never posted anew.
 * - As an event arrives (HTTP, and the long connection): the daemon is killed
 *   while Feishu is delivering a message, before or after its journal,
 *   whichever the race gives; Feishu delivers what it had no 200 for again,
 *   to the next life, and the message is answered exactly once.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { streamText } from "../../emulator/gateway/model.js";
import { createFakeFeishu, type FakeFeishu } from "../fakes/feishu.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { tempDir } from "./daemon-harness.js";
import { startDaemonProcess, until, writeDaemonConfig, type DaemonChild } from "./daemon-process.js";

const APP_ID = "cli_99887766554433aa";
const APP_SECRET = "killTestAppSecretThatStaysSecret";
const ENCRYPT_KEY = "killTestEncryptKeyStaysSecret";
const TOKEN = "killTestVerificationToken1";
const ALICE = "ou_alice00000000000000000000000001";
const DM = "oc_dm_alice0000000000000000000001";

let service: ServiceFixture;
beforeAll(async () => {
  const fixture = await openServiceFixture("feishu-kill-");
  service = fixture;
  return fixture.close;
});
afterAll(() => {
  delete process.env.BRIDGE_TEST_KEY;
});

/** The endpoint URL a child daemon logged (it listens on port 0). */
function endpointOf(child: DaemonChild): string | undefined {
  return /"url":"(http:\/\/127\.0\.0\.1:\d+\/feishu\/events)"/.exec(`${child.out()}${child.err()}`)?.[1];
}

async function waitForValue<T>(read: () => T | undefined, what: string): Promise<T> {
  let value: T | undefined;
  await until(() => {
    value = read();
    return value !== undefined;
  }, what);
  return value as T;
}

const botTexts = (fake: FakeFeishu) =>
  fake
    .messages(DM)
    .filter((m) => m.sender === "bot")
    .map((m) => fake.textOf(m));

function setUp(fake: FakeFeishu, mode: "http" | "websocket", channel: Record<string, unknown> = {}) {
  const dir = tempDir();
  const apiKey = service.configFor({ type: "terminal", id: "terminal" }).service.apiKey;
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.baseUrl },
    apiKey,
    instance: service.instanceId,
    extra: { logLevel: "info" },
    channels: [
      {
        type: "feishu",
        id: "fs",
        app_id: APP_ID,
        app_secret: APP_SECRET,
        mode,
        ...(mode === "http" ? { encrypt_key: ENCRYPT_KEY, verification_token: TOKEN, http: { port: 0 } } : {}),
        api: fake.apiBase,
        access: { users: [ALICE] },
        minEditIntervalMs: 100,
        ...channel,
      },
    ],
  });
  const journal = () => {
    try {
      return readFileSync(join(dataDir, "journal.jsonl"), "utf8");
    } catch {
      // Killed before the journal was first written.
      return "";
    }
  };
  return { dir, configFile, journal };
}

const noSecrets = (children: DaemonChild[]) => {
  const all = children.map((c) => `${c.out()}${c.err()}`).join("");
  for (const secret of [APP_SECRET, ENCRYPT_KEY, TOKEN]) expect(all.includes(secret), "a secret in the daemon's output").toBe(false);
};

it("mid-stream: the next life finishes the same streaming card in place, nothing doubled", { timeout: 60_000 }, async () => {
  const fake = await createFakeFeishu({
    appId: APP_ID,
    appSecret: APP_SECRET,
    encryptKey: ENCRYPT_KEY,
    verificationToken: TOKEN,
    retryDelaysMs: [200, 400, 800],
  });
  const { dir, configFile, journal } = setUp(fake, "http");
  const children: DaemonChild[] = [];
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    fake.setRequestUrl(await waitForValue(() => endpointOf(first), "the first life's endpoint"));
    fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "!stream 3" });
    const preview = await waitForValue(() => fake.messages(DM).find((m) => m.sender === "bot"), "the preview card");
    await until(() => journal().includes('{"t":"preview"'), "the preview journaled");
    expect(journal().includes('{"t":"reply"')).toBe(false); // the kill is mid-stream
    first.kill();
    expect(await first.exited).toBe(null);
    const atKill = fake.textOf(preview);

    const second = startDaemonProcess(configFile);
    children.push(second);
    fake.setRequestUrl(await waitForValue(() => endpointOf(second), "the second life's endpoint"));
    const answer = streamText(600);
    await until(() => {
      service.emulator.clock.advance(250);
      return botTexts(fake).join("") === answer;
    }, "the whole answer");
    expect(atKill).not.toBe(answer);
    // Finished in place: the one card the preview started, updated, never posted anew.
    expect(
      fake
        .messages(DM)
        .filter((m) => m.sender === "bot")
        .map((m) => m.id),
    ).toEqual([preview.id]);
    // A card that streamed (CardKit): the next life found it from the journaled message id and closed it.
    expect(fake.calls().filter((c) => c.path === "/open-apis/cardkit/v1/cards/id_convert" && c.status === 200)).toHaveLength(1);
    await until(() => fake.streamingOf(preview.id) === false, "the card's streaming mode closed");
    noSecrets(children);
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
});

it.each(["http", "websocket"] as const)(
  "%s: killed as an event arrives, Feishu delivers it again to the next life, answered exactly once",
  { timeout: 60_000 },
  async (mode) => {
    const fake = await createFakeFeishu({
      appId: APP_ID,
      appSecret: APP_SECRET,
      encryptKey: ENCRYPT_KEY,
      verificationToken: TOKEN,
      mode,
      // Feishu's 15 s, 5 min, ... scaled down; enough attempts to outlast a restart.
      retryDelaysMs: [300, 300, 600, 1200, 2400, 4800, 9600],
      answerWithinMs: 1000,
    });
    const { dir, configFile, journal } = setUp(fake, mode, { streaming: "off" });
    const children: DaemonChild[] = [];
    try {
      const first = startDaemonProcess(configFile);
      children.push(first);
      if (mode === "http") fake.setRequestUrl(await waitForValue(() => endpointOf(first), "the first life's endpoint"));
      else await until(() => fake.openConnections() === 1, "the first life's connection");
      const said = fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text: "exactly once" });
      // The kill lands while the delivery is under way: before or after the journal.
      first.kill();
      expect(await first.exited).toBe(null);
      const journaledBefore = journal().includes(said.message.id);

      const second = startDaemonProcess(configFile);
      children.push(second);
      if (mode === "http") fake.setRequestUrl(await waitForValue(() => endpointOf(second), "the second life's endpoint"));
      await until(() => botTexts(fake).includes("You said: exactly once"), "the answer");
      const delivered = await said.delivered;
      expect(delivered.status).toBe(200);
      // Answered 200 only by the life that had it journaled (or by the next, from its journal).
      if (!journaledBefore) expect(delivered.attempt).toBeGreaterThan(1);
      // SIGTERM drains what is pending before the exit: anything sent twice would be in by then.
      process.kill(Number(readFileSync(join(dir.path, "data", "daemon.lock"), "utf8")), "SIGTERM");
      expect(await second.exited).toBe(0);
      expect(botTexts(fake)).toEqual(["You said: exactly once"]);
      noSecrets(children);
    } finally {
      for (const c of children) c.kill();
      await Promise.all(children.map((c) => c.exited));
      await fake.close();
      dir.remove();
    }
  },
);
