/**
 * The `fetch` grammY calls the Bot API with. Two reasons to wrap it:
 * - an error answer that is not Telegram-shaped (a proxy's 502 page, a local
 *   Bot API server's own JSON) would become `undefined: undefined` in grammY;
 *   here it becomes a Telegram-shaped error carrying the HTTP status and the
 *   server's text, so logs and the retry policy see what happened;
 * - grammY hands over its abort-controller polyfill's signal, which Node's
 *   fetch refuses: it is bridged to a native one.
 */
import type { Api } from "grammy";

/** A Bot API answer as grammY expects it. */
const isTelegramShaped = (body: unknown): boolean =>
  typeof body === "object" && body !== null && "ok" in body && typeof (body as { ok: unknown }).ok === "boolean";

interface SignalLike {
  aborted: boolean;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener?(type: "abort", listener: () => void): void;
}

function nativeSignal(signal: unknown): { signal: AbortSignal | undefined; done(): void } {
  if (signal === undefined || signal === null) return { signal: undefined, done() {} };
  if (signal instanceof AbortSignal) return { signal, done() {} };
  const like = signal as SignalLike;
  const controller = new AbortController();
  if (like.aborted) controller.abort();
  const onAbort = () => controller.abort();
  like.addEventListener("abort", onAbort, { once: true });
  return { signal: controller.signal, done: () => like.removeEventListener?.("abort", onAbort) };
}

export const telegramFetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const bridged = nativeSignal(init?.signal);
  try {
    const res = await fetch(input, { ...init, signal: bridged.signal ?? null });
    if (res.ok) return res;
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (isTelegramShaped(body)) return new Response(text, { status: res.status, headers: { "content-type": "application/json" } });
    const snippet = text.replace(/\s+/g, " ").trim().slice(0, 300);
    const description = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}${snippet ? `: ${snippet}` : ""}`;
    return new Response(JSON.stringify({ ok: false, error_code: res.status, description }), {
      status: res.status,
      headers: { "content-type": "application/json" },
    });
  } finally {
    bridged.done();
  }
}) as typeof fetch;

/** The signal type grammY's methods declare: its abort-controller polyfill's. */
export type ApiSignal = Parameters<Api["getMe"]>[0];

/**
 * A standard `AbortSignal` as grammY's methods declare it. grammY types
 * signals with its polyfill, but at runtime hands them to `telegramFetch`
 * above, which takes the standard one as it is: the cast lives here only.
 */
export const toApiSignal = (signal: AbortSignal): ApiSignal => signal as unknown as ApiSignal;
