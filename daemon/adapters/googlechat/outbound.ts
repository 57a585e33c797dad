/**
 * Replies through the Chat API as the app (its service account), with
 * `@google-apps/chat` in its REST mode (`fallback: true`: JSON over HTTP/1,
 * which also lets a test point it at a fake): `spaces.messages.create` into
 * the message's thread (`thread.name` with `REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD`),
 * `spaces.messages.patch` with an `updateMask` for streamed edits and for a
 * question's card once answered. The library's own retries are turned off (a
 * create retried after a lost answer would post twice): the core's one retry
 * policy owns them, from the `SendError` every failure becomes. Chat's quotas
 * (60 writes a minute per space, 3000 per project) answer 429
 * RESOURCE_EXHAUSTED: transient, after the delay Chat names when it names one.
 * An app cannot upload files (`media.upload` takes user authentication only,
 * with no app-authentication scope, not even the administrator-approved
 * `chat.app.*` ones) nor react (reactions too). A reply file therefore goes
 * as a card (`fileCard`) whose button opens the file's link on the channel's
 * own endpoint (../file-links/), with an image widget for an image; without a
 * `public_base_url` no file capability is offered. No reactions either.
 */
import { createHash } from "node:crypto";
import { ChatServiceClient, type protos } from "@google-apps/chat";
import type { JWT } from "google-auth-library";
import type { Logger } from "pino";
import { formatBytes } from "../../../shared/util/format-bytes.js";
import { type ButtonQuestion, type ChatTarget, type OutboundFile, SendError, type SendReceipt, type TextFormat } from "../../vocabulary/adapter.js";
import { ANSWER_FUNCTION, threadNameOf } from "./inbound.js";

/** Chat's limit on a message's text (characters). */
export const GOOGLE_CHAT_LIMITS = { maxMessageLength: 4096, typingRefreshMs: 0, minEditIntervalMs: 1000 } as const;

const MESSAGE_NAME = /^spaces\/[^/]+\/messages\/[^/]+$/;
const NO_RETRIES = { retry_codes_name: "non_idempotent" };
/** The library's retries off for every method this adapter calls (chat_service_client_config.json). */
const clientConfig = {
  interfaces: {
    "google.chat.v1.ChatService": {
      retry_codes: { non_idempotent: [] },
      methods: { CreateMessage: NO_RETRIES, UpdateMessage: NO_RETRIES, ListSpaces: NO_RETRIES },
    },
  },
};

/** The Chat API client for `api` (`https://chat.googleapis.com`, or a fake's http URL), authenticated by `auth`. */
export function chatClient(api: string, auth: JWT): ChatServiceClient {
  const url = new URL(api);
  const https = url.protocol === "https:";
  return new ChatServiceClient({
    fallback: true,
    apiEndpoint: url.hostname,
    port: Number(url.port || (https ? 443 : 80)),
    protocol: https ? "https" : "http",
    // The same JWT class at run time: google-gax carries its own copy of google-auth-library (10.5),
    // which TypeScript sees as another type; the client only calls its getRequestHeaders and fetch.
    authClient: auth as unknown as NonNullable<NonNullable<ConstructorParameters<typeof ChatServiceClient>[0]>["authClient"]>,
    clientConfig,
  });
}

/** Markdown as Chat formats text: *bold*, _italic_, ~strike~, `code`, <url|label>; code left as it is. */
export function markdownToChat(text: string): string {
  return text
    .split(/(```[\s\S]*?```|`[^`\n]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : inline(part)))
    .join("");
}

function inline(text: string): string {
  const BOLD = "\u0001";
  return text
    .replace(/^#{1,6}\s+(.+)$/gm, `${BOLD}$1${BOLD}`)
    .replace(/\*\*(.+?)\*\*|__(.+?)__/g, (_m, a: string | undefined, b: string | undefined) => `${BOLD}${a ?? b ?? ""}${BOLD}`)
    .replace(/(^|[^\w*])\*(?!\s)([^*\n]+?)\*(?!\w)/g, "$1_$2_")
    .replace(/~~(.+?)~~/g, "~$1~")
    .replace(/\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)/g, "<$2|$1>")
    .replaceAll(BOLD, "*");
}

export const renderText = (text: string, format: TextFormat): string => (format === "markdown" ? markdownToChat(text) : text);

/** A Chat message body as `spaces.messages.create` takes it (also the synchronous answer's body). */
export interface ChatMessageBody {
  text?: string;
  thread?: { name: string };
  cardsV2?: protos.google.chat.v1.ICardWithId[];
}

/** The text of a reply as a message body into the target's thread. */
export function replyBody(target: ChatTarget, text: string): ChatMessageBody {
  return { text, ...(target.threadId !== undefined ? { thread: { name: threadNameOf(target.chatId, target.threadId) } } : {}) };
}

/** A question with one cards v2 button per option; each invokes the answer function with the question and the option's number. */
export function questionCard(question: ButtonQuestion): protos.google.chat.v1.ICardWithId[] {
  return [
    {
      cardId: `q-${question.id}`,
      card: {
        sections: [
          {
            widgets: [
              {
                buttonList: {
                  buttons: question.options.map((label, i) => ({
                    text: label,
                    onClick: {
                      action: {
                        function: ANSWER_FUNCTION,
                        parameters: [
                          { key: "q", value: question.id },
                          { key: "o", value: String(i + 1) },
                        ],
                      },
                    },
                  })),
                },
              },
            ],
          },
        ],
      },
    },
  ];
}

/**
 * A reply file as a card: its name and size, until when the link works, the
 * image itself for a PNG or JPG image (Chat's image widget fetches the https
 * URL), and a button that opens the link (which downloads it).
 */
export function fileCard(file: Pick<OutboundFile, "fileName" | "mimeType" | "data">, url: string, expiresAt: number): protos.google.chat.v1.ICardWithId[] {
  const until = new Date(expiresAt)
    .toISOString()
    .replace(/:\d\d\.\d{3}Z$/, " UTC")
    .replace("T", " ");
  return [
    {
      cardId: "file",
      card: {
        header: { title: file.fileName, subtitle: `${formatBytes(file.data.length)} · the link works until ${until}` },
        sections: [
          {
            widgets: [
              ...(showsInCard(file) ? [{ image: { imageUrl: url, altText: file.fileName } }] : []),
              { buttonList: { buttons: [{ text: "Download", onClick: { openLink: { url } } }] } },
            ],
          },
        ],
      },
    },
  ];
}

/** The image widget shows PNG and JPG only, at most 2 MB recommended (developers.google.com/workspace/chat/add-text-image-card-dialog). */
const showsInCard = (file: Pick<OutboundFile, "mimeType" | "data">): boolean =>
  /^image\/(png|jpeg)$/i.test(file.mimeType) && file.data.length <= 2 * 1024 * 1024;

export interface ChatOutboundDeps {
  client: ChatServiceClient;
  log: Logger;
  redact(text: string): string;
}

export function createChatOutbound(deps: ChatOutboundDeps) {
  const { client } = deps;
  const fail = (what: string, error: unknown): SendError => toSendError(what, error, deps.redact);

  async function create(target: ChatTarget, body: ChatMessageBody): Promise<SendReceipt> {
    try {
      const request: protos.google.chat.v1.ICreateMessageRequest = { parent: target.chatId, message: body };
      if (body.thread) request.messageReplyOption = "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD";
      const requestId = requestIdOf(target, body);
      if (requestId) request.requestId = requestId;
      const [created] = await client.createMessage(request);
      return created.name ? { messageId: created.name } : {};
    } catch (error) {
      throw fail("spaces.messages.create", error);
    }
  }

  async function patch(messageId: string, message: protos.google.chat.v1.IMessage, paths: string[]): Promise<void> {
    if (!MESSAGE_NAME.test(messageId)) throw new SendError("not a Google Chat message name", { permanent: true });
    try {
      await client.updateMessage({ message: { name: messageId, ...message }, updateMask: { paths } });
    } catch (error) {
      throw fail("spaces.messages.patch", error);
    }
  }

  return {
    send: (target: ChatTarget, text: string, format: TextFormat) => create(target, replyBody(target, renderText(text, format))),
    edit: (messageId: string, text: string, format: TextFormat) => patch(messageId, { text: renderText(text, format) }, ["text"]),
    ask: (target: ChatTarget, question: ButtonQuestion) =>
      create(target, { ...replyBody(target, question.allowText ? `${question.text}\n(or type the answer)` : question.text), cardsV2: questionCard(question) }),
    close: (messageId: string, outcome: string) => patch(messageId, { text: outcome, cardsV2: [] }, ["text", "cards_v2"]),
    sendFile: (target: ChatTarget, file: OutboundFile, url: string, expiresAt: number) => {
      const { text: _none, ...thread } = replyBody(target, "");
      return create(target, { ...thread, cardsV2: fileCard(file, url, expiresAt) });
    },
  };
}

export type ChatOutbound = ReturnType<typeof createChatOutbound>;

/**
 * The create's `requestId`: Chat answers a create whose request id it has seen with the message it
 * made then, instead of a second one. Named by the message answered and what is sent, so the same
 * reply sent again (its first answer lost, or the node that sent it fenced off before it could
 * record it) is one message. Two identical chunks of one reply would be one: a reply does not
 * repeat a chunk of up to 4,096 characters. None for a message that answers nothing.
 */
export function requestIdOf(target: ChatTarget, body: ChatMessageBody): string | undefined {
  if (target.replyToMessageId === undefined) return undefined;
  const hash = createHash("sha256").update(
    JSON.stringify([target.chatId, target.threadId ?? "", target.replyToMessageId, body.text ?? "", body.cardsV2 ?? []]),
  );
  return `agent-bridge-${hash.digest("hex").slice(0, 40)}`;
}

/**
 * Codes a retry cannot change: gRPC's (INVALID_ARGUMENT 3, NOT_FOUND 5, PERMISSION_DENIED 7,
 * FAILED_PRECONDITION 9, UNIMPLEMENTED 12, UNAUTHENTICATED 16), and the HTTP statuses the REST
 * mode reports in their place.
 */
const PERMANENT = new Set([3, 5, 7, 9, 12, 16, 400, 401, 403, 404, 501]);
/** RESOURCE_EXHAUSTED (a quota), as gRPC and as HTTP name it. */
const EXHAUSTED = new Set([8, 429]);

/** Any failure of a Chat API call as the one `SendError`, its words redacted. */
export function toSendError(what: string, error: unknown, redact: (text: string) => string): SendError {
  if (error instanceof SendError) return error;
  const code = codeOf(error);
  const message = redact(error instanceof Error ? error.message : String(error)).slice(0, 300);
  const retryAfterMs = code !== undefined && EXHAUSTED.has(code) ? retryDelayOf(error) : undefined;
  return new SendError(`google chat ${what} failed${code !== undefined ? ` (code ${code})` : ""}: ${message}`, {
    permanent: code !== undefined && PERMANENT.has(code),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    ...(code !== undefined ? { status: code } : {}),
    cause: error,
  });
}

const codeOf = (error: unknown): number | undefined =>
  error && typeof error === "object" && "code" in error && typeof error.code === "number" ? error.code : undefined;

/** RetryInfo's `retryDelay` among the error's details, ms. */
function retryDelayOf(error: unknown): number | undefined {
  const details = error && typeof error === "object" && "statusDetails" in error && Array.isArray(error.statusDetails) ? error.statusDetails : [];
  for (const detail of details as unknown[]) {
    if (!detail || typeof detail !== "object" || !("retryDelay" in detail)) continue;
    const delay = detail.retryDelay;
    if (typeof delay === "string") {
      const seconds = Number.parseFloat(delay);
      if (Number.isFinite(seconds)) return Math.ceil(seconds * 1000);
    }
    if (delay && typeof delay === "object") {
      const seconds = "seconds" in delay ? Number(delay.seconds) : 0;
      const nanos = "nanos" in delay ? Number(delay.nanos) : 0;
      if (Number.isFinite(seconds)) return Math.ceil(seconds * 1000 + nanos / 1e6);
    }
  }
  return undefined;
}
