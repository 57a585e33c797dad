/**
 * A person on Nostr, as a client app is: their own key, nostr-tools to write
 * NIP-17 gift wraps or NIP-04 messages to the bot and publish them to relays
 * (authenticating where a relay asks, NIP-42), and to read the bot's answers.
 */
import * as nip04 from "nostr-tools/nip04";
import * as nip17 from "nostr-tools/nip17";
import * as nip59 from "nostr-tools/nip59";
import { type Event, finalizeEvent, generateSecretKey, getPublicKey } from "nostr-tools/pure";
import { AbstractRelay } from "nostr-tools/abstract-relay";
import { WebSocket } from "undici";
import { verifyEvent } from "nostr-tools/pure";

export interface Person {
  publicKey: string;
  /** Sends `text` to the bot as a NIP-17 gift wrap on each relay; resolves with the message (rumor) id. */
  dm17(text: string, relays: readonly string[]): Promise<{ id: string; wrap: Event }>;
  /** Sends `text` as a NIP-04 kind 4; resolves with the event id. */
  dm04(text: string, relays: readonly string[]): Promise<{ id: string; event: Event }>;
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

  return {
    publicKey,
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
