/**
 * WhatsApp channel (Baileys): `createWhatsAppAdapter(config, deps, options)`
 * wires the parts into the core's `ChatAdapter`:
 *  - connection.ts  start / reconnect / stop, one socket at a time (close codes: disconnect.ts);
 *  - hand-over.ts   socket messages -> inbound.ts#translateMessage -> the core, serially,
 *                   refused ones kept for the next open (replay.ts), files fetched by files.ts;
 *  - outbound.ts    render, send, typing.
 * Tests inject a fake `socketFactory` and `mediaDownloader`, a manual clock
 * (in deps) and a seeded `random`.
 */
import type { Writable } from "node:stream";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import type { AdapterDeps, AdapterStatusEvent, ChatAdapter } from "../../vocabulary/adapter.js";
import type { BackoffPolicy } from "../../../shared/backoff.js";
import type { WhatsAppChannelConfig } from "./config.js";
import { folderAuth, recordsAuth } from "./auth.js";
import { RECONNECT_BACKOFF, WhatsAppConnection } from "./connection.js";
import { describeError } from "./errors.js";
import { PLATFORM } from "./inbound.js";
import { WhatsAppHandOver } from "./hand-over.js";
import { WHATSAPP_FILE_LIMITS, WHATSAPP_LIMITS, WhatsAppOutbound } from "./outbound.js";
import { baileysMediaDownloader, baileysSocketFactory, type MediaDownloader, type SocketFactory } from "./socket.js";

export { RECONNECT_BACKOFF } from "./connection.js";
export { WhatsAppAdapterError, type WhatsAppAdapterErrorInit, type WhatsAppErrorStatus } from "./errors.js";
export { WHATSAPP_LIMITS } from "./outbound.js";
// The platform fake (test/fakes/baileys-socket.ts) implements these.
export type { MediaDownloader, SocketFactory, WhatsAppSocket, WhatsAppSocketConfig, WhatsAppSocketEvents } from "./socket.js";

export interface WhatsAppAdapterOptions {
  /** Makes the Baileys socket. Default: Baileys' `makeWASocket`. */
  socketFactory?: SocketFactory;
  /** Fetches a message's file. Default: Baileys' `downloadMediaMessage` (as a stream). */
  mediaDownloader?: MediaDownloader;
  /** Where QR codes and re-link requests are drawn. Default: stdout. */
  qrOutput?: Writable;
  /** Jitter for reconnect delays. Default: cryptographic randomness. */
  random?: Random;
  /** Reconnect delays. Default: `RECONNECT_BACKOFF` (1 s doubling up to 60 s, half of it jitter). */
  backoff?: BackoffPolicy;
  /** How long `send` waits for a dropped connection to come back before it rejects, ms. Default: 30 000. */
  sendWaitMs?: number;
  /** Mark messages read once the core has journaled them. Default: the channel's `readReceipts` (true). */
  readReceipts?: boolean;
}

export function createWhatsAppAdapter(config: WhatsAppChannelConfig, deps: AdapterDeps, options: WhatsAppAdapterOptions = {}): ChatAdapter {
  const accountId = config.id;
  const log = deps.logger.child({ platform: PLATFORM, accountId });
  // Baileys is chatty below warn, and its debug output can carry key material.
  const baileysLog = log.child({ component: "baileys" }, { level: log.levelVal > log.levels.values.warn! ? log.level : "warn" });
  // The sink is set by `start` (the hand-over's `begin`), before the first socket: until then status news only goes to the log.
  const status = (event: AdapterStatusEvent) => {
    log.debug({ state: event.state, detail: event.detail }, "whatsapp status");
    try {
      handOver.status(event);
    } catch (err) {
      log.warn({ err: describeError(err) }, "status sink threw");
    }
  };

  const connection: WhatsAppConnection = new WhatsAppConnection({
    accountId,
    auth: deps.credentials ? recordsAuth(deps.credentials) : folderAuth(config.authDir ?? `${deps.dataDir}/whatsapp/${accountId}`),
    printQr: config.printQr,
    qrOutput: options.qrOutput ?? process.stdout,
    factory: options.socketFactory ?? baileysSocketFactory,
    clock: deps.clock,
    random: options.random ?? cryptoRandom,
    backoff: options.backoff ?? RECONNECT_BACKOFF,
    sendWaitMs: options.sendWaitMs ?? 30_000,
    log,
    baileysLog,
    status,
    sentMessage: (key) => outbound.sentMessage(key),
    onMessages: (socket, messages) => handOver.take(socket, messages, connection.selfJids()),
    onOpen: (socket) => handOver.replay(socket, connection.selfJids()),
  });
  const outbound = new WhatsAppOutbound({ log, waitForOpen: () => connection.waitForOpen(), openSocket: () => connection.openSocket() });
  const handOver = new WhatsAppHandOver({
    accountId,
    clock: deps.clock,
    state: deps.state,
    readReceipts: options.readReceipts ?? config.readReceipts,
    outbound,
    openSocket: () => connection.openSocket(),
    downloader: options.mediaDownloader ?? baileysMediaDownloader,
    maxAttachmentBytes: deps.maxAttachmentBytes,
    log,
    baileysLog,
  });

  return {
    platform: PLATFORM,
    accountId,
    limits: WHATSAPP_LIMITS,
    // Baileys hands a message over once: what the core cannot take is told, never left for a redelivery.
    redelivers: false,
    measure: (text, format) => outbound.measure(text, format),
    start: (next) =>
      connection.start(() => {
        handOver.begin(next);
      }),
    stop: () => connection.stop(() => handOver.drained()),
    link: { forget: () => connection.forgetLink() },
    send: (target, text, sendOptions) => outbound.send(target, text, sendOptions),
    sendTyping: (target) => outbound.sendTyping(target),
    files: { limits: WHATSAPP_FILE_LIMITS, send: (target, file) => outbound.sendFile(target, file) },
    reactions: { react: (target, messageId, emoji, options) => outbound.react(target, messageId, emoji, options) },
  };
}
