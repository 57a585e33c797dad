/**
 * Reloading a running daemon process (the compiled `agent-bridge run`, its
 * terminal chat on stdin/stdout) the two ways an operator does: SIGHUP to its
 * pid, and `agent-bridge reload --config FILE`, which asks it through its
 * data directory and prints what came of it. `/queue` shows the top-level
 * `queue.mode` the daemon runs with, so the change is seen from the chat.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAgentBridge } from "../helpers/cli.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { startDaemonProcess, until, writeDaemonConfig, type DaemonChild } from "./daemon-process.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service.close();
});

const count = (text: string, part: string) => text.split(part).length - 1;

describe("reloading a daemon process", () => {
  it("takes a new file on SIGHUP and on `agent-bridge reload`, and refuses a bad one, naming its problems", { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const { configFile } = writeDaemonConfig(dir.path, {
      service: { baseUrl: service.url },
      apiKey: service.key,
      instance: service.instanceIds[0]!,
      channels: [{ type: "terminal", id: "terminal" }],
      extra: { logLevel: "info" },
    });
    const original = JSON.parse(readFileSync(configFile, "utf8")) as Record<string, unknown>;
    const withMode = (mode: string) => writeFileSync(configFile, JSON.stringify({ ...original, queue: { debounceMs: 0, mode } }));
    let child: DaemonChild | undefined;
    try {
      child = startDaemonProcess(configFile);
      const daemon = child;
      const askMode = async (mode: string) => {
        const before = count(daemon.out(), "Queue mode: ");
        daemon.proc.stdin.write("/queue\n");
        await daemon.waitFor((o) => count(o, "Queue mode: ") > before, "the answer to /queue");
        expect(daemon.out().slice(daemon.out().lastIndexOf("Queue mode: "))).toMatch(new RegExp(`^Queue mode: ${mode} \\(the bridge's setting\\)`));
      };
      await askMode("followup");

      withMode("collect");
      daemon.proc.kill("SIGHUP");
      await until(() => count(daemon.err(), "config reloaded: it applies from the next message") === 1, "the reload's log line");
      await askMode("collect");

      withMode("interrupt");
      const reload = runAgentBridge(["reload", "--config", configFile]);
      expect(await reload.exited).toBe(0);
      expect(reload.stdout()).toMatch(/^Config reloaded \(hash [0-9a-f]{16}\): it applies from the next message\./);
      await askMode("interrupt");

      writeFileSync(configFile, JSON.stringify({ ...original, queue: { debounceMs: 0, mode: "steer" } }));
      const refused = runAgentBridge(["reload", "--config", configFile]);
      expect(await refused.exited).toBe(1);
      expect(refused.stderr()).toMatch(/not reloaded, it has problems/);
      expect(refused.stderr()).toMatch(/queue\.mode/);
      daemon.proc.kill("SIGHUP");
      await until(() => daemon.err().includes("config reload refused"), "the refusal's log line");
      await askMode("interrupt");
      expect(`${daemon.err()}${reload.stdout()}${refused.stderr()}`).not.toContain(service.key);
      daemon.proc.stdin.end();
      expect(await daemon.exited).toBe(0);
    } finally {
      child?.kill();
      delete process.env.BRIDGE_TEST_KEY;
      dir.remove();
    }
  });

  it("with watchConfig, reloads when the file is saved, and refuses a broken save", { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const { configFile } = writeDaemonConfig(dir.path, {
      service: { baseUrl: service.url },
      apiKey: service.key,
      instance: service.instanceIds[0]!,
      channels: [{ type: "terminal", id: "terminal" }],
      extra: { logLevel: "info", watchConfig: true },
    });
    const original = JSON.parse(readFileSync(configFile, "utf8")) as Record<string, unknown>;
    let child: DaemonChild | undefined;
    try {
      child = startDaemonProcess(configFile);
      const daemon = child;
      await until(() => daemon.err().includes("daemon started"), "the start");
      writeFileSync(configFile, JSON.stringify({ ...original, queue: { debounceMs: 0, mode: "collect" } }));
      await until(() => daemon.err().includes("config reloaded: it applies from the next message"), "the reload after the save");
      daemon.proc.stdin.write("/queue\n");
      await daemon.waitFor((o) => o.includes("Queue mode: collect (the bridge's setting)"), "the new mode");
      writeFileSync(configFile, "{ broken");
      await until(() => daemon.err().includes("config reload refused"), "the refusal after the broken save");
      daemon.proc.stdin.end();
      expect(await daemon.exited).toBe(0);
    } finally {
      child?.kill();
      delete process.env.BRIDGE_TEST_KEY;
      dir.remove();
    }
  });
});
