/**
 * A stand-in for Baileys' `makeWASocket`, for driving the WhatsApp adapter
 * without a network. Each socket carries Baileys' own event buffer
 * (`makeEventBuffer`), so `ev.on/off/emit/process` behave exactly as the
 * library's do; the helpers below emit what WhatsApp would make Baileys emit:
 *
 * - `showQr`, `open`, `close(statusCode)` for `connection.update` (close carries a
 *   Boom-like error with `output.statusCode`, and the socket then shuts its
 *   emitter down as Baileys' `end` does);
 * - `receive(messages, type)` for `messages.upsert`, `history(messages)` for
 *   `messaging-history.set`, `updateCreds(partial)` for `creds.update` (it
 *   mutates the auth creds first, as Baileys does);
 * - `sendMessage` / `sendPresenceUpdate` / `readMessages` / `end` / `logout` are recorded,
 *   and logged with the socket's name in `platformCalls()` (`sendMessage` text, files -
 *   `image`, `document`, `audio` with `ptt` - within WhatsApp's limits of 16 MB for media
 *   and 100 MB for documents - and reactions, which need the key of a message and are kept
 *   per message: `reactions`).
 *
 * WhatsApp's one-socket rule: a linked device has one live connection. When a
 * newer socket of the same device opens, the server ends the older one with a
 * stream error `<conflict type="replaced"/>`, which Baileys reports as
 * `connection: "close"` with a Boom of status 440 (`DisconnectReason.connectionReplaced`)
 * and message "Stream Errored (conflict)" (Baileys `Socket/socket.js`, `Utils/generics.js` CODE_MAP).
 *
 * Message builders (`directByPhone`, `directByLid`, `groupText`, `ownMessage`,
 * `documentFrom`, `imageFrom`) produce rc14-shaped `WAMessage`s: `key.remoteJid`
 * / `key.participant` as phone or `@lid` JIDs with `remoteJidAlt` /
 * `participantAlt` carrying the other identity.
 */
import { Readable } from "node:stream";
import { makeEventBuffer, type BaileysEventMap, type WAMessage, type WAMessageKey, type WAPresence } from "@whiskeysockets/baileys";
import { pino } from "pino";
import type { MediaDownloader, SocketFactory, WhatsAppSocket, WhatsAppSocketConfig } from "../../daemon/adapters/whatsapp/index.js";
import type { OutgoingContent } from "../../daemon/adapters/whatsapp/socket.js";
import { CallLog, type PlatformCall } from "./call-log.js";

export interface FakeAccount {
  /** Digits only. */
  phone: string;
  /** Digits only (the part before `@lid`). */
  lid: string;
  name?: string;
}

export const BOT_ACCOUNT: FakeAccount = { phone: "4915100000001", lid: "190000000000001", name: "Agent" };

export const pnJid = (phone: string, device?: number): string => `${phone.replace(/\D/g, "")}${device !== undefined ? `:${device}` : ""}@s.whatsapp.net`;
export const lidJid = (lid: string, device?: number): string => `${lid}${device !== undefined ? `:${device}` : ""}@lid`;

/** What `@hapi/boom` errors look like to the adapter. */
export class FakeBoom extends Error {
  readonly isBoom = true;
  readonly output: { statusCode: number; payload: { statusCode: number; error: string; message: string } };
  constructor(
    statusCode: number,
    message: string,
    /** What Baileys puts in `data`: the stream error's node, say. */
    readonly data?: unknown,
  ) {
    super(message);
    this.output = { statusCode, payload: { statusCode, error: "Error", message } };
  }
}

const SILENT = pino({ level: "silent" });

export interface SentRecord {
  jid: string;
  /** What was sent; `text` is set for text messages only. */
  content: OutgoingContent & { text?: string };
  options?: { quoted?: WAMessage };
}

export class FakeBaileysSocket implements WhatsAppSocket {
  readonly ev: ReturnType<typeof makeEventBuffer>;
  user: { id: string; lid?: string; name?: string } | undefined;
  /** Closed by the server (`close`) or by the client (`end`). */
  closed = false;
  readonly endCalls: (Error | undefined)[] = [];
  logoutCalls = 0;
  readonly sent: SentRecord[] = [];
  /** The bot's reaction per message ("<jid>:<message id>"), as the chat shows it now. */
  readonly reactions = new Map<string, string>();
  readonly presence: { type: WAPresence; jid: string | undefined }[] = [];
  readonly reads: WAMessageKey[][] = [];
  /** `process` handlers currently attached (the adapter must detach from replaced sockets). */
  subscriptions = 0;
  private sendFailures: Error[] = [];
  private sentCount = 0;

  /** Open (past `open()`) and not closed since. */
  opened = false;

  constructor(
    readonly config: WhatsAppSocketConfig,
    readonly index: number,
    private readonly account: FakeAccount,
    private readonly echoOwnSends: boolean,
    /** Logs a platform call of this socket; `onOpen` lets the device evict older sockets. */
    private readonly device: { log(socket: FakeBaileysSocket, call: string): void; onOpen(socket: FakeBaileysSocket): void } = { log() {}, onOpen() {} },
  ) {
    const buffer = makeEventBuffer(SILENT);
    this.ev = {
      ...buffer,
      process: (handler) => {
        this.subscriptions++;
        const off = buffer.process(handler);
        let attached = true;
        return () => {
          if (!attached) return;
          attached = false;
          this.subscriptions--;
          off();
        };
      },
    };
  }

  // ---- what the adapter calls ----

  async sendMessage(jid: string, content: OutgoingContent, options?: { quoted?: WAMessage }): Promise<WAMessage | undefined> {
    const failure = this.sendFailures.shift();
    if (failure) throw failure;
    if (this.closed) throw new FakeBoom(428, "Connection Closed");
    this.device.log(this, "sendMessage");
    const media = "image" in content ? content.image : "audio" in content ? content.audio : undefined;
    if (media && media.length > 16 * 1024 * 1024) throw new FakeBoom(413, "Media too large");
    if ("document" in content && content.document.length > 100 * 1024 * 1024) throw new FakeBoom(413, "Media too large");
    if ("react" in content) {
      if (!content.react.key.id || content.react.key.remoteJid !== jid) throw new FakeBoom(400, "bad-request");
      const on = `${jid}:${content.react.key.id}`;
      if (content.react.text) this.reactions.set(on, content.react.text);
      else this.reactions.delete(on);
    }
    this.sent.push({ jid, content, ...(options ? { options } : {}) });
    const message: WAMessage = {
      key: { remoteJid: jid, fromMe: true, id: `3EB0${String(++this.sentCount).padStart(8, "0")}S${this.index}` },
      message:
        "text" in content
          ? { conversation: content.text }
          : "react" in content
            ? { reactionMessage: { text: content.react.text, key: content.react.key } }
            : { documentMessage: {} },
      messageTimestamp: Math.floor(Date.now() / 1000),
    };
    // Baileys announces its own sends as an "append" upsert (emitOwnEvents).
    if (this.echoOwnSends) this.ev.emit("messages.upsert", { messages: [message], type: "append" });
    return message;
  }

  async sendPresenceUpdate(type: WAPresence, jid?: string): Promise<void> {
    if (this.closed) throw new FakeBoom(428, "Connection Closed");
    this.device.log(this, "sendPresenceUpdate");
    this.presence.push({ type, jid });
  }

  async readMessages(keys: WAMessageKey[]): Promise<void> {
    this.device.log(this, "readMessages");
    this.reads.push(keys);
  }

  async end(error: Error | undefined): Promise<void> {
    this.endCalls.push(error);
    this.device.log(this, "end");
    if (this.closed) return;
    this.shutDown(error);
  }

  async logout(): Promise<void> {
    this.logoutCalls++;
    this.device.log(this, "logout");
    this.shutDown(new FakeBoom(401, "Intentional Logout"));
  }

  // ---- what tests drive ----

  /** Makes the next `sendMessage` reject with `error`. */
  failNextSend(error: Error = new FakeBoom(500, "send failed")): void {
    this.sendFailures.push(error);
  }

  emit<T extends keyof BaileysEventMap>(event: T, data: BaileysEventMap[T]): void {
    this.ev.emit(event, data);
  }

  showQr(qr = `2@${this.index}fakeRef,noiseKeyB64=,identityKeyB64=,advSecretB64=`): string {
    this.emit("connection.update", { connection: "connecting", qr });
    return qr;
  }

  open(): void {
    this.user = {
      id: pnJid(this.account.phone, 7),
      lid: lidJid(this.account.lid, 7),
      ...(this.account.name ? { name: this.account.name } : {}),
    };
    this.opened = true;
    this.device.log(this, "open");
    this.device.onOpen(this);
    this.emit("connection.update", { connection: "open", isNewLogin: false });
  }

  /** The server replaced this socket with a newer one of the same device (WhatsApp's 440). */
  replaced(): void {
    if (this.closed) return;
    this.shutDown(new FakeBoom(440, "Stream Errored (conflict)", { tag: "conflict", attrs: { type: "replaced" } }));
  }

  /** The server (or network) closes the connection with this status. */
  close(statusCode: number, message = "Stream Errored"): void {
    if (this.closed) return;
    this.shutDown(new FakeBoom(statusCode, message));
  }

  /** Mutates the auth creds in place, then announces it, as Baileys does. */
  updateCreds(update: Partial<WhatsAppSocketConfig["auth"]["creds"]>): void {
    Object.assign(this.config.auth.creds, update);
    this.emit("creds.update", update);
  }

  receive(messages: WAMessage[], type: "notify" | "append" = "notify"): void {
    this.emit("messages.upsert", { messages, type });
  }

  history(messages: WAMessage[]): void {
    this.emit("messaging-history.set", { chats: [], contacts: [], messages, isLatest: true });
  }

  private shutDown(error: Error | undefined): void {
    this.closed = true;
    this.opened = false;
    this.emit("connection.update", { connection: "close", lastDisconnect: { error, date: new Date() } });
    // Baileys' end() does the same after announcing the close.
    this.ev.removeAllListeners("connection.update");
    this.ev.destroy();
  }
}

export interface FakeBaileys {
  factory: SocketFactory;
  sockets: FakeBaileysSocket[];
  latest(): FakeBaileysSocket;
  /** Sockets not closed by either side. */
  alive(): FakeBaileysSocket[];
  /** The most sockets that were alive at once, counted each time one was made. */
  maxAlive(): number;
  account: FakeAccount;
  /** Every socket call (`open`, `sendMessage`, ...) with its time and socket (`socket-<index>`), oldest first. */
  platformCalls(): PlatformCall[];
}

/** One linked device: every socket the factory makes is a connection of it, so a newer open socket replaces the older. */
export function createFakeBaileys(options: { account?: FakeAccount; echoOwnSends?: boolean; now?: () => number } = {}): FakeBaileys {
  const account = options.account ?? BOT_ACCOUNT;
  const sockets: FakeBaileysSocket[] = [];
  let maxAlive = 0;
  const alive = () => sockets.filter((s) => !s.closed);
  const callLog = new CallLog(options.now);
  const device = {
    log: (socket: FakeBaileysSocket, call: string) => callLog.record(`socket-${socket.index}`, call),
    onOpen: (socket: FakeBaileysSocket) => {
      for (const other of sockets) if (other !== socket && other.opened) other.replaced();
    },
  };
  const factory: SocketFactory = (config) => {
    const socket = new FakeBaileysSocket(config, sockets.length, account, options.echoOwnSends ?? true, device);
    sockets.push(socket);
    maxAlive = Math.max(maxAlive, alive().length);
    return socket;
  };
  return {
    factory,
    sockets,
    latest() {
      const s = sockets.at(-1);
      if (!s) throw new Error("no socket has been made yet");
      return s;
    },
    alive,
    maxAlive: () => maxAlive,
    account,
    platformCalls: () => callLog.list(),
  };
}

// ---- messages ----

let seq = 0;
const nextId = (): string => `3A${(++seq).toString(16).toUpperCase().padStart(18, "0")}`;
const SENT_AT = 1_767_225_600; // 2026-01-01T00:00:00Z, seconds

interface Common {
  id?: string;
  pushName?: string;
  timestamp?: number;
}

/** One-to-one message addressed by phone number (`addressingMode: "pn"`). */
export function directByPhone(phone: string, text: string, opts: Common & { lidAlt?: string } = {}): WAMessage {
  return {
    key: {
      remoteJid: pnJid(phone),
      ...(opts.lidAlt ? { remoteJidAlt: lidJid(opts.lidAlt) } : {}),
      fromMe: false,
      id: opts.id ?? nextId(),
      addressingMode: "pn",
    },
    message: { conversation: text },
    messageTimestamp: opts.timestamp ?? SENT_AT,
    pushName: opts.pushName ?? "Ana",
  };
}

/** One-to-one message addressed by `@lid`, with the phone JID as `remoteJidAlt` when known. */
export function directByLid(lid: string, text: string, opts: Common & { phoneAlt?: string; device?: number } = {}): WAMessage {
  return {
    key: {
      remoteJid: lidJid(lid, opts.device),
      ...(opts.phoneAlt ? { remoteJidAlt: pnJid(opts.phoneAlt) } : {}),
      fromMe: false,
      id: opts.id ?? nextId(),
      addressingMode: "lid",
    },
    message: { conversation: text },
    messageTimestamp: opts.timestamp ?? SENT_AT,
    pushName: opts.pushName ?? "Lia",
  };
}

export interface GroupOpts extends Common {
  /** JIDs in `contextInfo.mentionedJid`. */
  mentions?: string[];
  /** The sender's other identity (`participantAlt`). */
  participantAlt?: string;
  /** Quote (reply to) a message by this JID. */
  replyTo?: { participant: string; stanzaId: string };
}

/** Group message from `participant` (a phone or `@lid` JID). */
export function groupText(groupJid: string, participant: string, text: string, opts: GroupOpts = {}): WAMessage {
  const contextInfo =
    opts.mentions || opts.replyTo
      ? {
          ...(opts.mentions ? { mentionedJid: opts.mentions } : {}),
          ...(opts.replyTo ? { participant: opts.replyTo.participant, stanzaId: opts.replyTo.stanzaId, quotedMessage: { conversation: "earlier" } } : {}),
        }
      : undefined;
  return {
    key: {
      remoteJid: groupJid,
      participant,
      ...(opts.participantAlt ? { participantAlt: opts.participantAlt } : {}),
      fromMe: false,
      id: opts.id ?? nextId(),
      addressingMode: participant.endsWith("@lid") ? "lid" : "pn",
    },
    message: contextInfo ? { extendedTextMessage: { text, contextInfo } } : { conversation: text },
    messageTimestamp: opts.timestamp ?? SENT_AT,
    pushName: opts.pushName ?? "Gus",
  };
}

/** What the bot's own account sent (from this device or the phone). */
export function ownMessage(chatJid: string, text: string, opts: Common = {}): WAMessage {
  return {
    key: { remoteJid: chatJid, fromMe: true, id: opts.id ?? nextId() },
    message: { conversation: text },
    messageTimestamp: opts.timestamp ?? SENT_AT,
  };
}

export interface MediaOpts extends Common {
  caption?: string;
  mimetype?: string;
  /** What the message claims (`fileLength`); defaults to the real size. */
  declaredBytes?: number;
}

export function documentFrom(phone: string, fileName: string, data: Buffer, opts: MediaOpts = {}): WAMessage {
  return {
    key: { remoteJid: pnJid(phone), fromMe: false, id: opts.id ?? nextId(), addressingMode: "pn" },
    message: {
      documentMessage: {
        fileName,
        mimetype: opts.mimetype ?? "application/pdf",
        fileLength: opts.declaredBytes ?? data.length,
        url: "https://mmg.whatsapp.net/fake",
        mediaKey: new Uint8Array(32),
        ...(opts.caption ? { caption: opts.caption } : {}),
      },
    },
    messageTimestamp: opts.timestamp ?? SENT_AT,
    pushName: opts.pushName ?? "Ana",
  };
}

/** A voice note (push-to-talk audio: `ptt`, Opus in Ogg, its length in `seconds`), as WhatsApp delivers one. */
export function voiceNoteFrom(phone: string, data: Buffer, seconds: number, opts: MediaOpts = {}): WAMessage {
  return {
    key: { remoteJid: pnJid(phone), fromMe: false, id: opts.id ?? nextId(), addressingMode: "pn" },
    message: {
      audioMessage: {
        mimetype: opts.mimetype ?? "audio/ogg; codecs=opus",
        fileLength: opts.declaredBytes ?? data.length,
        seconds,
        ptt: true,
        url: "https://mmg.whatsapp.net/fake",
        mediaKey: new Uint8Array(32),
      },
    },
    messageTimestamp: opts.timestamp ?? SENT_AT,
    pushName: opts.pushName ?? "Ana",
  };
}

export function imageFrom(phone: string, data: Buffer, opts: MediaOpts = {}): WAMessage {
  return {
    key: { remoteJid: pnJid(phone), fromMe: false, id: opts.id ?? nextId(), addressingMode: "pn" },
    message: {
      imageMessage: {
        mimetype: opts.mimetype ?? "image/jpeg",
        fileLength: opts.declaredBytes ?? data.length,
        url: "https://mmg.whatsapp.net/fake",
        mediaKey: new Uint8Array(32),
        ...(opts.caption ? { caption: opts.caption } : {}),
      },
    },
    messageTimestamp: opts.timestamp ?? SENT_AT,
    pushName: opts.pushName ?? "Ana",
  };
}

/**
 * Media bytes by message id, served as a stream in small chunks (so a bound
 * on size is enforced while reading, not after). `downloads` counts calls.
 */
export function createFakeMedia(chunkSize = 4096) {
  const files = new Map<string, Buffer>();
  const state = { downloads: 0, bytesServed: 0 };
  const downloader: MediaDownloader = async (message) => {
    state.downloads++;
    const data = message.key.id ? files.get(message.key.id) : undefined;
    if (!data) throw new FakeBoom(404, "media not found");
    async function* chunks() {
      for (let i = 0; i < data!.length; i += chunkSize) {
        const part = data!.subarray(i, i + chunkSize);
        state.bytesServed += part.length;
        yield part;
      }
    }
    return Readable.from(chunks());
  };
  return {
    put(message: WAMessage, data: Buffer): WAMessage {
      if (message.key.id) files.set(message.key.id, data);
      return message;
    },
    downloader,
    state,
  };
}
