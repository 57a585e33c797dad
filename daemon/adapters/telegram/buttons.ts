/**
 * Questions with buttons on Telegram: an inline keyboard, one button per
 * option; a tap is a `callback_query`, handed to the core as an inbound
 * message with `answers` and answered (`answerCallbackQuery`) with what the
 * core said, at once: Telegram shows the person a spinner until then. The
 * question's message is edited to what came of it without a keyboard, which
 * removes the buttons.
 */
import type { Api } from "grammy";
import type { CallbackQuery } from "grammy/types";
import type { Logger } from "pino";
import type { AcceptOutcome, ButtonCapability, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import { describe, type Scrub, toAdapterError } from "./errors.js";
import { chatTypeOf, topicOf } from "./inbound.js";
import { threadParameters } from "./outbound.js";

/** Telegram's limit on `callback_data`, bytes. */
export const CALLBACK_DATA_MAX_BYTES = 64;
/** Two buttons a row while they are short; longer labels one a row. */
const SHORT_LABEL = 16;

/** `q:<question id>:<option number>`; undefined when it would not fit Telegram's 64 bytes. */
export function callbackDataOf(questionId: string, option: number): string | undefined {
  const data = `q:${questionId}:${option}`;
  return Buffer.byteLength(data) <= CALLBACK_DATA_MAX_BYTES ? data : undefined;
}

/** A tap's question and option, or undefined for data that is not the bridge's. */
export function readCallbackData(data: string | undefined): { questionId: string; option: number } | undefined {
  const m = /^q:([A-Za-z0-9_-]{1,50}):(\d{1,2})$/.exec(data ?? "");
  return m ? { questionId: m[1]!, option: Number(m[2]) } : undefined;
}

export function telegramButtons(deps: { api: Api; scrub: Scrub }): ButtonCapability {
  const { api, scrub } = deps;
  return {
    async ask(target, question) {
      const buttons = question.options.map((label, i) => {
        const data = callbackDataOf(question.id, i + 1);
        if (!data) throw toAdapterError("sendMessage", new Error("callback data longer than 64 bytes"), scrub);
        return { text: label.slice(0, 64), callback_data: data };
      });
      const rows: (typeof buttons)[] = [];
      for (const b of buttons) {
        const last = rows.at(-1);
        if (last && last.length < 2 && b.text.length <= SHORT_LABEL && last[0]!.text.length <= SHORT_LABEL) last.push(b);
        else rows.push([b]);
      }
      const text = question.allowText ? `${question.text}\n(Tap an option, or write your own answer.)` : question.text;
      try {
        const sent = await api.sendMessage(target.chatId, text, { ...threadParameters(target), reply_markup: { inline_keyboard: rows } });
        return { messageId: String(sent.message_id) };
      } catch (error) {
        throw toAdapterError("sendMessage", error, scrub);
      }
    },
    async close(target, messageId, _question, outcome) {
      try {
        // No reply_markup: the keyboard goes.
        await api.editMessageText(target.chatId, Number(messageId), outcome);
      } catch (error) {
        throw toAdapterError("editMessageText", error, scrub);
      }
    },
  };
}

/** The tap as the core's inbound message, or undefined when it is not a tap on the bridge's buttons. */
export function translateCallback(query: CallbackQuery, accountId: string, now: number): InboundMessage | undefined {
  const read = readCallbackData(query.data);
  const message = query.message;
  if (!read || !message || query.from.is_bot) return undefined;
  const chatType = message.chat.type === "private" ? "direct" : message.chat.type === "group" || message.chat.type === "supergroup" ? "group" : undefined;
  if (!chatType) return undefined;
  return {
    platform: "telegram",
    accountId,
    chatId: String(message.chat.id),
    chatType,
    ...("text" in message || "date" in message ? topicOfAccessible(message) : {}),
    userId: String(query.from.id),
    userName: query.from.username ?? [query.from.first_name, query.from.last_name].filter(Boolean).join(" "),
    messageId: `cb:${query.id}`,
    text: String(read.option),
    sentAt: now,
    answers: { questionId: read.questionId },
  };
}

const topicOfAccessible = (message: NonNullable<CallbackQuery["message"]>): { threadId?: string } =>
  message.date === 0 ? {} : chatTypeOf(message) ? topicOf(message) : {};

/** What the person who tapped is shown (a short toast), by what the core answered. */
export function callbackAnswerText(outcome: AcceptOutcome): string | undefined {
  if (outcome.status === "accepted") return "Got it.";
  if (outcome.status === "duplicate") return "Already answered.";
  if (outcome.status === "refused") return outcome.reason === "not_yours" ? "This question is not yours to answer." : "Already answered.";
  return undefined;
}

/**
 * Hands a tap to the core and answers the callback query with the outcome.
 * Throws (the update comes again) when the core deferred it; the query is then
 * left unanswered, as a retried update needs its own answer.
 */
export async function handOverTap(
  query: CallbackQuery,
  deps: { api: Api; sink: InboundSink; accountId: string; now: number; log: Logger; scrub: Scrub },
): Promise<void> {
  const { api, sink, log, scrub } = deps;
  const tap = translateCallback(query, deps.accountId, deps.now);
  if (!tap) {
    // Not ours (an old keyboard, another bot's data): end the spinner all the same.
    await api.answerCallbackQuery(query.id).catch(() => {});
    return;
  }
  const outcome = await sink.accept(tap);
  if (!outcome.acknowledge) throw new Error(`tap not taken now (${outcome.reason}); Telegram will deliver it again`);
  const text = callbackAnswerText(outcome);
  await api
    .answerCallbackQuery(query.id, text ? { text } : undefined)
    .catch((error: unknown) => log.debug({ err: describe(error, scrub) }, "telegram answerCallbackQuery failed (the tap is taken)"));
}
