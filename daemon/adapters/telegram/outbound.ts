/**
 * Replies on Telegram: Markdown rendered as Telegram HTML, sent or edited in
 * place, and the typing indicator. The core splits long replies (measuring
 * with `measure`) and retries failures; here each call is one Bot API request,
 * or two when Telegram refuses the HTML's entities and the text goes again as
 * plain text (`sendRendered`, shared by send and edit).
 */
import { type Api, InputFile } from "grammy";
import type { Logger } from "pino";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { ChatTarget, FileLimits, OutboundFile, SendOptions, SendReceipt, TextFormat } from "../../vocabulary/adapter.js";
import { describe, isEntityError, isNotModified, type Scrub, TelegramAdapterError, toAdapterError } from "./errors.js";
import { telegramMarkdownToHtml, telegramVisibleLength } from "./markdown.js";
import { TELEGRAM_REACTIONS } from "./config.js";
import { GENERAL_TOPIC_ID } from "./inbound.js";

/** Streaming: at most one send or edit a second per chat (Telegram's flood limits start about there). */
export const TELEGRAM_LIMITS = { maxMessageLength: 4096, typingRefreshMs: 4500, minEditIntervalMs: 1000 } as const;

/** The Bot API's upload limits: photos 10 MB, other files 50 MB. */
export const TELEGRAM_FILE_LIMITS: FileLimits = { photo: 10_000_000, voice: 50_000_000, document: 50_000_000 };

export interface TelegramOutboundDeps {
  api: Api;
  /** The adapter's logger (entity refusals at debug, typing failures at debug). */
  log: Logger;
  scrub: Scrub;
  /** Whether a group reply notifies the person it quotes; false sends it silently (`disable_notification`). Default true. */
  replyNotifies?: boolean;
}

export interface TelegramOutbound {
  measure(text: string, format: TextFormat): number;
  send(target: ChatTarget, text: string, options: SendOptions): Promise<SendReceipt>;
  edit(target: ChatTarget, messageId: string, text: string, options: SendOptions): Promise<void>;
  sendTyping(target: ChatTarget): Promise<void>;
  sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt>;
  react(target: ChatTarget, messageId: string, emoji: string, options: { remove: boolean }): Promise<void>;
}

/** One Bot API call that puts `text` on screen, with `parse_mode: "HTML"` or as plain text. */
type Deliver<T> = (text: string, html: boolean) => Promise<T>;

/** What a send or edit is, for the error message and the log. */
type Kind = "sendMessage" | "editMessageText";
const plainFallback: Record<Kind, string> = { sendMessage: "sending plain text", editMessageText: "editing to plain text" };

/** Markdown as Telegram HTML, and the length Telegram counts of it. */
interface Rendered {
  html: string;
  visible: number;
}

/**
 * The last texts rendered: the core measures each chunk (`measure`) and then
 * sends it, so every chunk was rendered twice, a measurable share of a turn.
 * A chunk is at most 4096 characters; 64 of them cover the chunks of the
 * replies in flight at once without holding much.
 */
const renderedTexts = new BoundedMap<string, Rendered>(64);

function render(markdown: string): Rendered {
  let rendered = renderedTexts.get(markdown);
  if (rendered === undefined) {
    const html = telegramMarkdownToHtml(markdown);
    rendered = { html, visible: telegramVisibleLength(html) };
    renderedTexts.set(markdown, rendered);
  }
  return rendered;
}

/** The visible length Telegram counts: after entity parsing for Markdown, the raw text otherwise. */
export const measureTelegram = (text: string, format: TextFormat): number => (format === "markdown" ? render(text).visible : text.length);

/** The HTML to try first, when `text` is Markdown that renders within the limit (Telegram counts after parsing). */
function htmlFor(text: string, options: SendOptions): string | undefined {
  if (options.format !== "markdown") return undefined;
  const { html, visible } = render(text);
  return html.trim() && visible <= TELEGRAM_LIMITS.maxMessageLength ? html : undefined;
}

/**
 * In groups the reply quotes the message it answers (and so lands in the right
 * forum topic); Telegram notifies the person quoted, unless the channel sends
 * replies silently.
 */
export function replyParameters(target: ChatTarget, notify = true) {
  const id = target.replyToMessageId;
  const thread = threadParameters(target);
  if (target.chatType !== "group" || !id || !/^\d+$/.test(id)) return thread;
  return { ...thread, reply_parameters: { message_id: Number(id), allow_sending_without_reply: true }, ...(notify ? {} : { disable_notification: true }) };
}

/**
 * Every send into a forum topic names it: a quoted message would carry the
 * reply there, but typing, a reply whose quote is gone and the later parts of
 * a long reply would otherwise land in General. General itself is never named
 * (Telegram refuses `message_thread_id: 1`): a send without one goes there.
 */
export function threadParameters(target: Pick<ChatTarget, "threadId">): { message_thread_id?: number } {
  const id = target.threadId === undefined ? Number.NaN : Number(target.threadId);
  return Number.isSafeInteger(id) && id > GENERAL_TOPIC_ID ? { message_thread_id: id } : {};
}

export function createTelegramOutbound({ api, log, scrub, replyNotifies = true }: TelegramOutboundDeps): TelegramOutbound {
  /**
   * HTML first (when the text is Markdown and renders within the limit), plain
   * text when there is no HTML or Telegram refuses its entities. Any other
   * refusal becomes a `TelegramAdapterError`.
   */
  async function sendRendered<T>(kind: Kind, text: string, options: SendOptions, deliver: Deliver<T>): Promise<T> {
    const html = htmlFor(text, options);
    if (html !== undefined) {
      try {
        return await deliver(html, true);
      } catch (error) {
        if (!isEntityError(error)) throw toAdapterError(kind, error, scrub);
        log.debug({ err: describe(error, scrub) }, `telegram refused the HTML entities; ${plainFallback[kind]}`);
      }
    }
    try {
      return await deliver(text, false);
    } catch (error) {
      throw toAdapterError(kind, error, scrub);
    }
  }

  return {
    measure: measureTelegram,

    async send(target, text, options) {
      const reply = replyParameters(target, replyNotifies);
      const sent = await sendRendered("sendMessage", text, options, (body, html) =>
        api.sendMessage(target.chatId, body, html ? { parse_mode: "HTML", ...reply } : reply),
      );
      return { messageId: String(sent.message_id) };
    },

    async edit(target, messageId, text, options) {
      const id = Number(messageId);
      if (!Number.isSafeInteger(id)) throw new TelegramAdapterError({ message: "telegram editMessageText: not a message id", status: 400 });
      await sendRendered("editMessageText", text, options, async (body, html) => {
        try {
          await api.editMessageText(target.chatId, id, body, html ? { parse_mode: "HTML" } : undefined);
        } catch (error) {
          // The message already shows this text: the edit's purpose is met.
          if (!isNotModified(error)) throw error;
        }
      });
    },

    async sendFile(target, file) {
      const input = new InputFile(file.data, file.fileName);
      const other = replyParameters(target, replyNotifies);
      const [method, send] =
        file.kind === "photo"
          ? (["sendPhoto", () => api.sendPhoto(target.chatId, input, other)] as const)
          : file.kind === "voice"
            ? (["sendVoice", () => api.sendVoice(target.chatId, input, other)] as const)
            : (["sendDocument", () => api.sendDocument(target.chatId, input, other)] as const);
      try {
        const sent = await send();
        return { messageId: String(sent.message_id) };
      } catch (error) {
        throw toAdapterError(method, error, scrub);
      }
    },

    async react(target, messageId, emoji, { remove }) {
      const id = Number(messageId);
      if (!Number.isSafeInteger(id)) throw new TelegramAdapterError({ message: "telegram setMessageReaction: not a message id", status: 400 });
      // A bot holds one reaction per message: setting one replaces it, an empty list removes it.
      const reaction = remove ? [] : [{ type: "emoji" as const, emoji: checkedReaction(emoji) }];
      await api.setMessageReaction(target.chatId, id, reaction).catch((error: unknown) => {
        throw toAdapterError("setMessageReaction", error, scrub);
      });
    },

    async sendTyping(target) {
      try {
        await api.sendChatAction(target.chatId, "typing", threadParameters(target));
      } catch (error) {
        log.debug({ err: describe(error, scrub) }, "telegram typing failed (ignored)");
      }
    },
  };
}

type TelegramReaction = Parameters<Api["setMessageReaction"]>[2][number] & { type: "emoji" };

/** Refuses, without calling Telegram, a reaction outside the Bot API's list. */
function checkedReaction(emoji: string): TelegramReaction["emoji"] {
  const allowed = [...TELEGRAM_REACTIONS].find((r) => r === emoji);
  if (!allowed) throw new TelegramAdapterError({ message: "telegram setMessageReaction: not a reaction Telegram lets bots set", status: 400 });
  return allowed as TelegramReaction["emoji"];
}
