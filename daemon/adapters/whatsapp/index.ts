/**
 * WhatsApp channel (Baileys). `createWhatsAppAdapter(config, deps, options)`
 * returns a `ChatAdapter`; tests inject a fake `socketFactory` and
 * `mediaDownloader`, a manual clock (in deps) and seeded `random`.
 */
export {
  createWhatsAppAdapter,
  disconnectCode,
  WHATSAPP_LIMITS,
  WhatsAppAdapterError,
  type WhatsAppAdapterOptions,
  type WhatsAppErrorStatus,
} from "./adapter.js";
export { clearAuthDir, openAuthStore, type AuthStore } from "./auth.js";
export { backoffCeiling, DEFAULT_BACKOFF, reconnectDelay, type BackoffPolicy } from "./backoff.js";
export { markdownToWhatsApp } from "./format.js";
export { chatIdFromJid, toSendJid, userIdFromJid } from "./ids.js";
export { translateMessage, type InboundDraft, type Translation } from "./inbound.js";
export {
  baileysMediaDownloader,
  baileysSocketFactory,
  type MediaDownloader,
  type SocketFactory,
  type WhatsAppSocket,
  type WhatsAppSocketConfig,
  type WhatsAppSocketEvents,
} from "./socket.js";
