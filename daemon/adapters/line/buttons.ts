/**
 * Questions with buttons on LINE: the question goes as a text message with
 * quick reply buttons, one postback action per option (at most 13, labels
 * at most 20 characters, data at most 300: developers.line.biz, "Quick
 * reply", "Postback action"). A tap comes back as a signed `postback` webhook
 * event, verified like any other, and is handed to the core as an inbound
 * message with `answers`. LINE cannot edit a message, and quick reply buttons
 * go once another message is in the chat: `close` sends what came of the
 * question as a new message, which takes the buttons away.
 */
import type { messagingApi } from "@line/bot-sdk";
import type { ButtonCapability, InboundMessage } from "../../vocabulary/adapter.js";
import { SendError } from "../../vocabulary/adapter.js";
import type { Translation } from "./inbound.js";
import type { LineOutbound } from "./outbound.js";

export const QUICK_REPLY_MAX = 13;
export const LABEL_MAX = 20;

export const postbackDataOf = (questionId: string, option: number): string => `q:${questionId}:${option}`;

/** A tap's question and option, or undefined for data that is not the bridge's. */
export function readPostbackData(data: string): { questionId: string; option: number } | undefined {
  const m = /^q:([A-Za-z0-9_-]{1,100}):(\d{1,2})$/.exec(data);
  return m ? { questionId: m[1]!, option: Number(m[2]) } : undefined;
}

export function lineButtons(outbound: LineOutbound): ButtonCapability {
  return {
    async ask(target, question) {
      if (question.options.length > QUICK_REPLY_MAX) {
        throw new SendError(`line quick reply takes at most ${QUICK_REPLY_MAX} buttons`, { permanent: true });
      }
      const text = question.allowText ? `${question.text}\n(Tap an option, or write your own answer.)` : question.text;
      const message: messagingApi.TextMessage = {
        type: "text",
        text,
        quickReply: {
          items: question.options.map((label, i) => ({
            type: "action",
            action: { type: "postback", label: shorten(label), data: postbackDataOf(question.id, i + 1), displayText: label.slice(0, 300) },
          })),
        },
      };
      return outbound.sendMessages(target, [message], `ask:${question.id}`);
    },
    async close(target, _messageId, question, outcome) {
      await outbound.sendMessages(target, [{ type: "text", text: outcome.slice(0, 5000) }], `close:${question.id}`);
    },
  };
}

/** A postback as the core's tap, or undefined when its data is not the bridge's. */
export function tapOf(postback: Extract<Translation, { kind: "postback" }>, eventId: string, accountId: string): InboundMessage | undefined {
  const read = readPostbackData(postback.data);
  if (!read) return undefined;
  return {
    platform: "line",
    accountId,
    chatId: postback.chat.chatId,
    chatType: postback.chat.chatType,
    userId: postback.userId,
    messageId: `postback-${eventId}`,
    text: String(read.option),
    sentAt: postback.sentAt,
    answers: { questionId: read.questionId },
  };
}

const shorten = (label: string): string => (label.length <= LABEL_MAX ? label : `${label.slice(0, LABEL_MAX - 1)}…`);
