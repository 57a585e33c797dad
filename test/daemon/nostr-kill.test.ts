/**
 * Nostr under the delivery contract: the compiled daemon as its own process,
 * a fake relay and the emulator in this one. The relay hands the bot a
 * person's gift wrap and the daemon is SIGKILLed that very moment; the next
 * life's subscription looks back (gift wraps are dated up to two days early),
 * gets the wrap again and answers it exactly once.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { fileKey } from "../../daemon/adapters/nostr/keys.js";
import { createFakeRelay, createPerson } from "../fakes/nostr.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { acceptedCount, startDaemonProcess, until, writeDaemonConfig, type DaemonChild } from "./daemon-process.js";

let service: Service;
beforeAll(async () => {
  service = await startService({});
  return () => service.close();
});
afterAll(() => {
  delete process.env.BRIDGE_TEST_KEY;
});

it("a message the relay delivered as the daemon was killed is answered once by the next life", { timeout: 60_000 }, async () => {
  const relay = await createFakeRelay({ auth: true });
  const dir = tempDir();
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.url },
    apiKey: service.key,
    instance: service.instanceIds[0] ?? "",
    channels: [{ type: "nostr", id: "ns", relays: [relay.url], access: { mode: "open" } }],
  });
  // The key the daemon generates on first start, made here first so the person knows whom to write to.
  const key = await fileKey(join(dataDir, "nostr", "ns", "secret-key"));
  const person = createPerson(key.publicKey);
  const children: DaemonChild[] = [];
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    await until(() => relay.requests().length > 0 && relay.connections() > 0, "the first life's subscription");
    let killed = false;
    relay.onDeliver(() => {
      if (killed) return;
      killed = true;
      first.kill();
    });
    // The first REQ came before authentication and was CLOSED; wait for the one that was let in.
    await until(() => relay.requests().length >= 2, "the authenticated subscription");
    await person.dm17("hello across a kill", [relay.url]);
    expect(await first.exited).toBe(null);
    expect(killed).toBe(true);

    const second = startDaemonProcess(configFile);
    children.push(second);
    const journal = () => readFileSync(join(dataDir, "journal.jsonl"), "utf8");
    await until(() => person.read(relay.events()).length >= 1 && journal().includes('{"t":"done"'), "the answer");
    expect(acceptedCount(dataDir)).toBe(1);
    expect(person.read(relay.events())).toHaveLength(1);
    const logs = `${first.out()}${first.err()}${second.out()}${second.err()}`;
    expect(logs).not.toContain(key.secretHex);
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    person.close();
    await relay.close();
    dir.remove();
  }
});
