/**
 * A decrypted private message as the core's `InboundMessage`: pure, no I/O.
 *
 * NIP-17 chat rooms: the set of the author's key and the rumor's `p` tags is
 * the room. The bot is one member; the others, sorted and joined by commas,
 * are the chat id (one person: a direct chat, the chat id being their key, as
 * before; several: a group), so replies go back to the same set and a room
 * whose members change is a new chat, as NIP-17 says. Kinds read: 14 (text)
 * and 15 (a file: the content is its URL, the tags say how to decrypt it) in a
 * gift wrap, and NIP-04's kind 4 (direct only).
 */
import type { InboundMessage } from "../../vocabulary/adapter.js";
import type { DeclaredFile } from "../hand-over.js";
import { extensionFor } from "../file-extensions.js";

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
  /** The rumor's tags (NIP-17): a reply's `e`, a file's keys, a room's `subject`. */
  tags?: string[][];
}

/** A NIP-17 kind 15 file, as its tags declare it (fetched and decrypted in files.ts). */
export interface NostrFileRef extends DeclaredFile {
  url: string;
  mimeType: string | undefined;
  /** Absent: the file is not encrypted. */
  algorithm: string | undefined;
  key: string | undefined;
  nonce: string | undefined;
  /** `x`: the SHA-256 of the file as served (the encrypted bytes, as Blossom addresses it). */
  hash: string | undefined;
  /** `ox`: the SHA-256 of the decrypted file, where the sender gave it. */
  originalHash: string | undefined;
}

export interface TranslateContext {
  accountId: string;
  /** The bot's public key (hex). */
  self: string;
  /** The bot's `npub1...` (a `nostr:npub1...` in a room's message addresses it, NIP-27). */
  npub: string;
  /** Names people call the bot by in rooms. */
  names: readonly string[];
  /** Whether `id` is a message the bot sent (a reply to it addresses the bot). */
  sentByBot(id: string): boolean;
  onIgnored(reason: string): void;
}

export interface Translated {
  message: InboundMessage;
  files: NostrFileRef[];
}

const HEX_KEY = /^[0-9a-f]{64}$/;

/** The chat id of the room made of these members (the bot left out): one member is a direct chat. */
export const roomChatId = (members: readonly string[]): string => [...new Set(members)].sort().join(",");

/** The members a chat id names, or undefined when it is not one this adapter made. */
export function roomMembers(chatId: string): string[] | undefined {
  const members = chatId.split(",");
  return members.length > 0 && members.every((m) => HEX_KEY.test(m)) && roomChatId(members) === chatId ? members : undefined;
}

export function translateMessage(view: DirectMessageView, context: TranslateContext): Translated | undefined {
  if (view.sender === context.self) return ignored(context, "own message");
  const kinds = view.protocol === "nip17" ? [14, 15] : [4];
  if (!kinds.includes(view.kind)) return ignored(context, `kind ${view.kind}`);
  if (!view.recipients.includes(context.self)) return ignored(context, "not addressed to the bot");
  const members = [view.sender, ...view.recipients].filter((p) => p !== context.self && HEX_KEY.test(p));
  const chatId = roomChatId(members);
  const group = chatId.includes(",");
  if (group && view.protocol !== "nip17") return ignored(context, "multi-recipient NIP-04 message");
  const tags = view.tags ?? [];
  const files = view.kind === 15 ? fileOf(view, tags) : [];
  if (view.kind === 15 && files.length === 0) return ignored(context, "file message without a usable URL");
  const raw = view.kind === 15 ? "" : view.content;
  const message: InboundMessage = {
    platform: "nostr",
    accountId: context.accountId,
    chatId,
    chatType: group ? "group" : "direct",
    userId: view.sender,
    messageId: view.id,
    text: group ? withoutLeadingName(raw, context) : raw,
    sentAt: view.createdAt * 1000,
  };
  if (group) message.mentioned = addressesBot(raw, tags, context);
  return { message, files };
}

/** A room's message addresses the bot when it names it (`nostr:npub1...`, a configured name) or replies to one of its messages. */
function addressesBot(text: string, tags: string[][], context: TranslateContext): boolean {
  if (text.toLowerCase().includes(`nostr:${context.npub}`)) return true;
  if (tags.some((t) => t[0] === "e" && typeof t[1] === "string" && context.sentByBot(t[1]))) return true;
  return context.names.some((name) => new RegExp(`(^|[^\\w])@?${escapeRegExp(name)}($|[^\\w])`, "i").test(text));
}

/** "nostr:npub1... do this", "@helper: do this" -> "do this". */
function withoutLeadingName(text: string, context: TranslateContext): string {
  for (const name of [`nostr:${context.npub}`, ...context.names]) {
    const m = new RegExp(`^\\s*@?${escapeRegExp(name)}\\s*[:,]?\\s*`, "i").exec(text);
    if (m && m[0].length > 0) return text.slice(m[0].length);
  }
  return text;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function fileOf(view: DirectMessageView, tags: string[][]): NostrFileRef[] {
  const tag = (name: string) => tags.find((t) => t[0] === name)?.[1];
  let url: URL;
  try {
    url = new URL(view.content.trim());
  } catch {
    return [];
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.username || url.password) return [];
  const mimeType = tag("file-type")?.toLowerCase();
  const size = Number(tag("size"));
  return [
    {
      url: url.href,
      fileName: fileNameOf(tag("name"), url, mimeType),
      ...(Number.isSafeInteger(size) && size >= 0 ? { size } : {}),
      mimeType,
      algorithm: tag("encryption-algorithm")?.toLowerCase(),
      key: tag("decryption-key"),
      nonce: tag("decryption-nonce"),
      hash: tag("x")?.toLowerCase(),
      originalHash: tag("ox")?.toLowerCase(),
    },
  ];
}

/** A safe base name: the sender's `name` tag where there is one, else one made from the URL's last part and the type. */
function fileNameOf(name: string | undefined, url: URL, mimeType: string | undefined): string {
  const clean = (s: string) =>
    (s.split(/[\\/]/).pop() ?? "")
      .replace(/[\u0000-\u001f\u007f]/g, "")
      .trim()
      .slice(0, 200);
  const given = name ? clean(name) : "";
  if (given && given !== "." && given !== "..") return given;
  const stem =
    (url.pathname.split("/").pop() ?? "")
      .replace(/\.[^.]*$/, "")
      .replace(/[^\w-]/g, "")
      .slice(0, 16) || "file";
  const prefix = mimeType?.startsWith("audio/") ? "voice" : "nostr";
  return `${prefix}-${stem}.${extensionFor(mimeType)}`;
}

function ignored(context: TranslateContext, reason: string): undefined {
  context.onIgnored(reason);
  return undefined;
}
