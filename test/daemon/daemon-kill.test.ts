/**
 * The daemon as its own process (`agent-bridge run --config ...`, compiled), the
 * terminal chat on its stdin/stdout as the platform, the emulator in this
 * process: SIGKILL with turns pending, restart, and every message is answered
 * exactly once across both lives.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { acceptedCount, occurrences, startDaemonProcess, until, type DaemonChild, writeDaemonConfig } from "./daemon-process.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service.close();
});

type Child = DaemonChild;
const startDaemon = startDaemonProcess;

describe("daemon process killed with SIGKILL", () => {
  it("answers every pending turn exactly once after a restart", { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const { configFile, dataDir } = writeDaemonConfig(dir.path, {
      service: { baseUrl: service.url },
      apiKey: service.key,
      instance: service.instanceIds[0]!,
      channels: [{ type: "terminal", id: "terminal" }],
    });
    const children: Child[] = [];
    try {
      const first = startDaemon(configFile);
      children.push(first);
      first.proc.stdin.write("before the crash\n");
      await first.waitFor((o) => o.includes("agent> You said: before the crash"), "the first reply");
      // Held, not slept: on a loaded machine the checks below may take longer than any real sleep.
      const held = service.hold(800);
      first.proc.stdin.write("!sleep 800\nsecond\nthird\n");
      // All three journaled, and the sleeping turn under way (its typing line is out): now die.
      await until(() => acceptedCount(dataDir) >= 4, "three more accepted messages");
      // The first turn answered within queue.typingDelayMs, without a typing line; the held one shows it.
      await first.waitFor((o) => o.includes("agent is typing…"), "the sleeping turn to start");
      await held.started; // the fake model holds the turn: the daemon dies with its call out
      first.proc.kill("SIGKILL");
      expect(await first.exited).toBe(null);
      held.release(); // the next life's try of that turn ends at once

      const second = startDaemon(configFile);
      children.push(second);
      await second.waitFor((o) => o.includes("agent> You said: third"), "the resumed replies");
      second.proc.stdin.end(); // end of input: it answers what is pending, then exits by itself
      expect(await second.exited).toBe(0);

      // SIGTERM while a turn is in flight: it finishes, then the process exits 0.
      const third = startDaemon(configFile);
      children.push(third);
      const inFlight = service.nextSleep(300);
      third.proc.stdin.write("!sleep 300\n");
      await inFlight; // the call is out at the service, its reply not yet
      expect(third.out()).not.toContain("slept 300");
      // To the daemon itself (its pid is in the lock file), as a service manager would.
      process.kill(Number(readFileSync(join(dataDir, "daemon.lock"), "utf8")), "SIGTERM");
      expect(await third.exited).toBe(0);
      expect(third.out()).toContain("agent> slept 300");

      const all = `${first.out()}\n${second.out()}`;
      expect(first.out()).not.toContain("agent> slept 800"); // it really died mid-turn
      expect(occurrences(all, "agent> You said: before the crash")).toBe(1);
      expect(occurrences(all, "agent> slept 800")).toBe(1);
      expect(occurrences(all, "agent> You said: second")).toBe(1);
      expect(occurrences(all, "agent> You said: third")).toBe(1);
      const order = ["agent> slept 800", "agent> You said: second", "agent> You said: third"].map((l) => second.out().indexOf(l));
      expect(order).toEqual([...order].sort((a, b) => a - b));
      expect(`${first.err()}${second.err()}`).not.toContain(service.key);
    } finally {
      for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill("SIGKILL");
      delete process.env.BRIDGE_TEST_KEY;
      dir.remove();
    }
  });
});
