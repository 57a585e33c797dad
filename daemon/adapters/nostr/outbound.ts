/**
 * Replies out: one message per chunk (Nostr events cannot be edited, so a
 * reply is sent whole, split by size by the core), in the scheme the person
 * last used: NIP-17 (a kind 14 rumor sealed and gift-wrapped, NIP-44) or a
 * NIP-04 kind 4. A NIP-17 message to a room carries every member's `p` tag
 * and is wrapped once for each member and once for the bot itself, as NIP-17
 * asks (the bot's copy is how it knows its own messages again after a
 * restart). Files (kind 15) are encrypted, uploaded to a Blossom server
 * (blossom.ts) and sent the same way. Published to every relay; a wrap is
 * delivered when one relay accepted it, and a message is sent when every
 * member's wrap is. When all refuse, the relays' machine-readable prefixes
 * (NIP-01 `OK false`) decide: "rate-limited:" waits and is tried again,
 * "blocked:"/"invalid:"/"restricted:" are permanent, anything else is transient.
 */
import * as nip04 from "nostr-tools/nip04";
import * as nip59 from "nostr-tools/nip59";
import { finalizeEvent, type NostrEvent } from "nostr-tools/pure";
import type { Clock } from "../../../shared/clock.js";
import { type AdapterLimits, type ChatTarget, type FileLimits, type OutboundFile, SendError, type SendReceipt } from "../../vocabulary/adapter.js";
import type { createBlossomUploader } from "./blossom.js";
import type { PublishRefusal, RelaySet } from "./connection.js";
import { encryptFile, sha256Hex } from "./file-crypto.js";
import { type DmProtocol, roomMembers } from "./inbound.js";

/**
 * A NIP-44 plaintext is at most 65 535 bytes, and a gift wrap encrypts the seal,
 * which holds the encrypted rumor (base64 twice over): the rumor's text stays well
 * within that at 16 000 bytes of JSON-escaped text.
 */
export const NOSTR_LIMITS: AdapterLimits = { maxMessageLength: 16_000, typingRefreshMs: 0 };

/** The largest file the bot uploads: within what public Blossom servers take without payment. */
export const NOSTR_FILE_LIMITS: FileLimits = { photo: 20 * 1024 * 1024, voice: 20 * 1024 * 1024, document: 20 * 1024 * 1024 };

/** What a relay's rate limit is waited before the next try: relays say no time (NIP-01 has no Retry-After). */
export const RATE_LIMIT_WAIT_MS = 5_000;

/** The size the events will carry: the text's UTF-8 bytes once JSON-escaped. */
export const measureNostr = (text: string): number => Buffer.byteLength(JSON.stringify(text)) - 2;

export interface OutboundDeps {
  relays: RelaySet;
  secretKey: Uint8Array;
  /** The bot's public key (hex): its own copy of each NIP-17 message is wrapped to it. */
  publicKey: string;
  clock: Clock;
  /** The scheme the person last wrote in (undefined: never wrote; NIP-17 then). */
  protocolOf(pubkey: string): DmProtocol | undefined;
  /** Told the id of each message sent (a reply to it in a room addresses the bot). */
  sent(id: string): void;
  /** Where files go; absent: no files. */
  blossom?: ReturnType<typeof createBlossomUploader> | undefined;
}

interface RumorTemplate {
  kind: 14 | 15;
  content: string;
  tags: string[][];
}

export function createNostrOutbound(deps: OutboundDeps) {
  const membersOf = (target: ChatTarget): string[] => {
    const members = roomMembers(target.chatId);
    if (!members) throw new SendError("not a Nostr public key or room", { permanent: true });
    return members;
  };
  const replyTag = (target: ChatTarget): string[][] => (target.replyToMessageId ? [["e", target.replyToMessageId, "", "reply"]] : []);

  /** Publishes each wrap; the refusals of those no relay took. */
  async function publishAll(events: readonly NostrEvent[]): Promise<PublishRefusal[]> {
    const results = await Promise.all(events.map((e) => deps.relays.publish(e)));
    return results.flatMap((r) => (r.accepted.length > 0 ? [] : r.refused.length > 0 ? r.refused : [{ relay: "none", reason: "error: no relay" }]));
  }

  /** A NIP-17 message to every member of the room, and the bot's own copy. */
  async function sendRumor(members: readonly string[], template: RumorTemplate): Promise<SendReceipt> {
    const rumor = nip59.createRumor({ ...template, tags: [...members.map((p) => ["p", p]), ...template.tags] }, deps.secretKey);
    const wraps = members.map((m) => nip59.createWrap(nip59.createSeal(rumor, deps.secretKey, m), m));
    const refused = await publishAll(wraps);
    if (refused.length > 0) throw refusalError(refused);
    deps.sent(rumor.id);
    // The bot's copy is best effort: the people have the message.
    await publishAll([nip59.createWrap(nip59.createSeal(rumor, deps.secretKey, deps.publicKey), deps.publicKey)]);
    return { messageId: rumor.id };
  }

  async function sendNip04(to: string, target: ChatTarget, text: string): Promise<SendReceipt> {
    const event = finalizeEvent(
      {
        kind: 4,
        created_at: Math.floor(deps.clock.now() / 1000),
        tags: [["p", to], ...(target.replyToMessageId ? [["e", target.replyToMessageId]] : [])],
        content: nip04.encrypt(deps.secretKey, to, text),
      },
      deps.secretKey,
    );
    const refused = await publishAll([event]);
    if (refused.length > 0) throw refusalError(refused);
    deps.sent(event.id);
    return { messageId: event.id };
  }

  return {
    async send(target: ChatTarget, text: string): Promise<SendReceipt> {
      const members = membersOf(target);
      const [only] = members;
      if (members.length === 1 && only && deps.protocolOf(only) === "nip04") return sendNip04(only, target, text);
      return sendRumor(members, { kind: 14, content: text, tags: replyTag(target) });
    },

    /** A file as a NIP-17 kind 15: encrypted, uploaded, its key in the (encrypted) message. */
    async sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt> {
      const members = membersOf(target);
      if (!deps.blossom) throw new SendError("no Blossom server is configured for files", { permanent: true });
      const limit = NOSTR_FILE_LIMITS[file.kind];
      if (file.data.length > limit) throw new SendError(`the file is larger than ${limit} bytes`, { permanent: true });
      const sealed = encryptFile(file.data);
      const uploaded = await deps.blossom.upload(sealed.data, file.fileName);
      return sendRumor(members, {
        kind: 15,
        content: uploaded.url,
        tags: [
          ...replyTag(target),
          ["file-type", file.mimeType],
          ["encryption-algorithm", "aes-gcm"],
          ["decryption-key", sealed.key],
          ["decryption-nonce", sealed.nonce],
          ["x", uploaded.sha256],
          ["ox", sha256Hex(file.data)],
          ["size", String(sealed.data.length)],
          ["name", file.fileName],
        ],
      });
    },
  };
}

/** Every relay refused: one SendError the core's retry policy reads. */
export function refusalError(refused: readonly PublishRefusal[]): SendError {
  const reasons = refused.map((r) => r.reason);
  const summary = refused.map((r) => `${r.relay}: ${r.reason.slice(0, 120)}`).join("; ") || "no relay";
  if (reasons.some((r) => r.startsWith("rate-limited:")))
    return new SendError(`relays are rate-limiting (${summary})`, { permanent: false, retryAfterMs: RATE_LIMIT_WAIT_MS });
  const permanent = reasons.length > 0 && reasons.every((r) => /^(blocked|invalid|restricted|pow):/.test(r));
  return new SendError(`no relay took the message (${summary})`, { permanent });
}
