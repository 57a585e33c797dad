/**
 * A Signal channel's config: the zod schema (the one definition) and the type
 * inferred from it. The bridge talks to a signal-cli daemon the operator runs
 * (`signal-cli -a ACCOUNT daemon --http HOST:PORT`, JSON-RPC over HTTP with
 * events as server-sent events: signal-cli-jsonrpc(5)); `account` is named as
 * the hosted service names it.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupChatOptions, httpUrl, minEditIntervalSchema, streamingSchema } from "../../vocabulary/config-fields.js";

/**
 * Signal lets a message be edited at most this many times: Signal-Android's
 * `MessageConstraintsUtil.MAX_EDIT_COUNT = 10` (send threshold one day, receive two),
 * Signal-Desktop's `MESSAGE_MAX_EDIT_COUNT = 10` with `isMoreRecentThan(sent_at, DAY)`.
 */
export const SIGNAL_MAX_EDITS = 10;
/** ... and only within 24 hours of sending it. */
export const SIGNAL_EDIT_WINDOW_MS = 24 * 60 * 60 * 1000;

export const signalChannelSchema = z
  .strictObject({
    type: z.literal("signal").describe('A Signal account served by a signal-cli daemon (JSON-RPC over HTTP): "signal".'),
    ...channelCommon,
    ...groupChatOptions,
    access: accessSchema.prefault({}),
    account: z
      .string()
      .regex(/^\+[1-9]\d{6,14}$/, "a Signal account is a phone number in E.164 form, like +15551234567")
      .describe("The Signal account's phone number in E.164 form (+15551234567), as registered or linked in signal-cli. Required, no default."),
    url: httpUrl
      .default("http://127.0.0.1:8080")
      .describe(
        'The signal-cli daemon\'s HTTP endpoint (`signal-cli daemon --http 127.0.0.1:8080`): the bridge calls its /api/v1/rpc, /api/v1/events and /api/v1/check. A user:password in it (a proxy in front) is a secret. Default "http://127.0.0.1:8080".',
      ),
    requireMention: z.boolean().default(true).describe("In groups, answer only when the bot is @mentioned or its message is quoted. Default true."),
    watchdogMs: z
      .number()
      .int()
      .min(20_000)
      .max(600_000)
      .default(60_000)
      .describe(
        "Reconnect the event stream when nothing at all (not even signal-cli's keep-alive, sent every 15 s) came for this long, ms: a connection that is up but delivers nothing. Default 60000.",
      ),
    streaming: streamingSchema,
    minEditIntervalMs: minEditIntervalSchema,
  })
  .describe("A Signal account through the signal-cli daemon.");

/** A Signal channel once finalised: the account id is always set. */
export type SignalChannelConfig = z.output<typeof signalChannelSchema> & { id: string };

/** The password of a `user:password@` in the daemon URL, if any (a secret). */
export function urlSecrets(url: string): string[] {
  try {
    const parsed = new URL(url);
    return [parsed.password && decodeURIComponent(parsed.password), parsed.username && decodeURIComponent(parsed.username)].filter((s): s is string => !!s);
  } catch {
    return [];
  }
}

/** The endpoint's parts: the base URL (credentials removed) and the headers that carry them. */
export interface SignalEndpoint {
  base: string;
  headers: Record<string, string>;
}

/** Splits `user:password@` off the daemon URL into a Basic Authorization header (undici refuses credentials in URLs). */
export function endpointOf(url: string): SignalEndpoint {
  const parsed = new URL(url);
  const headers: Record<string, string> = {};
  if (parsed.username || parsed.password) {
    const user = decodeURIComponent(parsed.username);
    const password = decodeURIComponent(parsed.password);
    headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    parsed.username = "";
    parsed.password = "";
  }
  return { base: parsed.toString().replace(/\/+$/, ""), headers };
}
