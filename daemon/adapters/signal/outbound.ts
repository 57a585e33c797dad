/**
 * Replies out through signal-cli's JSON-RPC: `send` (a quote of the message
 * answered in groups; `editTimestamp` for streamed edits; files as data
 * URIs, a voice note with `voiceNote`), `sendTyping`, `sendReaction`.
 *
 * Edits follow Signal's rules: a message can be edited only within 24 hours
 * and at most 10 times (SIGNAL_MAX_EDITS), every edit naming the ORIGINAL
 * message's timestamp. A streamed reply keeps its last edit for the final
 * text: previews past the ninth are skipped, never the end.
 */
import type { Clock } from "../../../shared/clock.js";
import {
  type AdapterStateStore,
  type ChatTarget,
  type FileLimits,
  type OutboundFile,
  type SendOptions,
  type SendReceipt,
  SendError,
  type TextFormat,
} from "../../vocabulary/adapter.js";
import { SIGNAL_EDIT_WINDOW_MS, SIGNAL_MAX_EDITS } from "./config.js";
import { isProofRequired, toSendError } from "./errors.js";
import { signalMarkdown } from "./markdown.js";
import { messageIdOf, parseMessageId } from "./inbound.js";
import type { RpcCall } from "./rpc.js";
import { z } from "zod";
import type { Logger } from "pino";

const EDITS_KEY = "edits";
const EditRecord = z.object({ sentAt: z.number(), edits: z.number().int().min(0) });

/** The edit counts a previous life kept. */
function keptEdits(kept: unknown): [number, { sentAt: number; edits: number }][] {
  const parsed = z.record(z.string(), EditRecord).safeParse(kept);
  return parsed.success ? Object.entries(parsed.data).map(([ts, r]) => [Number(ts), r]) : [];
}

/**
 * Signal's own clients cut a message body at 2,000 characters and send the rest as a
 * long-text attachment; keeping each chunk within it shows every reply as text.
 */
export const SIGNAL_LIMITS = { maxMessageLength: 2000, typingRefreshMs: 10_000, minEditIntervalMs: 2000 } as const;
/** Signal's attachment limit is 100 MiB; base64 in the JSON-RPC call adds a third, so stay below. */
const MAX_FILE_BYTES = 95 * 1024 * 1024;
export const SIGNAL_FILE_LIMITS: FileLimits = { photo: MAX_FILE_BYTES, voice: MAX_FILE_BYTES, document: MAX_FILE_BYTES };

const SendResult = z.object({ timestamp: z.number() });

export interface OutboundDeps {
  rpc: RpcCall;
  /** Where the edits made per message are kept, so a new life does not exceed Signal's 10. */
  state: AdapterStateStore;
  account: string;
  clock: Clock;
  log: Logger;
}

/** Where a send goes: a person (`recipient`) or a group (`groupId`). */
const addressOf = (target: ChatTarget): Record<string, unknown> => (target.chatType === "group" ? { groupId: target.chatId } : { recipient: [target.chatId] });

export function createSignalOutbound(deps: OutboundDeps) {
  const { rpc, account, clock } = deps;
  /** Edits made per message of ours (by its original timestamp), and when it was sent; kept across restarts. */
  const edited = new Map<number, { sentAt: number; edits: number }>(keptEdits(deps.state.get<unknown>(EDITS_KEY)));
  /** Remembers an edit on disk, forgetting messages past Signal's 24 hours. */
  async function recordEdit(timestamp: number, record: { sentAt: number; edits: number }): Promise<void> {
    edited.set(timestamp, record);
    for (const [ts, r] of edited) if (clock.now() - r.sentAt > SIGNAL_EDIT_WINDOW_MS) edited.delete(ts);
    await deps.state.set(EDITS_KEY, Object.fromEntries([...edited].filter(([, r]) => r.edits > 0)));
  }

  function quoteOf(target: ChatTarget): Record<string, unknown> {
    // In a group the quote shows which message is answered; in a direct chat it is noise.
    if (target.chatType !== "group" || !target.replyToMessageId) return {};
    const quoted = parseMessageId(target.replyToMessageId);
    return quoted ? { quoteTimestamp: quoted.timestamp, quoteAuthor: quoted.author } : {};
  }

  async function sendRaw(params: Record<string, unknown>, what: string): Promise<number> {
    let result: unknown;
    try {
      result = await rpc("send", params);
    } catch (error) {
      const failure = toSendError(error, what);
      // A proof-required challenge waits for the operator; a plain rate limit passes by itself.
      if (isProofRequired(error))
        deps.log.error({ err: failure.message }, "signal: Signal wants a captcha solved before this account sends again; the operator must act");
      else if (failure.status === -5) deps.log.warn({ err: failure.message, retryAfterMs: failure.retryAfterMs }, "signal: rate limited by Signal");
      throw failure;
    }
    const parsed = SendResult.safeParse(result);
    if (!parsed.success) throw new SendError(`${what}: signal-cli answered without a timestamp`, { permanent: false });
    return parsed.data.timestamp;
  }

  /** The message and its styles as signal-cli takes them. */
  function bodyOf(text: string, options: SendOptions): Record<string, unknown> {
    if (options.format === "plain") return { message: text };
    const rendered = signalMarkdown(text);
    return { message: rendered.text, ...(rendered.styles.length ? { textStyle: rendered.styles } : {}) };
  }

  async function send(target: ChatTarget, text: string, options: SendOptions): Promise<SendReceipt> {
    const timestamp = await sendRaw({ ...addressOf(target), ...bodyOf(text, options), ...quoteOf(target) }, "send");
    edited.set(timestamp, { sentAt: clock.now(), edits: 0 });
    return { messageId: messageIdOf(timestamp, account) };
  }

  async function edit(target: ChatTarget, messageId: string, text: string, options: SendOptions): Promise<void> {
    const original = parseMessageId(messageId);
    if (!original || original.author !== account) throw new SendError("edit: not a message this account sent", { permanent: true });
    // A message sent in an earlier life: its edits so far are unknown, so count from its timestamp only.
    const record = edited.get(original.timestamp) ?? { sentAt: original.timestamp, edits: 0 };
    if (clock.now() - record.sentAt > SIGNAL_EDIT_WINDOW_MS) throw new SendError("edit: Signal allows edits only within 24 hours", { permanent: true });
    const final = options.final !== false;
    // Keep the last allowed edit for the final text; previews beyond it are skipped.
    if (!final && record.edits >= SIGNAL_MAX_EDITS - 1) return;
    if (record.edits >= SIGNAL_MAX_EDITS) throw new SendError(`edit: Signal allows at most ${SIGNAL_MAX_EDITS} edits of a message`, { permanent: true });
    await sendRaw({ ...addressOf(target), ...bodyOf(text, options), editTimestamp: original.timestamp }, "edit");
    await recordEdit(original.timestamp, { sentAt: record.sentAt, edits: record.edits + 1 });
  }

  async function sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt> {
    const safeName = file.fileName.replace(/[;,\s]/g, "_");
    const attachment = `data:${file.mimeType};filename=${safeName};base64,${file.data.toString("base64")}`;
    const timestamp = await sendRaw(
      { ...addressOf(target), attachments: [attachment], ...(file.kind === "voice" ? { voiceNote: true } : {}), ...quoteOf(target) },
      "send file",
    );
    return { messageId: messageIdOf(timestamp, account) };
  }

  async function sendTyping(target: ChatTarget): Promise<void> {
    try {
      await rpc("sendTyping", addressOf(target));
    } catch {
      // best effort
    }
  }

  async function react(target: ChatTarget, messageId: string, emoji: string, options: { remove: boolean }): Promise<void> {
    const on = parseMessageId(messageId);
    if (!on) throw new SendError("react: not a Signal message id", { permanent: true });
    try {
      await rpc("sendReaction", {
        ...addressOf(target),
        emoji,
        targetAuthor: on.author,
        targetTimestamp: on.timestamp,
        ...(options.remove ? { remove: true } : {}),
      });
    } catch (error) {
      throw toSendError(error, "react");
    }
  }

  return {
    send,
    edit,
    sendFile,
    sendTyping,
    react,
    measure: (text: string, format: TextFormat) => (format === "plain" ? text.length : signalMarkdown(text).text.length),
  };
}
