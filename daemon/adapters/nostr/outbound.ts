/**
 * Replies out: one event per chunk (Nostr events cannot be edited, so a reply
 * is sent whole, split by size by the core), in the scheme the person last
 * used: a NIP-17 gift wrap (kind 14 sealed and wrapped, NIP-44) or a NIP-04
 * kind 4. Published to every relay; it is sent when one accepted it. When all
 * refuse, the relays' machine-readable prefixes (NIP-01 `OK false`) decide:
 * "rate-limited:" waits and is tried again, "blocked:"/"invalid:"/"restricted:"
 * are permanent, anything else is transient.
 */
import * as nip04 from "nostr-tools/nip04";
import * as nip17 from "nostr-tools/nip17";
import { finalizeEvent, type NostrEvent } from "nostr-tools/pure";
import type { Clock } from "../../../shared/clock.js";
import { type AdapterLimits, type ChatTarget, SendError, type SendReceipt } from "../../vocabulary/adapter.js";
import type { PublishRefusal, RelaySet } from "./connection.js";
import type { DmProtocol } from "./inbound.js";

/**
 * A NIP-44 plaintext is at most 65 535 bytes, and a gift wrap encrypts the seal,
 * which holds the encrypted rumor (base64 twice over): the rumor's text stays well
 * within that at 16 000 bytes of JSON-escaped text.
 */
export const NOSTR_LIMITS: AdapterLimits = { maxMessageLength: 16_000, typingRefreshMs: 0 };

/** What a relay's rate limit is waited before the next try: relays say no time (NIP-01 has no Retry-After). */
export const RATE_LIMIT_WAIT_MS = 5_000;

/** The size the events will carry: the text's UTF-8 bytes once JSON-escaped. */
export const measureNostr = (text: string): number => Buffer.byteLength(JSON.stringify(text)) - 2;

export interface OutboundDeps {
  relays: RelaySet;
  secretKey: Uint8Array;
  clock: Clock;
  /** The scheme the person last wrote in (undefined: never wrote; NIP-17 then). */
  protocolOf(pubkey: string): DmProtocol | undefined;
}

export function createNostrOutbound(deps: OutboundDeps) {
  function eventFor(target: ChatTarget, text: string): NostrEvent {
    const to = target.chatId;
    if (deps.protocolOf(to) === "nip04") {
      return finalizeEvent(
        {
          kind: 4,
          created_at: Math.floor(deps.clock.now() / 1000),
          tags: [["p", to], ...(target.replyToMessageId ? [["e", target.replyToMessageId]] : [])],
          content: nip04.encrypt(deps.secretKey, to, text),
        },
        deps.secretKey,
      );
    }
    const replyTo = target.replyToMessageId ? { eventId: target.replyToMessageId } : undefined;
    return nip17.wrapEvent(deps.secretKey, { publicKey: to }, text, undefined, replyTo);
  }

  return {
    async send(target: ChatTarget, text: string): Promise<SendReceipt> {
      if (!/^[0-9a-f]{64}$/.test(target.chatId)) throw new SendError("not a Nostr public key", { permanent: true });
      const event = eventFor(target, text);
      const { accepted, refused } = await deps.relays.publish(event);
      if (accepted.length > 0) return { messageId: event.id };
      throw refusalError(refused);
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
