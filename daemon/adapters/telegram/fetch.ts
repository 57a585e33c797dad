/**
 * The `fetch` grammY calls the Bot API with: undici's `request` on a
 * keep-alive agent, answering with the few fields grammY reads. Three reasons:
 * - cost: Node's global fetch builds WHATWG streams, a transferable Request
 *   and a Response per call; on the relay's hot path (a `sendChatAction` and
 *   a `sendMessage` per turn) that was most of the adapter's CPU per turn;
 * - an error answer that is not Telegram-shaped (a proxy's 502 page, a local
 *   Bot API server's own JSON) would become `undefined: undefined` in grammY;
 *   here it becomes a Telegram-shaped error carrying the HTTP status and the
 *   server's text, so logs and the retry policy see what happened;
 * - grammY hands over its abort-controller polyfill's signal, which Node's
 *   fetch refuses; undici's `request` takes any signal with `addEventListener`.
 */
import { STATUS_CODES } from "node:http";
import { Readable } from "node:stream";
import type { Api } from "grammy";
import { Agent, type Dispatcher, request } from "undici";

/** What grammY (and this module's callers) read of an answer: grammY calls only `json()`. */
export interface BotApiAnswer {
  readonly ok: boolean;
  readonly status: number;
  json(): Promise<unknown>;
  text(): Promise<string>;
}

/** A Bot API answer as grammY expects it. */
const isTelegramShaped = (body: unknown): boolean =>
  typeof body === "object" && body !== null && "ok" in body && typeof (body as { ok: unknown }).ok === "boolean";

const answer = (status: number, text: string): BotApiAnswer => ({
  ok: status >= 200 && status < 300,
  status,
  json: async () => JSON.parse(text),
  text: async () => text,
});

/** The URL of what grammY passes (a string, from its `buildUrl`). */
function urlOf(input: Parameters<typeof fetch>[0]): string {
  if (typeof input === "string") return input;
  if (input instanceof URL) return input.href;
  throw new TypeError("telegramFetch takes a URL (string or URL), not a Request: pass the URL and the init separately.");
}

type RequestBody = string | Uint8Array | Readable | null;

/** grammY's bodies: a JSON string, or a Node stream for multipart uploads. */
function bodyOf(body: unknown): RequestBody {
  if (body === undefined || body === null) return null;
  if (typeof body === "string" || body instanceof Uint8Array || body instanceof Readable) return body;
  if (body instanceof ReadableStream) return Readable.fromWeb(body);
  throw new TypeError("telegramFetch sends a string, bytes or a stream: serialize other bodies before the call.");
}

/** Headers as undici's `request` takes them: grammY passes a plain record. */
function headersOf(headers: NonNullable<Parameters<typeof fetch>[1]>["headers"]): Record<string, string> | undefined {
  if (headers === undefined) return undefined;
  if (headers instanceof Headers || Array.isArray(headers)) return Object.fromEntries(new Headers(headers));
  const record: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) record[name] = typeof value === "string" ? value : value.join(", ");
  return record;
}

/** A non-2xx answer, Telegram-shaped: its own body when it is one, else the status and a snippet of the text. */
function errorAnswer(status: number, text: string): BotApiAnswer {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (isTelegramShaped(body)) return answer(status, text);
  const snippet = text.replace(/\s+/g, " ").trim().slice(0, 300);
  const reason = STATUS_CODES[status];
  const description = `HTTP ${status}${reason ? ` ${reason}` : ""}${snippet ? `: ${snippet}` : ""}`;
  return answer(status, JSON.stringify({ ok: false, error_code: status, description }));
}

/**
 * Keep-alive connections to the Bot API, shared by the daemon's Telegram
 * channels (undici keeps one pool per origin). Idle sockets do not hold the
 * process open, as with Node's global dispatcher.
 */
const sharedAgent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

/** Sends one Bot API request through `dispatcher` and reads the whole answer. */
export async function botApiRequest(dispatcher: Dispatcher, input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]): Promise<BotApiAnswer> {
  const res = await request(urlOf(input), {
    dispatcher,
    method: init?.method === undefined ? "GET" : init.method.toUpperCase(),
    headers: headersOf(init?.headers),
    body: bodyOf(init?.body),
    signal: init?.signal ?? null,
  });
  const text = await res.body.text();
  return res.statusCode >= 200 && res.statusCode < 300 ? answer(res.statusCode, text) : errorAnswer(res.statusCode, text);
}

/**
 * The `fetch` for grammY's `ApiClientOptions`. grammY declares the option as
 * `typeof fetch` but reads only `json()` of the answer (see `BotApiAnswer`):
 * the cast to its declared type lives here only.
 */
export function createTelegramFetch(dispatcher: Dispatcher = sharedAgent): typeof fetch {
  const telegramFetch = (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => botApiRequest(dispatcher, input, init);
  return telegramFetch as unknown as typeof fetch;
}

/** The signal type grammY's methods declare: its abort-controller polyfill's. */
export type ApiSignal = Parameters<Api["getMe"]>[0];

/**
 * A standard `AbortSignal` as grammY's methods declare it. grammY types
 * signals with its polyfill, but at runtime hands them to `telegramFetch`
 * above, which takes the standard one as it is: the cast lives here only.
 */
export const toApiSignal = (signal: AbortSignal): ApiSignal => signal as unknown as ApiSignal;
