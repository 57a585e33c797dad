/**
 * The slice of Baileys the WhatsApp adapter touches, typed narrowly so a test
 * fake can satisfy it while the real `makeWASocket` stays assignable (checked
 * below by `baileysSocketFactory`).
 */
import {
  downloadMediaMessage,
  makeWASocket,
  type AuthenticationState,
  type BaileysEventMap,
  type WAMessage,
  type WAMessageKey,
  type WAPresence,
  type proto,
} from "@whiskeysockets/baileys";
import type { Logger } from "pino";

export type { AuthenticationState, BaileysEventMap, WAMessage, WAMessageKey };

/** What the adapter passes when it makes a socket (a subset of Baileys' `UserFacingSocketConfig`). */
export interface WhatsAppSocketConfig {
  auth: AuthenticationState;
  logger?: Logger;
  printQRInTerminal?: boolean;
  markOnlineOnConnect?: boolean;
  syncFullHistory?: boolean;
  /** Baileys asks for a message it sent when the peer requests a retry. */
  getMessage?: (key: WAMessageKey) => Promise<proto.IMessage | undefined>;
}

/** Baileys' buffered event emitter: `process` receives batches of events. */
export interface WhatsAppSocketEvents {
  process(handler: (events: Partial<BaileysEventMap>) => void | Promise<void>): () => void;
}

/** What the bridge sends: text, a file (image, document, voice note), or a reaction ("" removes it). A subset of Baileys' `AnyMessageContent`. */
export type OutgoingContent =
  | { text: string }
  | { image: Buffer; mimetype: string; caption?: string }
  | { document: Buffer; mimetype: string; fileName: string }
  | { audio: Buffer; mimetype: string; ptt: true }
  | { react: { text: string; key: WAMessageKey } };

export interface WhatsAppSocket {
  ev: WhatsAppSocketEvents;
  /** The linked account once known: `id` is the phone JID, `lid` the `@lid` id. */
  user?: { id: string; lid?: string } | undefined;
  sendMessage(jid: string, content: OutgoingContent, options?: { quoted?: WAMessage }): Promise<WAMessage | undefined>;
  sendPresenceUpdate(type: WAPresence, toJid?: string): Promise<void>;
  /** Closes the connection without logging out (the link survives). */
  end(error: Error | undefined): unknown;
  logout?: (msg?: string) => Promise<void>;
  readMessages?: (keys: WAMessageKey[]) => Promise<void>;
  /** Asks the phone to re-upload expired media (used by the downloader). */
  updateMediaMessage?: (message: WAMessage) => Promise<WAMessage>;
}

export type SocketFactory = (config: WhatsAppSocketConfig) => WhatsAppSocket;

/** The real one. The annotation is the compile-time proof that Baileys fits the narrow type. */
export const baileysSocketFactory: SocketFactory = makeWASocket;

/** Bytes of a media message: a buffer, or a stream the adapter reads with a size bound. */
export type MediaDownloader = (message: WAMessage, context: { socket: WhatsAppSocket; logger: Logger }) => Promise<Uint8Array | AsyncIterable<Uint8Array>>;

export const baileysMediaDownloader: MediaDownloader = async (message, { socket, logger }) => {
  const reupload = socket.updateMediaMessage;
  return downloadMediaMessage(message, "stream", {}, reupload ? { logger, reuploadRequest: reupload } : undefined);
};
