/**
 * Signal under SIGKILL between receiving and journaling: signal-cli writes
 * each event to the stream once and never again, so the adapter writes it to
 * its spool before anything else. Here the daemon (its own compiled process)
 * has the message off the stream and is fetching its file from signal-cli
 * (held by the fake) when it is killed; signal-cli sends nothing again, and
 * the next life answers the message, from its spool, exactly once.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createFakeSignal, type FakeSignal } from "../fakes/signal.js";
import { type Service, startService, tempDir } from "./daemon-harness.js";
import { type DaemonChild, startDaemonProcess, until, writeDaemonConfig } from "./daemon-process.js";

const ACCOUNT = "+15550001111";
let service: Service;
let fake: FakeSignal;
beforeAll(async () => {
  service = await startService({ permissions: ["interact", "files"] });
  fake = await createFakeSignal({ account: ACCOUNT });
});
afterAll(async () => {
  await fake.close();
  await service.close();
});

it("a message taken off the stream, then kill -9 before it is journaled: the next life answers it once", { timeout: 60_000 }, async () => {
  const alice = fake.person("Alice", "+15550002222");
  const dir = tempDir();
  const { configFile } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.url },
    apiKey: service.key,
    instance: service.instanceIds[0] ?? "",
    channels: [{ type: "signal", account: ACCOUNT, url: fake.url, streaming: "off", access: { users: [alice.number] } }],
  });
  const children: DaemonChild[] = [];
  const answers = () => fake.sent(alice.uuid).filter((m) => m.text.includes("before the crash"));
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    await until(() => fake.liveStreams() === 1, "the first life's event stream");
    const held = fake.stall("getAttachment", 1);
    fake.direct(alice, "before the crash", { files: [{ contentType: "text/plain", filename: "note.txt", data: Buffer.from("a note") }] });
    // The file is asked for only after the event is in the spool, and before the journal.
    await until(() => held.arrived() === 1, "the first life fetching the file");
    first.kill();
    expect(await first.exited).toBe(null);
    held.release();
    expect(fake.waitingCount()).toBe(0);

    const second = startDaemonProcess(configFile);
    children.push(second);
    await until(() => answers().length === 1, "the answer, from the next life's spool");
    fake.direct(alice, "and after");
    await until(() => fake.sent(alice.uuid).some((m) => m.text.includes("and after")), "the next answer");
    expect(answers()).toHaveLength(1);
  } finally {
    for (const c of children) c.kill();
    delete process.env.BRIDGE_TEST_KEY;
    dir.remove();
  }
});
