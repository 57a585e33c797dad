/**
 * A person on Nostr, as a client app is: their own key, nostr-tools to write
 * NIP-17 gift wraps or NIP-04 messages to the bot and publish them to relays
 * (authenticating where a relay asks, NIP-42), and to read the bot's answers.
 * In a NIP-17 room (the bot and other people) a message is one rumor with
 * every member's `p` tag, wrapped to each member and to the author. Files go
 * as a client sends them (Amethyst's shape): encrypted with WebCrypto's
 * AES-GCM (32-byte key, 16-byte nonce, hex), put on a Blossom server, sent as
 * a kind 15 with `x` the encrypted blob's SHA-256 and `ox` the file's.
 */
import * as nip04 from "nostr-tools/nip04";
import * as nip17 from "nostr-tools/nip17";
import * as nip59 from "nostr-tools/nip59";
import { type Event, finalizeEvent, generateSecretKey, getPublicKey } from "nostr-tools/pure";
import { AbstractRelay } from "nostr-tools/abstract-relay";
import { WebSocket } from "undici";
import { verifyEvent } from "nostr-tools/pure";
import { createHash } from "node:crypto";
import type { FakeBlossom } from "./blossom.js";

/** A NIP-17 message the bot sent, as this person's client opens it. */
export interface ReadRumor {
  id: string;
  kind: number;
  content: string;
  tags: string[][];
}

export interface FileToSend {
  data: Uint8Array;
  mimeType: string;
  /** The room's other people (beside the bot); default none (a direct message). */
  others?: readonly string[];
  /** An `x` other than the blob's (a message that names another file). */
  hash?: string;
  /** Bytes the (dishonest) server serves in place of the blob once it has it. */
  swappedBy?: Uint8Array;
}

export interface Person {
  publicKey: string;
  /** Sends `text` to the bot as a NIP-17 gift wrap on each relay; resolves with the message (rumor) id. */
  dm17(text: string, relays: readonly string[]): Promise<{ id: string; wrap: Event }>;
  /** Sends `text` as a NIP-04 kind 4; resolves with the event id. */
  dm04(text: string, relays: readonly string[]): Promise<{ id: string; event: Event }>;
  /** Writes `text` in the NIP-17 room of the bot, this person and `others`; resolves with the message id. */
  room(text: string, others: readonly string[], relays: readonly string[], tags?: string[][]): Promise<{ id: string }>;
  /** Sends a file as a NIP-17 kind 15 through `blossom`; resolves with the message id and the blob's URL. */
  sendFile(file: FileToSend, blossom: FakeBlossom, relays: readonly string[]): Promise<{ id: string; url: string }>;
  /** The bot's NIP-17 messages to this person among `events` (one per message: wraps to several people are one rumor). */
  rumors(events: readonly Event[]): ReadRumor[];
  /** Downloads and decrypts the file a kind 15 names, checking `x` and `ox` as a client does. */
  openFile(rumor: ReadRumor): Promise<Buffer>;
  /** Publishes an event as it is (a copy already sent, to another relay). */
  publish(event: Event, relays: readonly string[]): Promise<void>;
  /** The bot's messages to this person among `events`, decrypted, with the scheme each came in. */
  read(events: readonly Event[]): { text: string; protocol: "nip17" | "nip04" }[];
  close(): void;
}

export function createPerson(bot: string): Person {
  const secretKey = generateSecretKey();
  const publicKey = getPublicKey(secretKey);
  const open = new Map<string, AbstractRelay>();

  async function relayAt(url: string): Promise<AbstractRelay> {
    const known = open.get(url);
    if (known?.connected) return known;
    const relay = new AbstractRelay(url, { verifyEvent, websocketImplementation: WebSocket as unknown as typeof globalThis.WebSocket, enableReconnect: false });
    relay.onauth = async (template) => finalizeEvent(template, secretKey);
    relay.onnotice = () => {};
    await relay.connect();
    open.set(url, relay);
    return relay;
  }

  async function publish(event: Event, relays: readonly string[]): Promise<void> {
    for (const url of relays) {
      const relay = await relayAt(url);
      try {
        await relay.publish(event);
      } catch (error) {
        if (!String((error as Error).message).startsWith("auth-required:")) throw error;
        await relay.auth(async (template) => finalizeEvent(template, secretKey));
        await relay.publish(event);
      }
    }
  }

  /** One rumor to every member, wrapped to each and to the author (NIP-17). */
  async function sendRumor(kind: number, content: string, others: readonly string[], extra: string[][], relays: readonly string[]): Promise<string> {
    const members = [bot, ...others];
    const rumor = nip59.createRumor({ kind, content, tags: [...members.map((p) => ["p", p]), ...extra] }, secretKey);
    for (const to of [...members, publicKey]) await publish(nip59.createWrap(nip59.createSeal(rumor, secretKey, to), to), relays);
    return rumor.id;
  }

  return {
    publicKey,
    async room(text, others, relays, tags = []) {
      return { id: await sendRumor(14, text, others, tags, relays) };
    },
    async sendFile(file, blossom, relays) {
      const key = crypto.getRandomValues(new Uint8Array(32));
      const nonce = crypto.getRandomValues(new Uint8Array(16));
      const aes = await crypto.subtle.importKey("raw", key, "AES-GCM", false, ["encrypt"]);
      const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, aes, file.data));
      const blob = blossom.put(sealed, "application/octet-stream");
      if (file.swappedBy) blossom.tamper(blob.sha256, file.swappedBy);
      const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
      const tags = [
        ["file-type", file.mimeType],
        ["encryption-algorithm", "aes-gcm"],
        ["decryption-key", hex(key)],
        ["decryption-nonce", hex(nonce)],
        ["x", file.hash ?? blob.sha256],
        ["ox", createHash("sha256").update(file.data).digest("hex")],
        ["size", String(sealed.length)],
      ];
      return { id: await sendRumor(15, blob.url, file.others ?? [], tags, relays), url: blob.url };
    },
    rumors(events) {
      const byId = new Map<string, ReadRumor>();
      for (const e of events) {
        if (e.kind !== 1059 || !e.tags.some((t) => t[0] === "p" && t[1] === publicKey)) continue;
        try {
          const rumor = nip17.unwrapEvent(e, secretKey);
          if (rumor.pubkey === bot) byId.set(rumor.id, { id: rumor.id, kind: rumor.kind, content: rumor.content, tags: rumor.tags });
        } catch {
          // not for us
        }
      }
      return [...byId.values()];
    },
    async openFile(rumor) {
      const tag = (name: string) => rumor.tags.find((t) => t[0] === name)?.[1] ?? "";
      const response = await fetch(rumor.content);
      if (!response.ok) throw new Error(`GET ${rumor.content}: ${response.status}`);
      const sealed = new Uint8Array(await response.arrayBuffer());
      if (createHash("sha256").update(sealed).digest("hex") !== tag("x")) throw new Error("the blob is not the message's x");
      const aes = await crypto.subtle.importKey("raw", Buffer.from(tag("decryption-key"), "hex"), "AES-GCM", false, ["decrypt"]);
      const plain = Buffer.from(await crypto.subtle.decrypt({ name: "AES-GCM", iv: Buffer.from(tag("decryption-nonce"), "hex") }, aes, sealed));
      if (createHash("sha256").update(plain).digest("hex") !== tag("ox")) throw new Error("the file is not the message's ox");
      return plain;
    },
    async dm17(text, relays) {
      // As nip17.wrapEvent does, in its steps, to know the rumor's id (the message's).
      const rumor = nip59.createRumor({ kind: 14, content: text, tags: [["p", bot]] }, secretKey);
      const wrap = nip59.createWrap(nip59.createSeal(rumor, secretKey, bot), bot);
      await publish(wrap, relays);
      return { id: rumor.id, wrap };
    },
    async dm04(text, relays) {
      const event = finalizeEvent(
        { kind: 4, created_at: Math.floor(Date.now() / 1000), tags: [["p", bot]], content: nip04.encrypt(secretKey, bot, text) },
        secretKey,
      );
      await publish(event, relays);
      return { id: event.id, event };
    },
    publish,
    read(events) {
      const out: { text: string; protocol: "nip17" | "nip04" }[] = [];
      for (const e of events) {
        if (!e.tags.some((t) => t[0] === "p" && t[1] === publicKey)) continue;
        try {
          if (e.kind === 1059) {
            const rumor = nip17.unwrapEvent(e, secretKey);
            if (rumor.pubkey === bot) out.push({ text: rumor.content, protocol: "nip17" });
          } else if (e.kind === 4 && e.pubkey === bot) {
            out.push({ text: nip04.decrypt(secretKey, bot, e.content), protocol: "nip04" });
          }
        } catch {
          // not for us
        }
      }
      return out;
    },
    close() {
      for (const relay of open.values()) relay.close();
    },
  };
}
