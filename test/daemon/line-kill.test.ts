/**
 * LINE under the same delivery contract as the other platforms: the compiled
 * daemon as its own process, the LINE fake and the emulator in this one.
 * An event is taken (answered 200, journaled) while the agent is still
 * writing (the gateway's clock has not moved), then SIGKILL; the next life
 * answers it exactly once. The reply token died with the first life, so the
 * answer is pushed (with its retry key).
 */
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { renderLineText } from "../../daemon/adapters/line/text.js";
import { streamText } from "../../emulator/gateway/model.js";
import { createFakeLine } from "../fakes/line.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { tempDir } from "./daemon-harness.js";
import { acceptedCount, startDaemonProcess, until, writeDaemonConfig, type DaemonChild } from "./daemon-process.js";

const TOKEN = "killTestLineChannelAccessTokenThatStaysSecret0123456789abcdef";
const SECRET = "00112233445566778899aabbccddeeff";
const ALICE = `U${"3".repeat(32)}`;

let service: ServiceFixture;
beforeAll(async () => {
  const fixture = await openServiceFixture("line-kill-");
  service = fixture;
  return fixture.close;
});
afterAll(() => {
  delete process.env.BRIDGE_TEST_KEY;
});

/** The webhook URL a child daemon logged (it listens on port 0). */
function endpointOf(child: DaemonChild): string | undefined {
  return /"url":"(http:\/\/127\.0\.0\.1:\d+\/line\/webhook)"/.exec(`${child.out()}${child.err()}`)?.[1];
}

it("an event journaled, then kill -9 before the answer: the next life answers it exactly once, by push", { timeout: 60_000 }, async () => {
  const fake = await createFakeLine({ channelAccessToken: TOKEN, channelSecret: SECRET, redelivery: true });
  const dir = tempDir();
  const apiKey = service.configFor({ type: "terminal", id: "terminal" }).service.apiKey;
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.baseUrl },
    apiKey,
    instance: service.instanceId,
    extra: { logLevel: "info" },
    channels: [
      {
        type: "line",
        id: "ln",
        channel_access_token: TOKEN,
        channel_secret: SECRET,
        http: { port: 0 },
        api: fake.apiBase,
        data_api: fake.apiBase,
        webhook_redelivery: true,
        access: { users: [ALICE] },
      },
    ],
  });
  const children: DaemonChild[] = [];
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    await until(() => endpointOf(first) !== undefined, "the first life's endpoint");
    fake.setWebhookUrl(endpointOf(first)!);
    const event = await fake.say({ userId: ALICE }, "!stream 3");
    expect(event.status).toBe(200);
    expect(acceptedCount(dataDir)).toBe(1);
    expect(fake.messages(ALICE)).toEqual([]);
    first.kill();
    expect(await first.exited).toBe(null);

    const second = startDaemonProcess(configFile);
    children.push(second);
    await until(() => endpointOf(second) !== undefined, "the second life's endpoint");
    fake.setWebhookUrl(endpointOf(second)!);
    const final = renderLineText(streamText(600), "markdown");
    await vi.waitFor(
      () => {
        service.emulator.clock.advance(250);
        expect(fake.messages(ALICE).map((m) => m.text)).toContain(final);
      },
      { timeout: 30_000, interval: 20 },
    );
    // SIGTERM drains what is pending before the exit: anything sent twice would be in by then.
    second.proc.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    expect(fake.messages(ALICE).map((m) => [m.text, m.via])).toEqual([[final, "push"]]);
    const logs = `${first.out()}${first.err()}${second.out()}${second.err()}`;
    expect(logs).not.toContain(TOKEN);
    expect(logs).not.toContain(SECRET);
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
});
