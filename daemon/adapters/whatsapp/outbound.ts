/**
 * What the bot says on WhatsApp: Markdown rendered to WhatsApp's markup
 * (format.ts), group replies quoting the message they answer, typing shown
 * while an answer is written. Splitting long answers is the core's job.
 */
import type { Logger } from "pino";
import type { proto } from "@whiskeysockets/baileys";
import type { AdapterLimits, ChatTarget, FileLimits, OutboundFile, SendOptions, SendReceipt, TextFormat } from "../../vocabulary/adapter.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import { describeError, WhatsAppAdapterError } from "./errors.js";
import { markdownToWhatsApp } from "./format.js";
import { toSendJid } from "./ids.js";
import type { OutgoingContent, WAMessage, WAMessageKey, WhatsAppSocket } from "./socket.js";

export const WHATSAPP_LIMITS: AdapterLimits = { maxMessageLength: 4000, typingRefreshMs: 10_000 };

/** WhatsApp's limits: photos and voice notes 16 MB, documents 100 MB. */
export const WHATSAPP_FILE_LIMITS: FileLimits = { photo: 16 * 1024 * 1024, voice: 16 * 1024 * 1024, document: 100 * 1024 * 1024 };

/** How many sent and received messages are remembered (for Baileys' retries and for quoting). */
const REMEMBERED = 500;

export interface OutboundDeps {
  /** The channel's logger. */
  log: Logger;
  /** The open socket, waiting a while for a dropped one to come back; rejects with a `WhatsAppAdapterError`. */
  waitForOpen(): Promise<WhatsAppSocket>;
  /** The open socket now, or undefined (typing is not worth waiting for). */
  openSocket(): WhatsAppSocket | undefined;
}

const messageKey = (chatId: string | null | undefined, messageId: string): string => `${chatId ?? ""}:${messageId}`;

export class WhatsAppOutbound {
  readonly #deps: OutboundDeps;
  /** Our recent sends by chat and id: Baileys asks for one when a recipient's phone requests a retry. */
  readonly #sent = new BoundedMap<string, proto.IMessage>(REMEMBERED);
  /** Recent accepted group messages by chat and id: a reply quotes the one it answers, so the thread stays readable. */
  readonly #received = new BoundedMap<string, WAMessage>(REMEMBERED);

  constructor(deps: OutboundDeps) {
    this.#deps = deps;
  }

  /** The length WhatsApp will show for `text` once rendered. */
  measure(text: string, format: TextFormat): number {
    return format === "markdown" ? markdownToWhatsApp(text).length : text.length;
  }

  async send(target: ChatTarget, text: string, options: SendOptions): Promise<SendReceipt> {
    const body = options.format === "markdown" ? markdownToWhatsApp(text) : text;
    return this.#deliver(target, { text: body }, "send");
  }

  /** A file as an image, a voice note (`ptt`) or a document, quoting the message it answers in a group. */
  async sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt> {
    const content: OutgoingContent =
      file.kind === "photo"
        ? { image: file.data, mimetype: file.mimeType }
        : file.kind === "voice"
          ? { audio: file.data, mimetype: file.mimeType, ptt: true }
          : { document: file.data, mimetype: file.mimeType, fileName: file.fileName };
    return this.#deliver(target, content, "file send");
  }

  /** The bot's reaction on a message ("" removes it: WhatsApp keeps one reaction per sender). */
  async react(target: ChatTarget, messageId: string, emoji: string, { remove }: { remove: boolean }): Promise<void> {
    const jid = toSendJid(target.chatId);
    // A group message's key names its sender (participant); a direct one is the chat's.
    const key = this.#received.get(messageKey(target.chatId, messageId))?.key ?? { remoteJid: jid, id: messageId, fromMe: false };
    const socket = await this.#deps.waitForOpen();
    try {
      await socket.sendMessage(jid, { react: { text: remove ? "" : emoji, key } });
    } catch (err) {
      throw new WhatsAppAdapterError({ reason: "send_failed", message: `WhatsApp reaction failed: ${describeError(err)}` });
    }
  }

  async #deliver(target: ChatTarget, content: OutgoingContent, what: string): Promise<SendReceipt> {
    const jid = toSendJid(target.chatId);
    const socket = await this.#deps.waitForOpen();
    const quoted = target.chatType === "group" && target.replyToMessageId ? this.#received.get(messageKey(target.chatId, target.replyToMessageId)) : undefined;
    let sent: WAMessage | undefined;
    try {
      sent = await socket.sendMessage(jid, content, quoted ? { quoted } : undefined);
    } catch (err) {
      // No `cause`: Baileys' error objects may carry key material, and the core logs what it is given.
      throw new WhatsAppAdapterError({ reason: "send_failed", message: `WhatsApp ${what} failed: ${describeError(err)}` });
    }
    if (sent?.key.id && sent.message) this.#sent.set(messageKey(sent.key.remoteJid, sent.key.id), sent.message);
    return sent?.key.id ? { messageId: sent.key.id } : {};
  }

  async sendTyping(target: ChatTarget): Promise<void> {
    const socket = this.#deps.openSocket();
    if (!socket) return;
    try {
      await socket.sendPresenceUpdate("composing", toSendJid(target.chatId));
    } catch (err) {
      this.#deps.log.debug({ err: describeError(err) }, "typing indicator failed");
    }
  }

  /** For Baileys' `getMessage`: the content of one of our recent sends. */
  sentMessage(key: WAMessageKey): proto.IMessage | undefined {
    return key.id ? this.#sent.get(messageKey(key.remoteJid, key.id)) : undefined;
  }

  /** Keeps an accepted group message, so a reply to it can quote it. */
  rememberReceived(chatId: string, messageId: string, msg: WAMessage): void {
    this.#received.set(messageKey(chatId, messageId), msg);
  }
}
