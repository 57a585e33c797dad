/**
 * Google Chat under the same delivery contract as the other platforms: the
 * compiled daemon as its own process, the fake Google Chat and the emulator in
 * this one, SIGKILL in the middle of a reply, then a new life. The preview
 * message (spaces.messages.create) is out and journaled while the gateway is
 * still writing; after the restart the same message is updated to the complete
 * answer, shown once, never posted anew. The service account key stays out of
 * both lives' output.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it, vi } from "vitest";
import { markdownToChat } from "../../daemon/adapters/googlechat/outbound.js";
import { streamText } from "../../emulator/gateway/model.js";
import { googleChatChannelFor, startFakeGoogleChat } from "../helpers/googlechat-setup.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { tempDir } from "./daemon-harness.js";
import { type DaemonChild, startDaemonProcess, until, writeDaemonConfig } from "./daemon-process.js";

const PROJECT = "135792468013";
const DM = "spaces/dm-alice";

let service: ServiceFixture;
beforeAll(async () => {
  const fixture = await openServiceFixture("googlechat-kill-");
  service = fixture;
  return fixture.close;
});

/** The endpoint a child daemon logged (it listens on port 0). */
function endpointOf(child: DaemonChild): string | undefined {
  return /"url":"(http:\/\/127\.0\.0\.1:\d+\/googlechat\/events)"/.exec(`${child.out()}${child.err()}`)?.[1];
}

it("a kill -9 mid-stream finishes the same message in place after the restart, nothing doubled", { timeout: 60_000 }, async () => {
  const fake = await startFakeGoogleChat(PROJECT);
  const dir = tempDir();
  const apiKey = service.configFor({ type: "terminal", id: "terminal" }).service.apiKey;
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.baseUrl },
    apiKey,
    instance: service.instanceId,
    extra: { logLevel: "info" },
    channels: [{ ...googleChatChannelFor(fake, PROJECT, { access: { users: ["users/alice"] }, minEditIntervalMs: 100 }), id: "gc" }],
  });
  const children: DaemonChild[] = [];
  const journal = () => readFileSync(join(dataDir, "journal.jsonl"), "utf8");
  const bot = () => fake.messages(DM).filter((m) => m.sender.type === "BOT");
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    fake.setEndpoint(await waitForValue(() => endpointOf(first), "the first life's endpoint"));
    const { answered } = fake.say({ space: DM, text: "!stream 3" });
    // Taken and answered empty: the streamed reply goes through the API.
    expect(await answered).toEqual({ status: 200, body: "{}" });
    const preview = await waitForValue(() => bot()[0], "the preview");
    await until(() => journal().includes('{"t":"preview"'), "the preview journaled");
    expect(journal().includes('{"t":"reply"')).toBe(false); // the kill is mid-stream
    first.kill();
    expect(await first.exited).toBe(null);

    const second = startDaemonProcess(configFile);
    children.push(second);
    fake.setEndpoint(await waitForValue(() => endpointOf(second), "the second life's endpoint"));
    const final = markdownToChat(streamText(600));
    await vi.waitFor(
      () => {
        service.emulator.clock.advance(250);
        expect(bot().map((m) => m.text)).toEqual([final]);
      },
      { timeout: 30_000, interval: 20 },
    );
    // Finished in place: the one message the preview started, updated, never posted anew.
    expect(bot().map((m) => m.name)).toEqual([preview.name]);
    expect(fake.calls().filter((c) => c.startsWith("POST /v1/spaces/dm-alice/messages"))).toHaveLength(1);
    const output = `${first.out()}${first.err()}${second.out()}${second.err()}`;
    const key = JSON.parse(fake.serviceAccountKey) as { private_key: string };
    expect(output).not.toContain(key.private_key.split("\n")[1]);
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
});

async function waitForValue<T>(read: () => T | undefined, what: string): Promise<T> {
  let value: T | undefined;
  await until(() => {
    value = read();
    return value !== undefined;
  }, what);
  return value as T;
}
