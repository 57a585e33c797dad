/**
 * Replies to LINE through `@line/bot-sdk`'s MessagingApiClient. LINE cannot
 * edit a message, so a reply goes whole: one core chunk is one call of up to
 * five text objects (text.ts). Which call:
 *
 * - the reply token of the message answered, while it lives (LINE: it may be
 *   invalid after a minute) and was not used (single use): free of charge;
 * - otherwise a push message, which counts against the account's monthly
 *   quota. Every push carries an `X-Line-Retry-Key` derived from what it
 *   sends (account, chat, message answered, how many sends answered it
 *   before, text), so a push retried after a lost answer, or by the next life
 *   after a kill -9, is answered 409 by LINE instead of arriving twice: that
 *   409 counts as sent.
 *
 * A reply call whose answer was lost leaves its token "uncertain": the retry
 * tries the token again, and LINE's "Invalid reply token" for a token still
 * within its life then means the first call went through. Past its life the
 * retry is pushed (a rare duplicate rather than a lost answer).
 *
 * 429 comes back as a transient SendError (Retry-After when LINE sends it);
 * the month's quota used up ("You have reached your monthly limit") is
 * permanent. Quote tokens: the first message answering a person's message
 * quotes it. The loading animation shows in one-to-one chats only.
 */
import { createHash } from "node:crypto";
import { HTTPFetchError, type messagingApi } from "@line/bot-sdk";
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import { SendError, type AdapterLimits, type ChatTarget, type SendReceipt, type TextFormat } from "../../vocabulary/adapter.js";
import { CALL_MAX, MESSAGES_PER_CALL, renderLineText, splitForLine } from "./text.js";

/** LINE says a reply token may be invalid after a minute; a call started later than this goes by push. */
export const REPLY_TOKEN_LIFE_MS = 50_000;
/** The loading animation lasts this long (LINE: 5-60 s, a multiple of 5) and is renewed before it ends. */
const LOADING_SECONDS = 20;
/** How often the push quota is looked up at most (after pushes). */
const QUOTA_CHECK_EVERY_MS = 10 * 60 * 1000;

export const LINE_LIMITS = { maxMessageLength: CALL_MAX, typingRefreshMs: 15_000, minEditIntervalMs: 1000 } satisfies AdapterLimits;

/** What a message brought that its answer may use. */
interface Answerable {
  replyToken: string | undefined;
  quoteToken: string | undefined;
  receivedAt: number;
  /** "uncertain": a reply call with it got no answer (it may have been used). */
  token: "fresh" | "used" | "uncertain";
  /** Sends that answered it so far (part of each push's retry key). */
  sent: number;
  quoted: boolean;
}

/** Sends counted, for /metrics and the docs' promise: how many went free (reply) and how many cost quota (push). */
export interface SendCounts {
  reply: number;
  push: number;
}

export interface LineOutboundDeps {
  client: messagingApi.MessagingApiClient;
  accountId: string;
  clock: Clock;
  log: Logger;
  redact(text: string): string;
  /** Warn when the quota left falls below this share (0: never). */
  quotaWarning: number;
  /** Told of each call made (reply or push), for metrics. */
  onSent?(kind: keyof SendCounts): void;
}

export interface LineOutbound {
  /** Remembers a person's message's reply and quote tokens (from the webhook). */
  remember(chatId: string, messageId: string, tokens: { replyToken: string | undefined; quoteToken: string | undefined }): void;
  send(target: ChatTarget, text: string, format: TextFormat): Promise<SendReceipt>;
  /** Sends prepared message objects (text, images, templates) the same way. */
  sendMessages(target: ChatTarget, messages: messagingApi.Message[], keyText: string): Promise<SendReceipt>;
  sendTyping(target: ChatTarget): Promise<void>;
  readonly counts: Readonly<SendCounts>;
}

export function createLineOutbound(deps: LineOutboundDeps): LineOutbound {
  const { client, clock, log } = deps;
  const answerable = new BoundedMap<string, Answerable>(5000);
  const counts: SendCounts = { reply: 0, push: 0 };
  let quotaCheckedAt = Number.NEGATIVE_INFINITY;
  const keyOf = (chatId: string, messageId: string | undefined) => `${chatId}\u0000${messageId ?? ""}`;

  function sent(kind: keyof SendCounts): void {
    counts[kind] += 1;
    deps.onSent?.(kind);
  }

  async function sendMessages(target: ChatTarget, messages: messagingApi.Message[], keyText: string): Promise<SendReceipt> {
    const key = keyOf(target.chatId, target.replyToMessageId);
    const entry = answerable.get(key) ?? { replyToken: undefined, quoteToken: undefined, receivedAt: 0, token: "used", sent: 0, quoted: true };
    answerable.set(key, entry);
    if (!entry.quoted && entry.quoteToken && messages[0]?.type === "text") {
      messages = [{ ...messages[0], quoteToken: entry.quoteToken }, ...messages.slice(1)];
    }
    const viaReply = await tryReply(target, entry, messages);
    let messageId: string | undefined;
    if (viaReply.kind === "sent") {
      messageId = viaReply.messageId;
    } else {
      messageId = await push(target, entry, messages, keyText);
    }
    entry.sent += 1;
    entry.quoted = true;
    return messageId === undefined ? {} : { messageId };
  }

  async function tryReply(
    target: ChatTarget,
    entry: Answerable,
    messages: messagingApi.Message[],
  ): Promise<{ kind: "sent"; messageId: string | undefined } | { kind: "push" }> {
    if (!entry.replyToken || entry.token === "used") return { kind: "push" };
    if (clock.now() - entry.receivedAt > REPLY_TOKEN_LIFE_MS) {
      entry.token = "used";
      return { kind: "push" };
    }
    const wasUncertain = entry.token === "uncertain";
    try {
      const answer = await client.replyMessage({ replyToken: entry.replyToken, messages });
      entry.token = "used";
      sent("reply");
      return { kind: "sent", messageId: answer.sentMessages?.at(-1)?.id };
    } catch (error) {
      if (error instanceof HTTPFetchError && error.status === 400 && /invalid reply token/i.test(error.body)) {
        entry.token = "used";
        if (wasUncertain) {
          // The call whose answer was lost used it: the reply is in the chat.
          log.warn({ chatId: target.chatId }, "line reply token already used by a call whose answer was lost: taken as sent");
          return { kind: "sent", messageId: undefined };
        }
        log.info({ chatId: target.chatId }, "line reply token refused (expired): the answer goes by push");
        return { kind: "push" };
      }
      if (!(error instanceof HTTPFetchError)) entry.token = "uncertain";
      else if (error.status !== 429 && error.status < 500) entry.token = "used";
      else entry.token = "uncertain";
      throw toSendError(error, `line reply in ${target.chatId} failed`, deps.redact);
    }
  }

  async function push(target: ChatTarget, entry: Answerable, messages: messagingApi.Message[], keyText: string): Promise<string | undefined> {
    const retryKey = retryKeyOf([deps.accountId, target.chatId, target.replyToMessageId ?? "", String(entry.sent), keyText]);
    try {
      const answer = await client.pushMessage({ to: target.chatId, messages }, retryKey);
      sent("push");
      void checkQuota();
      return answer.sentMessages?.at(-1)?.id;
    } catch (error) {
      if (error instanceof HTTPFetchError && error.status === 409) {
        // LINE accepted this very push before (its answer was lost, or a previous life sent it).
        log.info({ chatId: target.chatId }, "line push already accepted under its retry key: not sent twice");
        return undefined;
      }
      throw toSendError(error, `line push to ${target.chatId} failed`, deps.redact);
    }
  }

  /** Warns when the month's push quota runs low (LINE's quota API; a "none" quota has no limit). */
  async function checkQuota(): Promise<void> {
    if (deps.quotaWarning <= 0 || clock.now() - quotaCheckedAt < QUOTA_CHECK_EVERY_MS) return;
    quotaCheckedAt = clock.now();
    try {
      const quota = await client.getMessageQuota();
      if (quota.type !== "limited" || quota.value === undefined || quota.value <= 0) return;
      const { totalUsage } = await client.getMessageQuotaConsumption();
      const left = quota.value - totalUsage;
      if (left / quota.value < deps.quotaWarning) {
        log.warn(
          { quota: quota.value, used: totalUsage, left },
          "line push-message quota running low: replies past the reply token's minute will fail once it is used up",
        );
      }
    } catch (error) {
      log.debug({ err: deps.redact(error instanceof Error ? error.message : String(error)) }, "line quota not read");
    }
  }

  return {
    counts,
    remember(chatId, messageId, tokens) {
      answerable.set(keyOf(chatId, messageId), { ...tokens, receivedAt: clock.now(), token: "fresh", sent: 0, quoted: false });
    },
    send(target, text, format) {
      const pieces = splitForLine(renderLineText(text, format)).slice(0, MESSAGES_PER_CALL);
      return sendMessages(
        target,
        pieces.map((piece) => ({ type: "text", text: piece })),
        text,
      );
    },
    sendMessages,
    async sendTyping(target) {
      // LINE shows the animation in one-to-one chats only.
      if (target.chatType !== "direct") return;
      await client.showLoadingAnimation({ chatId: target.chatId, loadingSeconds: LOADING_SECONDS }).then(
        () => undefined,
        (error: unknown) => log.debug({ err: deps.redact(error instanceof Error ? error.message : String(error)) }, "line loading animation failed"),
      );
    },
  };
}

/** A UUID (the form LINE asks of a retry key) derived from what is sent, so the same send gets the same key. */
export function retryKeyOf(parts: readonly string[]): string {
  const hex = createHash("sha256").update(parts.join("\u0000")).digest("hex");
  // Version 4 and variant bits set, as a UUID validator expects.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((Number.parseInt(hex[16] ?? "0", 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** A failed LINE call as the core's SendError, without a token in it. */
export function toSendError(error: unknown, where: string, redact: (text: string) => string): SendError {
  if (error instanceof HTTPFetchError) {
    const detail = lineMessageOf(error.body);
    const message = redact(`${where}: HTTP ${error.status}${detail ? ` ${detail}` : ""}`);
    if (error.status === 429) {
      const monthly = /monthly limit/i.test(detail ?? "");
      const retryAfter = Number(error.headers.get("retry-after"));
      return new SendError(message, {
        permanent: monthly,
        status: 429,
        ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
      });
    }
    return new SendError(message, { permanent: error.status >= 400 && error.status < 500, status: error.status });
  }
  return new SendError(redact(`${where}: ${error instanceof Error ? error.message : String(error)}`), { permanent: false });
}

function lineMessageOf(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    return parsed && typeof parsed === "object" && "message" in parsed && typeof parsed.message === "string" ? parsed.message : undefined;
  } catch {
    return undefined;
  }
}
