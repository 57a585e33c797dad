/**
 * Queue mode collect across a SIGKILL: the daemon as its own process (the
 * compiled `agent-bridge run`, the terminal chat on its stdin/stdout), killed
 * while the collected turn is out at the service. After the restart the same
 * messages are one turn again, answered once, and the service's conversation
 * holds each of them once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { acceptedCount, startDaemonProcess, until, type DaemonChild, writeDaemonConfig } from "./daemon-process.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service.close();
});

const count = (text: string, part: string) => text.split(part).length - 1;
const COLLECTED = "agent> You said: (3 messages, in the order they were sent:)";

describe("queue mode collect, killed with SIGKILL mid-turn", () => {
  it("answers the collected messages once after a restart, as one turn, each once in the conversation", { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const { configFile, dataDir } = writeDaemonConfig(dir.path, {
      service: { baseUrl: service.url },
      apiKey: service.key,
      instance: service.instanceIds[0]!,
      channels: [{ type: "terminal", id: "terminal" }],
      extra: { queue: { debounceMs: 0, mode: "collect" } },
    });
    const children: DaemonChild[] = [];
    const first = service.hold(811);
    const collected = service.hold(812);
    try {
      const one = startDaemonProcess(configFile);
      children.push(one);
      one.proc.stdin.write("!sleep 811\n");
      await first.started; // the first turn is out at the service
      one.proc.stdin.write("alpha\nbeta\ngamma\n");
      await until(() => acceptedCount(dataDir) >= 4, "the three messages journaled while the first turn runs");
      // The next call (the collected turn) waits at the gateway until the test says so: the daemon dies with it out.
      await service.admin("/_emulator/faults", { target: "gateway", instance_id: service.instanceIds[0], latency_ms: 812, times: 1 });
      first.release();
      await one.waitFor((o) => o.includes("agent> slept 811"), "the first reply");
      await collected.started;
      one.kill();
      expect(await one.exited).toBe(null);
      expect(one.out()).not.toContain("[1] alpha");

      const two = startDaemonProcess(configFile);
      children.push(two);
      await two.waitFor((o) => o.includes("[3] gamma"), "the collected reply after the restart");
      two.proc.stdin.write("!recall\n");
      await two.waitFor((o) => count(o, "agent> ") >= 2, "the conversation as the service holds it");
      two.proc.stdin.end();
      expect(await two.exited).toBe(0);

      const all = `${one.out()}\n${two.out()}`;
      expect(count(all, COLLECTED)).toBe(1);
      for (const t of ["[1] alpha", "[2] beta", "[3] gamma"]) expect(count(two.out(), t)).toBe(2); // the reply, and !recall's one input
      const chain = two.out().slice(two.out().lastIndexOf("agent> "));
      expect(count(chain, "!sleep 811")).toBe(1);
      expect(count(chain, "[1] alpha")).toBe(1);
      expect(`${one.err()}${two.err()}`).not.toContain(service.key);
    } finally {
      first.release();
      collected.release();
      for (const c of children) c.kill();
      delete process.env.BRIDGE_TEST_KEY;
      dir.remove();
    }
  });
});
