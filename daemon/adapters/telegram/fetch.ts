/**
 * How the adapter's Bot API calls travel: undici's `request` on a keep-alive
 * agent, not Node's global fetch, which builds WHATWG streams, a transferable
 * Request and a Response per call (on the relay's hot path, a
 * `sendChatAction` and a `sendMessage` per turn, that was most of the
 * adapter's CPU per turn).
 *
 * - `directJsonCalls`, a grammY transformer, sends every JSON call itself:
 *   grammY's own path adds per call an abort-controller polyfill, a timer, a
 *   stream-error promise and a race, a measurable share of the relay's CPU.
 *   It keeps grammY's contract: the answer as grammY returns it, network
 *   failures as grammY's `HttpError`, its timeout message; uploads (an
 *   `InputFile` in the payload) go grammY's way, through `createTelegramFetch`;
 * - an error answer that is not Telegram-shaped (a proxy's 502 page, a local
 *   Bot API server's own JSON) would become `undefined: undefined` in grammY;
 *   here it becomes a Telegram-shaped error carrying the HTTP status and the
 *   server's text, so logs and the retry policy see what happened;
 * - grammY's signals (its polyfill's, or a standard one) go to undici as they
 *   are: undici takes any signal with `addEventListener`.
 */
import { STATUS_CODES } from "node:http";
import { Readable } from "node:stream";
import { type Api, HttpError, InputFile, type Transformer } from "grammy";
import type { ApiResponse } from "grammy/types";
import { Agent, type Dispatcher, errors, request } from "undici";

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
function headersOf(headers: NonNullable<Parameters<typeof fetch>[1]>["headers"]): Record<string, string> | null {
  if (headers === undefined) return null;
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

/** The origin of `apiRoot` and the path before `/bot<token>/` (empty for Telegram's own root). */
function splitRoot(apiRoot: string): { origin: string; base: string } {
  const url = new URL(apiRoot);
  return { origin: url.origin, base: url.pathname.replace(/\/+$/, "") };
}

/**
 * Sends one Bot API request through `dispatcher` and reads the whole answer;
 * `timeoutMs` (default none) bounds the wait for the headers and between the
 * body's chunks.
 */
export async function botApiRequest(
  dispatcher: Dispatcher,
  input: Parameters<typeof fetch>[0],
  init?: Parameters<typeof fetch>[1],
  timeoutMs?: number,
): Promise<BotApiAnswer> {
  const res = await request(urlOf(input), {
    dispatcher,
    method: init?.method === undefined ? "GET" : init.method.toUpperCase(),
    headers: headersOf(init?.headers),
    body: bodyOf(init?.body),
    signal: init?.signal ?? null,
    ...(timeoutMs === undefined ? {} : { headersTimeout: timeoutMs, bodyTimeout: timeoutMs }),
  });
  return answerOf(res);
}

/** The whole answer read, Telegram-shaped (see `errorAnswer`). */
async function answerOf(res: Dispatcher.ResponseData): Promise<BotApiAnswer> {
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

/** Whether grammY must send the payload as multipart (a file upload anywhere in it): grammY's own check (`requiresFormDataUpload`), which it does not export. */
const hasUpload = (payload: unknown): boolean =>
  payload instanceof InputFile ||
  (typeof payload === "object" &&
    payload !== null &&
    Object.values(payload).some((v) => (Array.isArray(v) ? v.some(hasUpload) : v instanceof InputFile || hasUpload(v))));

/** grammY's JSON body: `null` and `undefined` fields are left out, as grammY's own `createJsonPayload` does. */
const jsonBody = (payload: unknown): string => JSON.stringify(payload ?? {}, (_, v) => v ?? undefined);

const JSON_HEADERS = { "content-type": "application/json" };

export interface DirectJsonCallsOptions {
  /** The Bot API root, without a trailing slash (`https://api.telegram.org`, or a local server's). */
  apiRoot: string;
  token: string;
  /** Per call, seconds: the wait for the answer's headers, and between its body's chunks (grammY's `timeoutSeconds`). */
  timeoutSeconds: number;
  /** Where the requests go. Default: the agent shared by the daemon's Telegram channels. */
  dispatcher?: Dispatcher;
}

/**
 * A grammY transformer that sends JSON calls straight through undici (see the
 * header), leaving uploads to grammY. Install it first: transformers installed
 * later wrap it and still run; it does not call on to any installed before.
 */
export function directJsonCalls({ apiRoot, token, timeoutSeconds, dispatcher = sharedAgent }: DirectJsonCallsOptions): Transformer {
  const timeoutMs = timeoutSeconds * 1000;
  const { origin, base } = splitRoot(apiRoot);
  const call = async (method: string, payload: unknown, signal: ApiSignal): Promise<ApiResponse<unknown>> => {
    let answer: BotApiAnswer;
    try {
      // Straight to the dispatcher, origin and path apart: undici's `request(url)` parsed the URL of every call.
      const res = await dispatcher.request({
        origin,
        path: `${base}/bot${token}/${method}`,
        method: "POST",
        headers: JSON_HEADERS,
        body: jsonBody(payload),
        signal: fromApiSignal(signal) ?? null,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      answer = await answerOf(res);
    } catch (error) {
      // As grammY: a timeout says so, and any failure is an HttpError (whose message never holds the URL, nor so the token).
      const cause =
        error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError
          ? new Error(`Request to '${method}' timed out after ${timeoutSeconds} seconds`)
          : error;
      throw new HttpError(`Network request for '${method}' failed!`, cause);
    }
    // Parsed as grammY's own path does (\`res.json()\`): its shape is Telegram's, or errorAnswer's.
    const parsed = await answer.json();
    if (!isTelegramShaped(parsed))
      throw new HttpError(`Network request for '${method}' failed!`, new Error("The Bot API answered with JSON that is not an API response."));
    return parsed as ApiResponse<unknown>;
  };
  return ((prev, method, payload, signal) => (hasUpload(payload) ? prev(method, payload, signal) : call(method, payload, signal))) as Transformer;
}

/** The signal type grammY's methods declare: its abort-controller polyfill's. */
export type ApiSignal = Parameters<Api["getMe"]>[0];

/**
 * A standard `AbortSignal` as grammY's methods declare it. grammY types
 * signals with its polyfill, but at runtime hands them to `telegramFetch`
 * above, which takes the standard one as it is: the cast lives here only.
 */
export const toApiSignal = (signal: AbortSignal): ApiSignal => signal as unknown as ApiSignal;

/**
 * The reverse, for undici: what a transformer receives (grammY's polyfill
 * signal, or a standard one passed through `toApiSignal`) typed as the
 * standard one. undici reads only `aborted` and `addEventListener` /
 * `removeEventListener`, which both have.
 */
const fromApiSignal = (signal: ApiSignal): AbortSignal | undefined => signal as unknown as AbortSignal | undefined;
