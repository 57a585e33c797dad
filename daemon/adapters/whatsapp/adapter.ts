/**
 * WhatsApp over Baileys. The translation is thin (see inbound.ts); the work is
 * the connection lifecycle:
 *  - exactly one socket alive: every new socket is made by `openSocket`,
 *    which first unsubscribes from and ends the previous one, and events of a
 *    socket that is no longer current are ignored;
 *  - 515 (restart required, sent right after pairing) reconnects at once;
 *  - 401 (logged out) stops for good, forgets the link and asks for a new one;
 *  - 403 / 440 (banned, or replaced by another client) stop with "failed",
 *    because reconnecting would only fight the other client;
 *  - anything else reconnects after a jittered, growing delay on `deps.clock`.
 * `start` resolves at the first outcome (open, QR shown, or a failed first
 * attempt that is being retried), so an outage never holds up the daemon.
 *
 * Intake is serial (order kept per chat). Only live ("notify") messages from
 * others are taken; a message is marked read only after `sink.accept`
 * resolved (and only if the sender is admitted), and one the core refused is
 * kept in the adapter state and offered again on the next open, since
 * WhatsApp never delivers a message twice.
 */
import type { Writable } from "node:stream";
import { BufferJSON, DisconnectReason, type BaileysEventMap, type proto } from "@whiskeysockets/baileys";
import qrcodeTerminal from "qrcode-terminal";
import type { Timer } from "../../../shared/clock.js";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import { formatBytes } from "../../../shared/util/format-bytes.js";
import type { WhatsAppChannelConfig } from "./platform.js";
import {
  SendError,
  type AdapterDeps,
  type AdapterLimits,
  type AdapterStatusEvent,
  type AdmissionAnswer,
  type ChatAdapter,
  type ChatTarget,
  type DroppedAttachment,
  type InboundAttachment,
  type InboundMessage,
  type InboundSink,
  type SendOptions,
  type SendReceipt,
  type TextFormat,
} from "../../core/adapter.js";
import { clearAuthDir, openAuthStore, type AuthStore } from "./auth.js";
import { DEFAULT_BACKOFF, reconnectDelay, type BackoffPolicy } from "./backoff.js";
import { markdownToWhatsApp } from "./format.js";
import { toSendJid } from "./ids.js";
import { translateMessage, type InboundDraft, type SelfJids } from "./inbound.js";
import { baileysMediaDownloader, baileysSocketFactory, type MediaDownloader, type SocketFactory, type WAMessage, type WhatsAppSocket } from "./socket.js";

export const WHATSAPP_LIMITS: AdapterLimits = { maxMessageLength: 4000, typingRefreshMs: 10_000 };

export interface WhatsAppAdapterOptions {
  socketFactory?: SocketFactory;
  /** Where QR codes and re-link requests are drawn. Default: stdout. */
  qrOutput?: Writable;
  /** Jitter for reconnect delays. */
  random?: Random;
  mediaDownloader?: MediaDownloader;
  backoff?: BackoffPolicy;
  /** How long `send` waits for a dropped connection to come back before it rejects. */
  sendWaitMs?: number;
  /** Mark messages read once the core has journaled them. Default true. */
  readReceipts?: boolean;
}

export type WhatsAppErrorStatus = "not_connected" | "stopped" | "logged_out" | "failed" | "send_failed" | "auth_failed";

/**
 * Errors are values with a status the core can branch on; as the core's
 * `SendError`, a logged-out or failed account is permanent (pairing again is
 * a person's job), a connection that is down for now is not.
 */
export class WhatsAppAdapterError extends SendError {
  /** The error's kind ("not_connected", "logged_out", ...). */
  readonly reason: WhatsAppErrorStatus;
  constructor(status: WhatsAppErrorStatus, message: string) {
    super(message, { permanent: status === "logged_out" || status === "auth_failed" || status === "failed" });
    this.reason = status;
  }
}

type Phase = "idle" | "running" | "stopped" | "logged_out" | "failed";

interface Connection {
  socket: WhatsAppSocket;
  unsubscribe: () => void;
  open: boolean;
}

interface OpenWaiter {
  resolve: (socket: WhatsAppSocket) => void;
  reject: (err: Error) => void;
  timer: Timer;
}

const PLATFORM = "whatsapp";
const UNACCEPTED_KEY = "unaccepted";
const MAX_UNACCEPTED = 200;

type IntakeOutcome = "accepted" | "refused" | "skipped";

export function createWhatsAppAdapter(config: WhatsAppChannelConfig, deps: AdapterDeps, options: WhatsAppAdapterOptions = {}): ChatAdapter {
  const accountId = config.id;
  const authDir = config.authDir ?? `${deps.dataDir}/whatsapp/${accountId}`;
  const factory = options.socketFactory ?? baileysSocketFactory;
  const downloader = options.mediaDownloader ?? baileysMediaDownloader;
  const qrOutput = options.qrOutput ?? process.stdout;
  const random = options.random ?? cryptoRandom;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const sendWaitMs = options.sendWaitMs ?? 30_000;
  const readReceipts = options.readReceipts ?? config.readReceipts;
  const { clock } = deps;
  const log = deps.logger.child({ platform: PLATFORM, accountId });
  // Baileys is chatty below warn, and its debug output can carry key material.
  const baileysLog = log.child({ component: "baileys" }, { level: log.levelVal > log.levels.values.warn! ? log.level : "warn" });

  let phase: Phase = "idle";
  let sink: InboundSink | undefined;
  let auth: AuthStore | undefined;
  let conn: Connection | undefined;
  let reconnectTimer: Timer | undefined;
  let attempts = 0;
  let settleStart: ((err?: Error) => void) | undefined;
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;
  let intake: Promise<void> = Promise.resolve();
  const openWaiters = new Set<OpenWaiter>();
  // Baileys asks for sent messages when a recipient's phone requests a retry.
  const sentMessages = new BoundedMap<string, proto.IMessage>(500);
  // Group replies quote the message they answer, so the thread stays readable.
  const receivedMessages = new BoundedMap<string, WAMessage>(500);

  const status = (event: AdapterStatusEvent) => {
    log.debug({ state: event.state, detail: event.detail }, "whatsapp status");
    try {
      sink?.status(event);
    } catch (err) {
      log.warn({ err: describe(err) }, "status sink threw");
    }
  };

  const errorFor = (): WhatsAppAdapterError => {
    switch (phase) {
      case "logged_out":
        return new WhatsAppAdapterError("logged_out", `WhatsApp channel ${accountId} is logged out; link it again`);
      case "failed":
        return new WhatsAppAdapterError("failed", `WhatsApp channel ${accountId} has failed`);
      case "running":
        return new WhatsAppAdapterError("not_connected", `WhatsApp channel ${accountId} is not connected`);
      default:
        return new WhatsAppAdapterError("stopped", `WhatsApp channel ${accountId} is stopped`);
    }
  };

  const rejectOpenWaiters = () => {
    const err = errorFor();
    for (const w of openWaiters) {
      w.timer.cancel();
      w.reject(err);
    }
    openWaiters.clear();
  };

  const selfJids = (): SelfJids => {
    const ids = [conn?.socket.user?.id, conn?.socket.user?.lid, auth?.state.creds.me?.id, auth?.state.creds.me?.lid];
    return ids.filter((id): id is string => Boolean(id));
  };

  /** Unsubscribes from and ends the current socket. Never logs out. */
  const teardown = () => {
    const old = conn;
    conn = undefined;
    if (!old) return;
    old.unsubscribe();
    try {
      void Promise.resolve(old.socket.end(undefined)).catch(() => undefined);
    } catch (err) {
      log.debug({ err: describe(err) }, "ending old socket threw");
    }
  };

  const cancelReconnect = () => {
    reconnectTimer?.cancel();
    reconnectTimer = undefined;
  };

  /** The only place a socket is made. Synchronous, so reconnects cannot overlap. */
  const openSocket = () => {
    cancelReconnect();
    teardown();
    if (phase !== "running" || !auth) return;
    let socket: WhatsAppSocket;
    try {
      socket = factory({
        auth: auth.state,
        logger: baileysLog,
        printQRInTerminal: false,
        // Stay "offline" so the owner's phone keeps its notifications.
        markOnlineOnConnect: false,
        syncFullHistory: false,
        getMessage: async (key) => (key.id ? sentMessages.get(`${key.remoteJid}:${key.id}`) : undefined),
      });
    } catch (err) {
      log.error({ err: describe(err) }, "creating the WhatsApp socket failed");
      scheduleReconnect("socket could not be created");
      settleStart?.();
      return;
    }
    const current: Connection = { socket, unsubscribe: () => undefined, open: false };
    conn = current;
    current.unsubscribe = socket.ev.process((events) => {
      try {
        onEvents(current, events);
      } catch (err) {
        log.error({ err: describe(err) }, "handling WhatsApp events failed");
      }
    });
  };

  const scheduleReconnect = (reason: string) => {
    if (phase !== "running" || reconnectTimer) return;
    const delay = reconnectDelay(attempts++, random, backoff);
    status({ state: "reconnecting", detail: `${reason}; retrying in ${Math.ceil(delay / 1000)} s` });
    reconnectTimer = clock.setTimeout(() => {
      reconnectTimer = undefined;
      openSocket();
    }, delay);
  };

  const onEvents = (current: Connection, events: Partial<BaileysEventMap>) => {
    if (conn !== current) return; // a replaced socket's late events
    if (events["creds.update"]) {
      auth?.saveCreds().catch((err: unknown) => log.error({ err: describe(err) }, "saving WhatsApp credentials failed"));
    }
    // Connection news first: an "open" replays refused messages ahead of new ones.
    const update = events["connection.update"];
    if (update) onConnectionUpdate(current, update);
    const upsert = events["messages.upsert"];
    if (upsert) {
      // Only "notify" is live traffic; "append" is history or our own sends.
      if (upsert.type === "notify") enqueueIntake(current.socket, upsert.messages);
      else log.debug({ type: upsert.type, count: upsert.messages.length }, "ignored non-live messages");
    }
    const history = events["messaging-history.set"];
    if (history) log.debug({ count: history.messages.length }, "ignored history sync");
  };

  const onConnectionUpdate = (current: Connection, update: Partial<BaileysEventMap["connection.update"]>) => {
    if (update.qr) {
      if (config.printQr) drawQr(update.qr);
      status({
        state: "pairing",
        detail: config.printQr ? "scan the QR code with WhatsApp > Linked devices" : "waiting for a link (printQr is off)",
      });
      settleStart?.();
    }
    if (update.connection === "open") {
      current.open = true;
      attempts = 0;
      status({ state: "connected" });
      if (unaccepted.length) enqueueIntake(current.socket, [...unaccepted]);
      settleStart?.();
      for (const w of openWaiters) {
        w.timer.cancel();
        w.resolve(current.socket);
      }
      openWaiters.clear();
    }
    if (update.connection === "close") onClose(update.lastDisconnect?.error);
  };

  const onClose = (error: unknown) => {
    const code = disconnectCode(error);
    teardown();
    if (phase !== "running") return;
    if (code === DisconnectReason.loggedOut) {
      onLoggedOut().catch((err: unknown) => log.error({ err: describe(err) }, "handling the WhatsApp logout failed"));
      return;
    }
    if (code === DisconnectReason.restartRequired) {
      // Sent right after pairing: the new credentials need a fresh connection, now.
      status({ state: "reconnecting", detail: "restart required after linking" });
      openSocket();
      return;
    }
    if (code === DisconnectReason.connectionReplaced || code === DisconnectReason.forbidden) {
      const detail =
        code === DisconnectReason.connectionReplaced
          ? "another client took over this WhatsApp session (a second daemon on the same auth dir?)"
          : "WhatsApp refused this account (403)";
      fail(detail);
      return;
    }
    scheduleReconnect(`connection closed (${code ?? describe(error)})`);
    // start() does not hang on an outage: reconnecting goes on in the background.
    settleStart?.();
  };

  const fail = (detail: string) => {
    phase = "failed";
    cancelReconnect();
    teardown();
    log.error({ detail }, "WhatsApp channel failed");
    status({ state: "failed", detail });
    settleStart?.(new WhatsAppAdapterError("failed", detail));
    rejectOpenWaiters();
  };

  const onLoggedOut = async () => {
    phase = "logged_out";
    cancelReconnect();
    teardown();
    rejectOpenWaiters();
    const store = auth;
    auth = undefined;
    // A creds write still in flight would put a file back after the clear.
    await store?.flush();
    try {
      await clearAuthDir(authDir);
    } catch (err) {
      log.error({ err: describe(err) }, "clearing the WhatsApp auth folder failed");
    }
    const ask = `WhatsApp channel "${accountId}" was logged out (unlinked on the phone). Its link was cleared; restart the daemon (or this channel) to show a new QR code and link it again.`;
    log.warn(ask);
    qrOutput.write(`\n${ask}\n`);
    status({ state: "logged_out", detail: "link cleared; restart to link again by QR code" });
    settleStart?.();
  };

  const drawQr = (qr: string) => {
    // The QR carries pairing secrets: it goes to the terminal only, never to the log.
    qrcodeTerminal.generate(qr, { small: true }, (art) => {
      qrOutput.write(`\nWhatsApp "${accountId}": scan with WhatsApp > Linked devices > Link a device\n${art}\n`);
    });
  };

  /**
   * Messages the core refused (journal failing, daemon stopping). WhatsApp
   * never delivers a message twice, so they are kept in the adapter's durable
   * state and offered again on the next open, here or after a restart.
   */
  const retryKey = (m: WAMessage) => `${m.key.remoteJid ?? ""}:${m.key.id ?? ""}`;
  const loadUnaccepted = (): WAMessage[] => {
    const raw = deps.state.get<unknown>(UNACCEPTED_KEY);
    if (!Array.isArray(raw)) return [];
    try {
      return JSON.parse(JSON.stringify(raw), BufferJSON.reviver) as WAMessage[];
    } catch {
      return [];
    }
  };
  let unaccepted: WAMessage[] = [];
  const saveUnaccepted = async () => {
    const value: unknown = unaccepted.length ? JSON.parse(JSON.stringify(unaccepted, BufferJSON.replacer)) : undefined;
    try {
      await deps.state.set(UNACCEPTED_KEY, value);
    } catch (err) {
      log.error({ err: describe(err) }, "saving refused WhatsApp messages failed");
    }
  };
  const noteOutcome = async (msg: WAMessage, outcome: IntakeOutcome) => {
    const key = retryKey(msg);
    const at = unaccepted.findIndex((m) => retryKey(m) === key);
    if (outcome === "refused" && at < 0) {
      unaccepted.push(msg);
      const dropped = unaccepted.length > MAX_UNACCEPTED ? unaccepted.shift() : undefined;
      if (dropped) log.error({ messageId: dropped.key.id }, "too many refused WhatsApp messages kept; the oldest is dropped");
      await saveUnaccepted();
    } else if (outcome !== "refused" && at >= 0) {
      unaccepted.splice(at, 1);
      await saveUnaccepted();
    }
  };

  const enqueueIntake = (socket: WhatsAppSocket, messages: WAMessage[]) => {
    const self = selfJids();
    intake = intake
      .then(async () => {
        for (const msg of messages) await noteOutcome(msg, await handleInbound(socket, msg, self));
      })
      .catch((err: unknown) => log.error({ err: describe(err) }, "WhatsApp intake failed"));
  };

  const handleInbound = async (socket: WhatsAppSocket, msg: WAMessage, self: SelfJids): Promise<IntakeOutcome> => {
    const result = translateMessage(msg, self);
    if (!result.ok) {
      log.debug({ reason: result.reason, messageId: msg.key.id }, "skipped WhatsApp message");
      return "skipped";
    }
    const draft = result.draft;
    if (!sink) return "refused";
    const base: InboundMessage = {
      platform: PLATFORM,
      accountId,
      chatId: draft.chatId,
      chatType: draft.chatType,
      userId: draft.userId,
      ...(draft.userAliases.length ? { userAliases: draft.userAliases } : {}),
      ...(draft.userName ? { userName: draft.userName } : {}),
      messageId: draft.messageId,
      text: draft.text,
      sentAt: draft.sentAt ?? clock.now(),
      // The core applies the group's mention rule.
      ...(draft.chatType === "group" ? { mentioned: draft.mentioned } : {}),
    };
    // Strangers' files are not fetched: the core says whether it would take the message, and which sizes.
    const admission = draft.media ? sink.admit({ message: base, attachmentSizes: [draft.media.declaredBytes] }) : undefined;
    const { attachments, notes, dropped } = admission?.allowed
      ? await fetchAttachments(socket, msg, draft, admission.attachments[0])
      : { attachments: [], notes: [], dropped: [] };
    const text = [draft.text, ...notes].filter(Boolean).join("\n");
    const inbound: InboundMessage = {
      ...base,
      text,
      ...(attachments.length ? { attachments } : {}),
      ...(dropped.length ? { droppedAttachments: dropped } : {}),
    };
    let outcome: Awaited<ReturnType<typeof sink.accept>>;
    try {
      outcome = await sink.accept(inbound);
      if (!outcome.acknowledge) throw new Error(`not taken now (${outcome.reason})`);
    } catch (err) {
      // Not journaled: do not acknowledge; kept to offer again.
      log.warn({ err: describe(err), chatId: draft.chatId, messageId: draft.messageId }, "core refused WhatsApp message; will offer it again");
      return "refused";
    }
    if (draft.chatType === "group") receivedMessages.set(`${draft.chatId}:${draft.messageId}`, msg);
    // Strangers' (and unaddressed) messages stay unread: on a personal number the owner should still see them.
    if (readReceipts && (outcome.status === "accepted" || outcome.status === "duplicate")) {
      const reader = conn?.open ? conn.socket : socket;
      reader.readMessages?.([msg.key]).catch((err: unknown) => log.debug({ err: describe(err) }, "read receipt failed"));
    }
    return "accepted";
  };

  const fetchAttachments = async (
    socket: WhatsAppSocket,
    msg: WAMessage,
    draft: InboundDraft,
    verdict: AdmissionAnswer["attachments"][number] | undefined,
  ): Promise<{ attachments: InboundAttachment[]; notes: string[]; dropped: DroppedAttachment[] }> => {
    const media = draft.media;
    if (!media) return { attachments: [], notes: [], dropped: [] };
    const limit = verdict?.fetch ? Math.min(verdict.maxBytes, deps.maxAttachmentBytes) : deps.maxAttachmentBytes;
    // The agent reads a note in the text; the core tells the sender (droppedAttachments).
    const refuse = (why: string, reason: DroppedAttachment["reason"]) => ({
      attachments: [],
      notes: [`[Attachment "${media.fileName}" not delivered: ${why}]`],
      dropped: [{ fileName: media.fileName, reason }],
    });
    if (!verdict?.fetch && verdict?.reason === "disabled") return refuse("attachments are off here", "disabled");
    if (!verdict?.fetch || (media.declaredBytes !== undefined && media.declaredBytes > limit)) {
      return refuse(`${formatBytes(media.declaredBytes ?? limit + 1)} is over the ${formatBytes(limit)} limit`, "too_large");
    }
    try {
      const source = await downloader(msg, { socket, logger: baileysLog });
      const data = await readBounded(source, limit);
      if (!data) return refuse(`it is over the ${formatBytes(limit)} limit`, "too_large");
      const attachment: InboundAttachment = {
        kind: media.kind,
        fileName: media.fileName,
        ...(media.mimeType ? { mimeType: media.mimeType } : {}),
        data,
      };
      return { attachments: [attachment], notes: [], dropped: [] };
    } catch (err) {
      log.warn({ err: describe(err), messageId: draft.messageId }, "downloading WhatsApp media failed");
      return refuse("it could not be downloaded", "unavailable");
    }
  };

  const waitForOpen = (): Promise<WhatsAppSocket> => {
    if (conn?.open) return Promise.resolve(conn.socket);
    if (phase !== "running") return Promise.reject(errorFor());
    return new Promise<WhatsAppSocket>((resolve, reject) => {
      const waiter: OpenWaiter = {
        resolve,
        reject,
        timer: clock.setTimeout(() => {
          openWaiters.delete(waiter);
          reject(errorFor());
        }, sendWaitMs),
      };
      openWaiters.add(waiter);
    });
  };

  const begin = async (next: InboundSink): Promise<void> => {
    if (stopping) await stopping;
    phase = "running";
    sink = next;
    attempts = 0;
    stopping = undefined;
    unaccepted = loadUnaccepted();
    const started = new Promise<void>((resolve, reject) => {
      settleStart = (err) => {
        settleStart = undefined;
        if (err) reject(err);
        else resolve();
      };
    });
    status({ state: "starting" });
    try {
      auth ??= await openAuthStore(authDir);
    } catch (err) {
      fail(`cannot open the auth folder: ${describe(err)}`);
      auth = undefined;
      return started;
    }
    if (phase !== "running") return started; // stopped while the auth state loaded
    openSocket();
    return started;
  };

  const adapter: ChatAdapter = {
    platform: PLATFORM,
    accountId,
    limits: WHATSAPP_LIMITS,
    // Baileys hands a message over once: what the core cannot take is told, never left for a redelivery.
    capabilities: { redelivers: false, edit: false },

    measure(text: string, format: TextFormat) {
      return format === "markdown" ? markdownToWhatsApp(text).length : text.length;
    },

    start(next: InboundSink) {
      if (phase === "running" && starting) return starting;
      starting = begin(next);
      return starting;
    },

    stop() {
      if (phase !== "running") return stopping ?? Promise.resolve();
      phase = "stopped";
      cancelReconnect();
      teardown();
      rejectOpenWaiters();
      settleStart?.();
      stopping = (async () => {
        // Let messages already taken from the socket reach the journal.
        await intake;
        await auth?.flush();
        status({ state: "stopped" });
      })();
      return stopping;
    },

    async send(target: ChatTarget, text: string, options: SendOptions): Promise<SendReceipt> {
      const jid = toSendJid(target.chatId);
      const socket = await waitForOpen();
      const body = options.format === "markdown" ? markdownToWhatsApp(text) : text;
      const quoted = target.chatType === "group" && target.replyToMessageId ? receivedMessages.get(`${target.chatId}:${target.replyToMessageId}`) : undefined;
      let sent: WAMessage | undefined;
      try {
        sent = await socket.sendMessage(jid, { text: body }, quoted ? { quoted } : undefined);
      } catch (err) {
        throw new WhatsAppAdapterError("send_failed", `WhatsApp send failed: ${describe(err)}`);
      }
      if (sent?.key.id && sent.message) sentMessages.set(`${sent.key.remoteJid}:${sent.key.id}`, sent.message);
      return sent?.key.id ? { messageId: sent.key.id } : {};
    },

    async sendTyping(target: ChatTarget) {
      const socket = conn?.open ? conn.socket : undefined;
      if (!socket) return;
      try {
        await socket.sendPresenceUpdate("composing", toSendJid(target.chatId));
      } catch (err) {
        log.debug({ err: describe(err) }, "typing indicator failed");
      }
    },
  };
  return adapter;
}

/** The status code Baileys puts on a close: a Boom's `output.statusCode`. */
export function disconnectCode(error: unknown): number | undefined {
  if (!error || typeof error !== "object") return undefined;
  const output = (error as { output?: unknown }).output;
  if (output && typeof output === "object") {
    const code = (output as { statusCode?: unknown }).statusCode;
    if (typeof code === "number") return code;
  }
  return undefined;
}

/** Reads at most `limit` bytes; undefined when there are more. */
async function readBounded(source: Uint8Array | AsyncIterable<Uint8Array>, limit: number): Promise<Buffer | undefined> {
  if (source instanceof Uint8Array) return source.length > limit ? undefined : Buffer.from(source);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    size += chunk.length;
    if (size > limit) {
      // Leaving the loop early destroys a Node stream, which stops the download.
      return undefined;
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** A short message for logs: never the error object's data, which may carry keys. */
function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === "string" ? err : "unknown error";
}
