/**
 * What a person sees of the daemon in the foreground: Ctrl+C says what it
 * waits for, a second Ctrl+C quits at once with the turn still journaled;
 * log lines as chat notices; the startup check's problems, once each; and
 * `npm start` serving the operator's console, /healthz and /metrics where it says.
 */
import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { systemClock } from "../../shared/clock.js";
import { createTerminalAdapter } from "../../daemon/adapters/terminal/index.js";
import { runInForeground, type NoticeBoard } from "../../daemon/cli.js";
import { parseConfig } from "../../daemon/config/load.js";
import { createLogger, formatNotice } from "../../daemon/ops/logger.js";
import { openStore } from "../../daemon/state/store.js";
import { runAgentBridge, stopCli } from "../helpers/cli.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service.close());

function capture() {
  const lines: string[] = [];
  const board: NoticeBoard = { show: (t) => lines.push(t), attach: () => undefined };
  return { lines, board };
}

/** A logger whose JSON lines land in `lines`. */
function memoryLogger(level: "warn" | "info" = "warn") {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level, destination: { write: (l: string) => void lines.push(l) } }) };
}

describe("Ctrl+C in the foreground", () => {
  it("the first says what it waits for; the second quits at once and the turn stays journaled", async () => {
    const dir = tempDir();
    const config = parseConfig(
      {
        service: { baseUrl: service.url, apiKey: service.key },
        dataDir: dir.path,
        logLevel: "silent",
        ops: { port: null },
        queue: { debounceMs: 0 },
        routes: [{ match: {}, instance: service.instanceIds[0] }],
        channels: [{ type: "terminal" }],
      },
      {},
    );
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    let out = "";
    stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
    const { lines, board } = capture();
    const signals = new EventEmitter();
    let now = 1_000_000;
    const exited = runInForeground(config, { stdin, stdout, board, signals, now: () => now, startupCheck: false, logger: createLogger({ level: "silent" }) });

    stdin.write("!sleep 20000\n");
    await vi.waitFor(() => expect(out).toContain("agent is typing…"), { timeout: 10_000 });
    signals.emit("SIGINT");
    expect(lines).toEqual([
      "(stopping: waiting up to 10 s for 1 reply in flight; Ctrl+C again quits now, and unanswered messages are answered at the next start)",
    ]);
    // npm passes the same Ctrl+C on: a copy within moments is not a second one.
    signals.emit("SIGINT");
    expect(lines).toHaveLength(1);

    now += 1_000;
    const before = systemClock.now();
    signals.emit("SIGINT");
    expect(await exited).toBe(130);
    // Well inside the 10 s grace and the 20 s the turn sleeps: it did not wait for either.
    expect(systemClock.now() - before).toBeLessThan(9_000);
    expect(lines[1]).toBe("(quitting now: unanswered messages stay saved for the next start)");

    const store = await openStore({ dataDir: dir.path, clock: systemClock });
    try {
      const pending = store.pending();
      expect(pending).toHaveLength(1);
      expect(JSON.stringify(pending[0])).toContain("!sleep 20000");
    } finally {
      await store.close();
      dir.remove();
    }
  });
});

describe("the startup check", () => {
  it("logs each problem once, saying what to fix, and the daemon still runs", async () => {
    const dir = tempDir();
    const ghost = "00000000-0000-4000-8000-000000000000";
    const config = parseConfig(
      {
        service: { baseUrl: service.url, apiKey: service.key },
        dataDir: dir.path,
        logLevel: "warn",
        ops: { port: null },
        attachments: { enabled: false },
        routes: [
          { match: { chatType: "group" }, instance: ghost },
          { match: {}, instance: service.instanceIds[0] },
        ],
        channels: [{ type: "terminal" }],
      },
      {},
    );
    const stdin = new PassThrough();
    const { logger, lines } = memoryLogger();
    const signals = new EventEmitter();
    const exited = runInForeground(config, { stdin, stdout: new PassThrough(), board: capture().board, signals, logger });
    await vi.waitFor(() => expect(lines.some((l) => l.includes("config check"))).toBe(true), { timeout: 10_000 });
    const problems = lines.map((l) => JSON.parse(l) as { level: number; msg: string; check?: string }).filter((l) => l.msg.startsWith("config check"));
    expect(problems).toEqual([
      {
        level: 50,
        check: `instance ${ghost}`,
        msg: `config check: instance ${ghost}: not found on the service (used by routes[0]). Fix: correct the instance id in routes[0], or create the instance (GET /v1/instances lists the organization's instances)`,
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        pid: process.pid,
        hostname: expect.any(String),
      },
    ]);
    stdin.end();
    expect(await exited).toBe(0);
    dir.remove();
  });
});

describe("log lines in the terminal chat", () => {
  it("become one short notice in the chat's own style, secrets scrubbed before", () => {
    const { logger, lines } = memoryLogger();
    const token = "123456:SECRETSECRETSECRET";
    const scrubbing = createLogger({ level: "warn", secrets: [token], destination: { write: (l: string) => void lines.push(l) } });
    logger.warn({ platform: "telegram", detail: "polling stopped" }, "adapter did not stop cleanly");
    scrubbing.error({ err: `bad token ${token}` }, "adapter failed to start");
    expect(lines.map(formatNotice)).toEqual([
      "(warning: adapter did not stop cleanly; platform: telegram, detail: polling stopped)",
      "(error: adapter failed to start; err: bad token [redacted])",
    ]);
    expect(formatNotice(JSON.stringify({ level: 40, msg: "x".repeat(400) })).length).toBeLessThanOrEqual(242);
  });

  it("print above the prompt on a terminal: the line is cleared, the notice written, the prompt and typed text restored", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let out = "";
    output.setEncoding("utf8").on("data", (c: string) => (out += c));
    const config = parseConfig({ service: { apiKey: service.key }, channels: [{ type: "terminal" }] }, {}).channels[0]!;
    if (config.type !== "terminal") throw new Error("expected the terminal channel");
    const chat = createTerminalAdapter({ input, output, config, terminal: true, onInterrupt: () => undefined });
    await chat.start({
      accept: async () => ({ status: "accepted", acknowledge: true }),
      admit: () => ({ allowed: true, attachments: [] }),
      status: () => undefined,
    });
    input.write("half typ");
    await vi.waitFor(() => expect(out).toContain("half typ"));
    const before = out.length;
    chat.notice("(warning: adapter did not stop cleanly)");
    const written = out.slice(before);
    // Erase the prompt line, write the notice on its own line, then prompt again with the half-typed text.
    expect(written.startsWith("\u001b[2K\u001b[1G(warning: adapter did not stop cleanly)\n")).toBe(true);
    expect(written).toMatch(/you> .*half typ/);
    input.end();
    await chat.stop();
  });
});

describe("agent-bridge start", () => {
  it("serves the operator's console, /healthz and /metrics on a free port and prints where", async () => {
    const dir = tempDir();
    const run = runAgentBridge(["start", "--data-dir", dir.path], { stdin: "pipe" });
    try {
      await vi.waitFor(() => expect(run.stdout()).toMatch(/ops\s+http:\/\/127\.0\.0\.1:\d+\/healthz/), { timeout: 20_000, interval: 20 });
      const base = /ops\s+(http:\/\/127\.0\.0\.1:\d+)\/healthz\s+\1\/metrics/.exec(run.stdout())![1]!;
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ healthy: true });
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toContain("# TYPE");
      // The console's line comes first, on the same server.
      const consoleUrl = /console\s+(http:\/\/127\.0\.0\.1:\d+\/ui\/)\s/.exec(run.stdout())?.[1];
      expect(consoleUrl, run.stdout()).toBe(`${base}/ui/`);
      const page = await fetch(consoleUrl!);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("/ui/assets/app.js");
      run.child.stdin!.end();
      expect(await run.exited).toBe(0);
    } finally {
      await stopCli(run);
      dir.remove();
    }
  });
});
