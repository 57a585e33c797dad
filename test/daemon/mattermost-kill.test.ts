/**
 * Mattermost under the delivery contract: the compiled daemon as its own
 * process, the fake server and the emulator in this one. A post arrives on
 * the socket and the daemon is killed (SIGKILL) while it fetches the post's
 * file, before the journal has the post; the next life's catch-up
 * (`GET /channels/{id}/posts?since=`, the channel remembered before the
 * hand-over) brings the post again and it is answered exactly once.
 */
import { expect, it } from "vitest";
import { createFakeMattermost } from "../fakes/mattermost.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { tempDir } from "./daemon-harness.js";
import { acceptedCount, type DaemonChild, startDaemonProcess, until, writeDaemonConfig } from "./daemon-process.js";

const TOKEN = "k1llt0kenthatmuststaysecr1";
const BOT = { id: "b0tb0tb0tb0tb0tb0tb0tb0tb0", username: "agentbot" };
const ALICE = { id: "a11cea11cea11cea11cea11cea", username: "alice" };
const DM = "d1rectd1rectd1rectd1rectd1";

it("a post received and then SIGKILL before its journal is answered exactly once by the next life", { timeout: 60_000 }, async () => {
  const service = await startServiceFixture("mattermost-kill-");
  const fake = await createFakeMattermost({ token: TOKEN, bot: BOT, users: [ALICE], channels: [{ id: DM, type: "D" }] });
  const dir = tempDir();
  const apiKey = service.configFor({ type: "terminal", id: "terminal" }).service.apiKey;
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.baseUrl },
    apiKey,
    instance: service.instanceId,
    channels: [{ type: "mattermost", id: "mm", bot_token: TOKEN, base_url: fake.baseUrl, access: { users: [ALICE.id] }, streaming: "off" }],
  });
  const children: DaemonChild[] = [];
  const answers = () => fake.botPosts(DM).map((p) => p.message);
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    await until(() => fake.liveSockets() === 1, "the first life's socket");
    const held = fake.holdFiles();
    const file = fake.upload(DM, "notes.txt", Buffer.from("some notes"));
    fake.post({ channelId: DM, userId: ALICE.id, message: "read my notes", fileIds: [file.id] });
    await until(() => held.arrived() === 1, "the first life fetching the post's file");
    expect(acceptedCount(dataDir)).toBe(0);
    first.kill();
    expect(await first.exited).toBe(null);
    held.release();

    const second = startDaemonProcess(configFile);
    children.push(second);
    await until(() => answers().length === 1, "the next life's answer");
    fake.post({ channelId: DM, userId: ALICE.id, message: "and now?" });
    await until(() => answers().length === 2, "a live answer");
    expect(answers()[0]).toMatch(/^You said: read my notes/);
    expect(answers()[1]).toBe("You said: and now?");
    expect(acceptedCount(dataDir)).toBe(2);
    expect(`${first.out()}${first.err()}${second.out()}${second.err()}`).not.toContain(TOKEN);
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
});
