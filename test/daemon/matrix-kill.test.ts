/**
 * Matrix under the delivery contract: the compiled daemon as its own process, the fake
 * homeserver and the emulator in this one. One `/sync` answer brings two messages: the first
 * is journaled, the second's file is still downloading (the homeserver holds it) when the
 * daemon is killed with SIGKILL. The sync token was not kept (not all of the answer was
 * taken), so the next life asks for the same answer again: the first message is known to the
 * journal and answered once, the second is fetched, journaled and answered once.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { createFakeMatrix } from "../fakes/matrix.js";
import { type Service, startService, tempDir } from "./daemon-harness.js";
import { acceptedCount, type DaemonChild, startDaemonProcess, until, writeDaemonConfig } from "./daemon-process.js";
import { personClient } from "./adapters/harness/matrix.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
  return () => service.close();
});

it("a kill -9 between receiving and journaling: the next life answers each message of the sync exactly once", { timeout: 60_000 }, async () => {
  const fake = await createFakeMatrix();
  const bot = fake.register("bridgebot", "Bridge Bot");
  const alice = fake.register("alice", "Alice");
  const dm = fake.createRoom(alice.userId, { direct: true, invite: [bot.userId] });
  const dir = tempDir();
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.url },
    apiKey: service.key,
    instance: service.instanceIds[0] ?? "",
    channels: [
      { type: "matrix", id: "mx", homeserver: fake.url, user_id: bot.userId, access_token: bot.token, streaming: "off", access: { users: [alice.userId] } },
    ],
  });
  const journal = () => readFileSync(join(dataDir, "journal.jsonl"), "utf8");
  const answers = () => fake.shown(dm, bot.userId).map((m) => m.body);
  const children: DaemonChild[] = [];
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    await until(() => fake.members(dm).includes(bot.userId), "the first life in the room");
    const upload = await personClient(fake, alice).uploadContent(Buffer.from("the numbers\n"), { name: "report.txt", type: "text/plain" });
    const held = fake.holdDownloads();
    const beforeBoth = fake.position();
    // Both in the log before the held long poll wakes: one sync answer brings them together.
    fake.inject(dm, alice.userId, "m.room.message", { msgtype: "m.text", body: "journaled first" });
    fake.inject(dm, alice.userId, "m.room.message", {
      msgtype: "m.file",
      body: "the report",
      filename: "report.txt",
      url: upload.content_uri,
      info: { mimetype: "text/plain", size: 12 },
    });
    await until(() => held.arrived() === 1 && acceptedCount(dataDir) === 1, "the first journaled, the second's file downloading");
    // The token kept is from before this sync answer: it was not all taken.
    const kept = [...journal().matchAll(/"k":"since","v":"s(\d+)"/g)].map((m) => Number(m[1])).at(-1) ?? 0;
    expect(kept).toBeLessThanOrEqual(beforeBoth);
    first.kill();
    expect(await first.exited).toBe(null);
    held.release();

    const second = startDaemonProcess(configFile);
    children.push(second);
    await until(() => answers().some((a) => a.includes("the report")), "the second message answered", 30_000);
    await until(() => answers().some((a) => a.includes("journaled first")), "the first message answered", 30_000);
    // SIGTERM drains what is pending before the exit: anything answered twice would be in by then.
    process.kill(Number(readFileSync(join(dataDir, "daemon.lock"), "utf8")), "SIGTERM");
    expect(await second.exited).toBe(0);
    expect(answers().filter((a) => a.includes("journaled first"))).toHaveLength(1);
    expect(answers().filter((a) => a.includes("the report"))).toHaveLength(1);
    expect(`${first.out()}${first.err()}${second.out()}${second.err()}`).not.toContain(bot.token);
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
});
