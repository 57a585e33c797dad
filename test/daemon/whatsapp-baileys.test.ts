/**
 * The adapter driving the real Baileys socket (`makeWASocket`) against a local
 * WebSocket server that accepts and then drops every connection: the real
 * library's close events, event buffer and `end()` go through the adapter's
 * reconnect logic. The server counts how many connections are open at once.
 */
import { testSink } from "../fakes/sink.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { makeWASocket } from "@whiskeysockets/baileys";
import { pino } from "pino";
import { expect, it, onTestFinished, vi } from "vitest";
import { WebSocketServer } from "ws";
import { createWhatsAppAdapter, RECONNECT_BACKOFF, type SocketFactory } from "../../daemon/adapters/whatsapp/index.js";
import { backoffDelay } from "../../shared/backoff.js";
import { daemonConfigSchema } from "../../daemon/config/schema.js";
import type { AdapterStatusEvent } from "../../daemon/vocabulary/adapter.js";
import { createManualClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";

/** The longest reconnect delay after `failures` failed connects in a row: the backoff with its jitter at the top. */
const backoffCeiling = (failures: number): number => backoffDelay(failures + 1, RECONNECT_BACKOFF, { bytes: (n) => Buffer.alloc(n), float: () => 1 });

async function droppingServer() {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const stats = { total: 0, open: 0, maxOpen: 0 };
  wss.on("connection", (ws) => {
    stats.total++;
    stats.open++;
    stats.maxOpen = Math.max(stats.maxOpen, stats.open);
    ws.on("close", () => void stats.open--);
    // Drop it once Baileys has started its handshake (its first frame), as a flaky network would.
    ws.once("message", () => ws.close());
  });
  const { port } = wss.address() as { port: number };
  onTestFinished(() => new Promise<void>((resolve) => wss.close(() => resolve())));
  return { url: `ws://127.0.0.1:${port}/ws/chat`, stats };
}

it("reconnects the real Baileys socket with backoff, one connection at a time, and stops cleanly", async () => {
  const server = await droppingServer();
  const dataDir = mkdtempSync(join(tmpdir(), "wa-baileys-"));
  onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }));
  const cfg = daemonConfigSchema.parse({
    service: { apiKey: "svc_org_test" },
    dataDir,
    channels: [{ type: "whatsapp", id: "real" }],
  });
  const channel = cfg.channels[0];
  if (channel?.type !== "whatsapp") throw new Error("expected a whatsapp channel");

  const clock = createManualClock();
  const statuses: AdapterStatusEvent[] = [];
  let made = 0;
  // The real makeWASocket, pointed at the local server instead of WhatsApp.
  const factory: SocketFactory = (config) => {
    made++;
    return makeWASocket({ ...config, waWebSocketUrl: server.url, connectTimeoutMs: 5_000 });
  };
  const adapter = createWhatsAppAdapter(
    channel,
    {
      logger: pino({ level: "silent" }),
      state: { get: () => undefined, set: async () => undefined },
      dataDir,
      clock,
      maxAttachmentBytes: 1024,
    },
    {
      socketFactory: factory,
      qrOutput: new Writable({ write: (_c, _e, cb) => cb() }),
      random: seededRandom(7),
    },
  );

  // The first attempt fails; start still resolves and reconnecting goes on in the background.
  await adapter.start(testSink({ status: (e) => void statuses.push(e) }));
  expect(server.stats.total).toBe(1);
  expect(statuses.map((s) => s.state)).toEqual(["starting", "reconnecting"]);
  await vi.waitFor(() => expect(server.stats.open).toBe(0));

  // Nothing happens until the clock says so.
  expect(made).toBe(1);
  clock.advance(backoffCeiling(0));
  await vi.waitFor(() => expect(made).toBe(2));
  await vi.waitFor(() => expect(statuses.map((s) => s.state)).toEqual(["starting", "reconnecting", "reconnecting"]));
  expect(server.stats.total).toBe(2);

  clock.advance(backoffCeiling(1));
  await vi.waitFor(() => expect(made).toBe(3));
  await vi.waitFor(() => expect(server.stats.total).toBe(3));
  await adapter.stop();
  await vi.waitFor(() => expect(server.stats.open).toBe(0));
  clock.advance(60 * 60_000);
  expect(made).toBe(3);
  expect(server.stats.maxOpen).toBe(1);
  expect(statuses.at(-1)?.state).toBe("stopped");
});
