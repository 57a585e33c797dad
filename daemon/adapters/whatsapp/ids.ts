/**
 * WhatsApp identities as the rest of the daemon sees them: a phone account is
 * `+<digits>` (the form people write in the allowlist), a privacy id stays
 * `<digits>@lid`. Device suffixes (`:12`) are dropped so every device of one
 * person maps to one id.
 */
import { isJidGroup, jidDecode, jidEncode, jidNormalizedUser } from "@whiskeysockets/baileys";

const PHONE_SERVERS = new Set(["s.whatsapp.net", "c.us", "hosted"]);

/** `4915112345678:3@s.whatsapp.net` -> `+4915112345678`; `123@lid` -> `123@lid`. */
export function userIdFromJid(jid: string | null | undefined): string | undefined {
  if (!jid) return undefined;
  const decoded = jidDecode(jid);
  if (!decoded?.user) return undefined;
  if (PHONE_SERVERS.has(decoded.server)) return `+${decoded.user}`;
  return jidNormalizedUser(jid) || undefined;
}

/** The chat a reply goes to: groups as they are, people without device suffix. */
export function chatIdFromJid(jid: string): string {
  return isJidGroup(jid) ? jid : jidNormalizedUser(jid) || jid;
}

/** Accepts a JID or a phone number (`+49 151 ...`) and returns a JID to send to. */
export function toSendJid(chatId: string): string {
  if (chatId.includes("@")) return chatId;
  const digits = chatId.replace(/\D/g, "");
  return digits ? jidEncode(digits, "s.whatsapp.net") : chatId;
}

/** The bare user part of a JID (`4915...` or the lid number), as mentions show it in text. */
export function jidUser(jid: string | null | undefined): string | undefined {
  if (!jid) return undefined;
  return jidDecode(jid)?.user || undefined;
}
