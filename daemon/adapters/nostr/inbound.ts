/**
 * A decrypted direct message as the core's `InboundMessage`: pure, no I/O.
 * Chats are direct: NIP-17's multi-recipient messages (a "room" made of its
 * participants) are not answered (docs/platforms.md says why), and only the
 * text kinds are (kind 14 in a gift wrap, kind 4).
 */
import type { InboundMessage } from "../../vocabulary/adapter.js";

/** Which private-message scheme a person used: answered in the same one. */
export type DmProtocol = "nip17" | "nip04";

/** What connection.ts hands over once an event is verified and decrypted. */
export interface DirectMessageView {
  protocol: DmProtocol;
  /** The message's id: the rumor's (NIP-17; one message in many wraps) or the event's (NIP-04). */
  id: string;
  kind: number;
  /** The author's public key (NIP-17: the seal's signer, checked equal to the rumor's pubkey). */
  sender: string;
  /** The `p` tags: the recipients. */
  recipients: string[];
  content: string;
  /** Seconds, as the message says (the rumor's own time, not the wrap's randomised one). */
  createdAt: number;
}

export interface TranslateContext {
  accountId: string;
  /** The bot's public key (hex). */
  self: string;
  onIgnored(reason: string): void;
}

export function translateMessage(view: DirectMessageView, context: TranslateContext): InboundMessage | undefined {
  if (view.sender === context.self) return ignored(context, "own message");
  const expectedKind = view.protocol === "nip17" ? 14 : 4;
  if (view.kind !== expectedKind) return ignored(context, `kind ${view.kind}`);
  const others = [...new Set(view.recipients)].filter((p) => p !== context.self && p !== view.sender);
  if (!view.recipients.includes(context.self)) return ignored(context, "not addressed to the bot");
  if (others.length > 0) return ignored(context, "multi-recipient message (group chats are not supported)");
  return {
    platform: "nostr",
    accountId: context.accountId,
    chatId: view.sender,
    chatType: "direct",
    userId: view.sender,
    messageId: view.id,
    text: view.content,
    sentAt: view.createdAt * 1000,
  };
}

function ignored(context: TranslateContext, reason: string): undefined {
  context.onIgnored(reason);
  return undefined;
}
