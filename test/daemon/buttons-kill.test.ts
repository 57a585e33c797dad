/**
 * A question answered, then kill -9 before the agent's answer to it came: the
 * daemon as its own process (compiled), the terminal chat as the platform, the
 * emulator in this process. After the restart the answer reaches the agent
 * once and its reply is shown once; the question stays answered.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { acceptedCount, startDaemonProcess, until, type DaemonChild, writeDaemonConfig } from "./daemon-process.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service.close();
});

const count = (text: string, pattern: RegExp) => text.split("\n").filter((l) => pattern.test(l)).length;

it("a typed answer journaled, kill -9 with its call out: after the restart the agent gets it once", { timeout: 60_000 }, async () => {
  const dir = tempDir();
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.url },
    apiKey: service.key,
    instance: service.instanceIds[0]!,
    channels: [{ type: "terminal", id: "terminal", streaming: "off" }],
    extra: { buttons: { tools: ["choice"] } },
  });
  const children: DaemonChild[] = [];
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    first.proc.stdin.write("!ask Deploy where? | staging | production\n");
    await first.waitFor((o) => o.includes("2. production"), "the question");
    // The answer's call is held at the service: the daemon dies with it out.
    const held = service.hold(777);
    await service.admin("/_emulator/faults", { target: "gateway", instance_id: service.instanceIds[0], latency_ms: 777, times: 1 });
    first.proc.stdin.write("2\n");
    await until(() => acceptedCount(dataDir) >= 2, "the answer journaled");
    await held.started;
    first.proc.kill("SIGKILL");
    expect(await first.exited).toBe(null);
    held.release();

    const second = startDaemonProcess(configFile);
    children.push(second);
    await second.waitFor((o) => /returned: production/.test(o), "the agent's answer after the restart");
    second.proc.stdin.write("1\n");
    await second.waitFor((o) => o.includes("You said: 1"), "a later '1' as a plain message");
    second.proc.stdin.end();
    expect(await second.exited).toBe(0);
    const all = `${first.out()}\n${second.out()}`;
    expect(first.out()).not.toMatch(/returned: production/);
    expect(count(all, /returned: production/)).toBe(1);
    expect(count(all, /returned: staging/)).toBe(0);
  } finally {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill("SIGKILL");
    delete process.env.BRIDGE_TEST_KEY;
  }
});
