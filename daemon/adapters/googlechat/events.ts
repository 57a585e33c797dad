/**
 * What the app does with one verified event body: translate it (inbound.ts),
 * hand it over (hand-over.ts) and say what to answer Chat. A message the core
 * took is answered 200: with the reply itself when it is ready within the
 * sync window (sync-replies.ts), else empty (the reply follows through the
 * API). A message the core could not take (its journal failed) is answered
 * 503: Chat does not post it again, and tells the person the app did not
 * answer. A button tap (CARD_CLICKED, as verified as any event) is handed over
 * like a message and answered empty when taken (the core then closes the
 * question); a tap the core did not take as the answer is answered with a
 * message to the person who tapped (only they see it in a space).
 */
import type { Logger } from "pino";
import type { AcceptOutcome, InboundMessage } from "../../vocabulary/adapter.js";
import { jsonAnswer, type WebhookAnswer } from "../webhook.js";
import { type ChatAttachment, ChatEvent, translateMessage } from "./inbound.js";
import type { SyncReplies } from "./sync-replies.js";

export interface ChatEventDeps {
  accountId: string;
  now(): number;
  log: Logger;
  redact(text: string): string;
  take(message: InboundMessage, files: readonly ChatAttachment[]): Promise<AcceptOutcome | undefined>;
  /** Absent: every reply goes through the API (a node keeping events for another). */
  replies?: SyncReplies;
}

const EMPTY = jsonAnswer(200, {});
const NOT_TAKEN = jsonAnswer(503, { error: "not taken; try again" });

/** One verified event body; `signal` aborts when Chat closed the request (its answer would reach nobody). */
export async function handleChatEvent(deps: ChatEventDeps, body: unknown, signal?: AbortSignal): Promise<WebhookAnswer> {
  const parsed = ChatEvent.safeParse(body);
  if (!parsed.success) {
    deps.log.debug("google chat payload ignored (not an event this bridge reads)");
    return EMPTY;
  }
  const translation = translateMessage(parsed.data, deps.accountId, deps.now());
  if (translation.kind === "ignore") {
    deps.log.debug({ type: parsed.data.type, reason: translation.reason }, "google chat event is not a turn");
    return EMPTY;
  }
  const { message } = translation;
  let outcome: AcceptOutcome | undefined;
  try {
    outcome = await deps.take(message, translation.kind === "message" ? translation.files : []);
  } catch (error) {
    deps.log.warn(
      { chatId: message.chatId, err: deps.redact(error instanceof Error ? error.message : String(error)) },
      "google chat message not taken by the core; answered 503",
    );
    return NOT_TAKEN;
  }
  if (translation.kind === "tap") return tapAnswer(message, outcome);
  if (outcome?.status !== "accepted" || !deps.replies) return EMPTY;
  const answer = await deps.replies.wait(message.messageId, signal);
  if (signal?.aborted) deps.log.info({ chatId: message.chatId }, "google chat closed the request before the reply: it goes through the API");
  if (!answer) return EMPTY;
  return { ...jsonAnswer(200, answer.body), sent: answer.written };
}

/** A tap taken: nothing to show (the card changes once the question closes); else why not, to the one who tapped. */
function tapAnswer(message: InboundMessage, outcome: AcceptOutcome | undefined): WebhookAnswer {
  if (outcome?.status !== "duplicate" && outcome?.status !== "refused") return EMPTY;
  const text = outcome.status === "refused" && outcome.reason === "not_yours" ? "This question is not yours to answer." : "Already answered.";
  return jsonAnswer(200, {
    actionResponse: { type: "NEW_MESSAGE" },
    text,
    // A private message exists in spaces only; in a direct message only the person sees it anyway.
    ...(message.chatType === "group" ? { privateMessageViewer: { name: message.userId } } : {}),
  });
}
