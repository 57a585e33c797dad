/**
 * Questions with buttons on Slack: Block Kit, the question as a section and
 * one button per option in an actions block; a tap is a `block_actions`
 * payload (form-encoded `payload=` to the signed interactivity URL, or a
 * Socket Mode `interactive` envelope), handed to the core as an inbound
 * message with `answers`. Slack wants the payload acknowledged within 3 s and
 * does not send it again, so it is acknowledged once the core has it (or at
 * the budget, as events are); what the person is told beyond the changed
 * message ("Already answered.", "not yours") goes to the payload's
 * `response_url` as an ephemeral message, which Slack shows to that person
 * only (5 uses within 30 minutes).
 */
import type { WebClient } from "@slack/web-api";
import { z } from "zod";
import type { AcceptOutcome, ButtonCapability, InboundMessage } from "../../vocabulary/adapter.js";
import { placeOf, threadOf } from "./inbound.js";
import { toAdapterError } from "./outbound.js";

/** Block Kit's limits: a button's text 75 characters, `action_id` 255, 25 elements in an actions block. */
const BUTTON_TEXT_MAX = 75;
const ACTION_ID_MAX = 255;
const ELEMENTS_MAX = 25;
/** A section's text: Slack's limit is 3,000 characters. */
const SECTION_TEXT_MAX = 3000;

/** `q:<question id>:<option number>`. */
export const actionIdOf = (questionId: string, option: number): string => `q:${questionId}:${option}`;

/** A tap's question and option, or undefined for an action that is not the bridge's. */
export function readActionId(actionId: string): { questionId: string; option: number } | undefined {
  const m = /^q:([A-Za-z0-9_-]{1,80}):(\d{1,2})$/.exec(actionId);
  return m ? { questionId: m[1]!, option: Number(m[2]) } : undefined;
}

/** The blocks of a question: its text, then its buttons. Throws when an option cannot be a Slack button. */
export function questionBlocks(questionId: string, text: string, options: readonly string[]): unknown[] {
  if (options.length > ELEMENTS_MAX) throw new Error(`${options.length} options are more than Slack's ${ELEMENTS_MAX} buttons in one block`);
  const elements = options.map((label, i) => {
    const actionId = actionIdOf(questionId, i + 1);
    if (actionId.length > ACTION_ID_MAX) throw new Error("a button's action_id would be longer than Slack's 255 characters");
    const shown = label.length > BUTTON_TEXT_MAX ? `${label.slice(0, BUTTON_TEXT_MAX - 1)}…` : label;
    return {
      type: "button",
      action_id: actionId,
      value: String(i + 1),
      text: { type: "plain_text", text: shown, emoji: true },
      ...(i === 0 ? { style: "primary" } : {}),
    };
  });
  const shownText = text.length > SECTION_TEXT_MAX ? `${text.slice(0, SECTION_TEXT_MAX - 1)}…` : text;
  return [
    { type: "section", block_id: `q:${questionId}:text`, text: { type: "plain_text", text: shownText, emoji: true } },
    { type: "actions", block_id: `q:${questionId}:options`, elements },
  ];
}

export function slackButtons(deps: { client: WebClient; redact(text: string): string }): ButtonCapability {
  const { client, redact } = deps;
  return {
    async ask(target, question) {
      const { channel, threadTs } = placeOf(target);
      const text = question.allowText ? `${question.text}\n(Tap an option, or write your own answer.)` : question.text;
      const sent = await client.chat
        // `text` is the notification's and screen readers' fallback; the blocks are what the chat shows.
        .postMessage({ channel, text, blocks: questionBlocks(question.id, text, question.options) as never, ...(threadTs ? { thread_ts: threadTs } : {}) })
        .catch((error: unknown) => {
          throw toAdapterError(error, `slack question to ${target.chatId} failed`, redact);
        });
      return typeof sent.ts === "string" ? { messageId: sent.ts } : undefined;
    },
    async close(target, messageId, _question, outcome) {
      const { channel } = placeOf(target);
      // No blocks: the buttons go, the text says what came of the question.
      await client.chat.update({ channel, ts: messageId, text: outcome, blocks: [] }).catch((error: unknown) => {
        throw toAdapterError(error, `slack question update in ${target.chatId} failed`, redact);
      });
    },
  };
}

/** The parts of a `block_actions` payload the bridge reads (Slack's "Interaction payloads" reference). */
export const SlackBlockActions = z.looseObject({
  type: z.literal("block_actions"),
  user: z.looseObject({ id: z.string(), username: z.string().optional(), name: z.string().optional() }),
  container: z.looseObject({ channel_id: z.string().optional(), message_ts: z.string().optional(), thread_ts: z.string().optional() }).optional(),
  channel: z.looseObject({ id: z.string() }).optional(),
  message: z.looseObject({ ts: z.string(), thread_ts: z.string().optional() }).optional(),
  trigger_id: z.string().optional(),
  response_url: z.string().optional(),
  actions: z.array(z.looseObject({ action_id: z.string(), action_ts: z.string().optional() })).min(1),
});
export type SlackBlockActions = z.infer<typeof SlackBlockActions>;

/** The tap as the core's inbound message (the chat the question was asked in), or undefined when it is not a tap on the bridge's buttons. */
export function translateBlockAction(payload: SlackBlockActions, accountId: string, nowMs: number): InboundMessage | undefined {
  const action = payload.actions[0]!;
  const read = readActionId(action.action_id);
  const channel = payload.container?.channel_id ?? payload.channel?.id;
  if (!read || !channel) return undefined;
  const threadTs = payload.container?.thread_ts ?? payload.message?.thread_ts;
  const direct = channel.startsWith("D");
  // The chat and thread as translateMessage names them (the question was asked in the thread its message roots).
  const thread = threadOf(channel, direct, threadTs ?? (direct ? undefined : payload.message?.ts), payload.message?.ts ?? "");
  const { startsThread: _asked, ...where } = thread;
  const name = payload.user.name ?? payload.user.username;
  return {
    platform: "slack",
    accountId,
    ...where,
    chatType: direct ? "direct" : "group",
    ...(direct ? {} : { mentioned: true }),
    userId: payload.user.id,
    ...(name ? { userName: name } : {}),
    messageId: `act-${payload.trigger_id ?? `${payload.user.id}-${action.action_ts ?? nowMs}`}`,
    text: String(read.option),
    sentAt: nowMs,
    answers: { questionId: read.questionId },
  };
}

/** What the person who tapped is told privately, by what the core answered; undefined: nothing (the message changes). */
export function tapAnswerText(outcome: AcceptOutcome | "not_taken" | undefined): string | undefined {
  if (!outcome || outcome === "not_taken") return outcome ? "The bridge could not take your answer just now: tap again in a moment." : undefined;
  if (outcome.status === "accepted") return undefined;
  if (outcome.status === "duplicate") return "Already answered.";
  if (outcome.status === "refused") return outcome.reason === "not_yours" ? "This question is not yours to answer." : "Already answered.";
  return "The bridge could not take your answer just now: tap again in a moment.";
}
