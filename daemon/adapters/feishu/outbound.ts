/**
 * Replies to Feishu through the SDK's `Client` (tenant token fetched and
 * cached by it, renewed before it expires; see index.ts). Every reply is an
 * interactive card with `config.update_multi: true` (a shared card), because
 * only such a card can be updated in place (`im.v1.message.patch`: "update_multi
 * must be declared before and after", 14 days, 5 updates a second per
 * message): a streamed reply is the same card patched as it grows, at the
 * core's pace. Text edits of `text` messages are capped by Feishu, cards are not.
 *
 * - send: `im.v1.message.reply` to the message answered (`reply_in_thread` when
 *   the reply goes into a thread), else `im.v1.message.create` in the chat;
 * - edit: `im.v1.message.patch` with the whole new card;
 * - sendFile: `im.v1.image.create` then an `image` message, or
 *   `im.v1.file.create` (an Opus voice note as `audio`) then a `file`/`audio` message;
 * - react: `im.v1.messageReaction.create` / `delete` (the reaction id it gave);
 * - no typing indicator on Feishu (sendTyping does nothing).
 *
 * Errors become the core's `SendError`: HTTP 429 and code 99991400 (Feishu's
 * frequency limit) are transient with the wait `x-ogw-ratelimit-reset` gives;
 * an invalid or expired tenant token is transient (the cached token is
 * dropped first, so the retry fetches a new one); other refusals permanent.
 */
import type { Logger } from "pino";
import type * as lark from "@larksuiteoapi/node-sdk";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import {
  SendError,
  type AdapterLimits,
  type ButtonQuestion,
  type ChatTarget,
  type FileLimits,
  type OutboundFile,
  type SendReceipt,
  type TextFormat,
} from "../../vocabulary/adapter.js";
import { feishuEmojiType } from "./config.js";
import { isFeishuMessageId, type ButtonValue } from "./inbound.js";

/**
 * A card's request body may be at most 30 KB; a chunk is measured as the
 * bytes its text takes inside the card's JSON (escapes included), with room
 * left for the card around it.
 */
export const FEISHU_LIMITS = { maxMessageLength: 24_000, typingRefreshMs: 0, minEditIntervalMs: 1000 } satisfies AdapterLimits;

/** Feishu's upload limits: images 10 MB, files 30 MB (im.v1.image.create, im.v1.file.create). */
export const FEISHU_FILE_LIMITS: FileLimits = { photo: 10 * 1024 * 1024, voice: 30 * 1024 * 1024, document: 30 * 1024 * 1024 };

/** Feishu's code for "request trigger frequency limit". */
export const RATE_LIMITED = 99_991_400;
/** Codes that say the tenant access token is invalid or expired. */
const TOKEN_CODES = new Set([99_991_661, 99_991_663, 99_991_664, 99_991_665]);
/** Codes that are Feishu's side, not the request's. */
const TRANSIENT_CODES = new Set([RATE_LIMITED, 99_991_401, 99_991_402, 1_061_045, 230_020]);

/** The bytes `text` takes inside a card's JSON. */
export const measureCardText = (text: string): number => Buffer.byteLength(JSON.stringify(text), "utf8") - 2;

/** A card holding `text`: `markdown` (Feishu's card markdown) or a plain-text block. */
export function textCard(text: string, format: TextFormat, extra: unknown[] = []): string {
  const body = format === "markdown" ? { tag: "markdown", content: text } : { tag: "div", text: { tag: "plain_text", content: text } };
  return JSON.stringify({ config: { wide_screen_mode: true, update_multi: true }, elements: [body, ...extra] });
}

/** A question's card: its text, and one button per option carrying the bridge's `ButtonValue`. */
export function questionCard(target: ChatTarget, question: ButtonQuestion): string {
  const text = question.allowText ? `${question.text}\n(Tap an option, or write your own answer.)` : question.text;
  const actions = question.options.map((label, i) => {
    const value: ButtonValue = {
      q: question.id,
      o: i + 1,
      t: target.chatType === "direct" ? "d" : "g",
      ...(target.threadId ? { th: target.threadId } : {}),
    };
    return { tag: "button", text: { tag: "plain_text", content: label.slice(0, 100) }, type: i === 0 ? "primary" : "default", value };
  });
  return textCard(text, "plain", [{ tag: "action", actions }]);
}

/** The core's `SendError` from whatever the SDK threw or answered, with Feishu's code. */
export class FeishuAdapterError extends SendError {
  /** Feishu's `code`, or undefined when no answer came. */
  readonly code: number | undefined;
  constructor(message: string, options: { code?: number; permanent: boolean; retryAfterMs?: number; status?: number; cause?: unknown }) {
    super(message, options);
    this.code = options.code;
  }
}

interface FailureFacts {
  status?: number;
  code?: number;
  msg?: string;
  resetSeconds?: number;
}

/** What an axios error (the SDK's HTTP client) says, read without trusting its shape. */
export function failureFacts(error: unknown): FailureFacts | undefined {
  if (!error || typeof error !== "object" || !("response" in error)) return undefined;
  const response = (error as { response?: unknown }).response;
  if (!response || typeof response !== "object") return undefined;
  const r = response as { status?: unknown; data?: unknown; headers?: unknown };
  const facts: FailureFacts = {};
  if (typeof r.status === "number") facts.status = r.status;
  if (r.data && typeof r.data === "object") {
    const d = r.data as { code?: unknown; msg?: unknown };
    if (typeof d.code === "number") facts.code = d.code;
    if (typeof d.msg === "string") facts.msg = d.msg;
  }
  if (r.headers && typeof r.headers === "object") {
    const reset = Number((r.headers as Record<string, unknown>)["x-ogw-ratelimit-reset"]);
    if (Number.isFinite(reset) && reset >= 0) facts.resetSeconds = reset;
  }
  return facts;
}

export function toAdapterError(where: string, facts: FailureFacts | undefined, redact: (s: string) => string, cause?: unknown): FeishuAdapterError {
  if (!facts) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    return new FeishuAdapterError(`feishu ${where} failed: ${redact(detail)}`, { permanent: false });
  }
  const { status, code, msg, resetSeconds } = facts;
  const said = `${code !== undefined ? `code ${code}` : `HTTP ${status}`}${msg ? ` ${redact(msg)}` : ""}`;
  const limited = status === 429 || code === RATE_LIMITED;
  const transient = limited || (status !== undefined && status >= 500) || (code !== undefined && (TRANSIENT_CODES.has(code) || TOKEN_CODES.has(code)));
  return new FeishuAdapterError(`feishu ${where} failed: ${said}`, {
    permanent: !transient,
    ...(code !== undefined ? { code } : {}),
    ...(status !== undefined ? { status } : {}),
    ...(limited ? { retryAfterMs: Math.max(1, resetSeconds ?? 1) * 1000 } : {}),
  });
}

export interface OutboundDeps {
  client: lark.Client;
  log: Logger;
  redact(text: string): string;
  /** Drops the cached tenant token (Feishu said it is invalid): the next call fetches a new one. */
  forgetToken(): Promise<void>;
}

/** Runs one SDK call: its data, or a FeishuAdapterError (answered or thrown refusals alike). */
export type Call = <D>(
  where: string,
  run: () => Promise<{ code?: number | undefined; msg?: string | undefined; data?: D | undefined } | null>,
) => Promise<D | undefined>;

export interface FeishuOutbound {
  /** One SDK call: its data, or a FeishuAdapterError (answered or thrown refusals alike). */
  call: Call;
  send(target: ChatTarget, content: { msgType: string; content: string }): Promise<SendReceipt>;
  sendText(target: ChatTarget, text: string, format: TextFormat): Promise<SendReceipt>;
  edit(messageId: string, card: string): Promise<void>;
  sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt>;
  react(messageId: string, emoji: string, options: { remove: boolean }): Promise<void>;
  /** Where thread replies go when no message is named: the thread's root, as the events said. */
  rememberThread(threadId: string, rootMessageId: string): void;
}

/** The SDK's answer: `{ code, msg, data }`; code 0 is success. */
interface Answer<D> {
  code?: number | undefined;
  msg?: string | undefined;
  data?: D | undefined;
}

export function createFeishuOutbound(deps: OutboundDeps): FeishuOutbound {
  const { client, redact } = deps;
  /** reaction ids the bot set, by message and emoji type (what `delete` needs). */
  const reactionIds = new BoundedMap<string, string>(5000);
  /** thread id -> its root message, to reply into a thread when no message is named. */
  const threadRoots = new BoundedMap<string, string>(5000);

  /** Runs one call; a refusal, answered or thrown, becomes a FeishuAdapterError. */
  async function call<D>(where: string, run: () => Promise<Answer<D> | null>): Promise<D | undefined> {
    let answer: Answer<D> | null;
    try {
      answer = await run();
    } catch (error) {
      const facts = failureFacts(error);
      if (facts?.code !== undefined && TOKEN_CODES.has(facts.code)) await deps.forgetToken();
      throw toAdapterError(where, facts, redact, error);
    }
    if (answer && typeof answer.code === "number" && answer.code !== 0) {
      if (TOKEN_CODES.has(answer.code)) await deps.forgetToken();
      throw toAdapterError(where, { code: answer.code, ...(answer.msg ? { msg: answer.msg } : {}) }, redact);
    }
    return answer?.data;
  }

  async function send(target: ChatTarget, message: { msgType: string; content: string }): Promise<SendReceipt> {
    const inThread = target.threadId !== undefined;
    // An id of the core's own (a tap's answer) is no message to quote: the reply goes to the chat (or the thread).
    const named = target.replyToMessageId !== undefined && isFeishuMessageId(target.replyToMessageId) ? target.replyToMessageId : undefined;
    const answered = named ?? (target.threadId ? threadRoots.get(target.threadId) : undefined);
    const data = answered
      ? await call("message.reply", () =>
          client.im.message.reply({
            path: { message_id: answered },
            data: { msg_type: message.msgType, content: message.content, ...(inThread ? { reply_in_thread: true } : {}) },
          }),
        )
      : await call("message.create", () =>
          client.im.message.create({
            params: { receive_id_type: "chat_id" },
            data: { receive_id: target.chatId, msg_type: message.msgType, content: message.content },
          }),
        );
    const messageId = data?.message_id;
    return messageId ? { messageId } : {};
  }

  return {
    call,
    send,
    sendText: (target, text, format) => send(target, { msgType: "interactive", content: textCard(text, format) }),
    async edit(messageId, card) {
      await call("message.patch", () => client.im.message.patch({ path: { message_id: messageId }, data: { content: card } }));
    },
    async sendFile(target, file) {
      if (file.kind === "photo") {
        const up = await call("image.create", async () => {
          const data = await client.im.image.create({ data: { image_type: "message", image: file.data } });
          return data ? { code: 0, data } : { code: -1, msg: "no image_key in the answer" };
        });
        if (!up?.image_key) throw new FeishuAdapterError("feishu image.create gave no image_key", { permanent: false });
        return send(target, { msgType: "image", content: JSON.stringify({ image_key: up.image_key }) });
      }
      // Feishu plays an `audio` message only from an Opus file; any other voice note goes as a file.
      const opus = file.kind === "voice" && /ogg|opus/i.test(file.mimeType);
      const fileType = opus ? "opus" : fileTypeOf(file.fileName);
      const up = await call("file.create", async () => {
        const data = await client.im.file.create({ data: { file_type: fileType, file_name: file.fileName, file: file.data } });
        return data ? { code: 0, data } : { code: -1, msg: "no file_key in the answer" };
      });
      if (!up?.file_key) throw new FeishuAdapterError("feishu file.create gave no file_key", { permanent: false });
      return send(target, { msgType: opus ? "audio" : "file", content: JSON.stringify({ file_key: up.file_key }) });
    },
    async react(messageId, emoji, { remove }) {
      // An id of the core's own (a tap's answer): no message to react on.
      if (!isFeishuMessageId(messageId)) return;
      const type = feishuEmojiType(emoji);
      if (!type) throw new FeishuAdapterError(`no Feishu reaction for ${emoji}`, { permanent: true });
      const key = `${messageId} ${type}`;
      if (!remove) {
        const data = await call("messageReaction.create", () =>
          client.im.messageReaction.create({ path: { message_id: messageId }, data: { reaction_type: { emoji_type: type } } }),
        );
        if (data?.reaction_id) reactionIds.set(key, data.reaction_id);
        return;
      }
      const id = reactionIds.get(key);
      // Set by an earlier life of the daemon: nothing to remove by, and Feishu's list needs paging through everyone's; left.
      if (!id) return;
      await call("messageReaction.delete", () => client.im.messageReaction.delete({ path: { message_id: messageId, reaction_id: id } }));
      reactionIds.delete(key);
    },
    rememberThread(threadId, rootMessageId) {
      if (!threadRoots.get(threadId)) threadRoots.set(threadId, rootMessageId);
    },
  };
}

/** `im.v1.file.create`'s `file_type` by extension; "stream" for anything else. */
function fileTypeOf(name: string): "opus" | "mp4" | "pdf" | "doc" | "xls" | "ppt" | "stream" {
  const ext = name.toLowerCase().split(".").pop() ?? "";
  if (ext === "pdf") return "pdf";
  if (ext === "doc" || ext === "docx") return "doc";
  if (ext === "xls" || ext === "xlsx") return "xls";
  if (ext === "ppt" || ext === "pptx") return "ppt";
  if (ext === "mp4") return "mp4";
  return "stream";
}
