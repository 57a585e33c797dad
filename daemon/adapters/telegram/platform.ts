/**
 * The Telegram platform's descriptor: channel schema, secrets, the `check`
 * probe (Bot API `getMe` at the channel's own apiRoot) and a lazy adapter.
 * Light on purpose: grammY loads only in `create`.
 */
import { z } from "zod";
import { channelSubject, probe, type CheckResult, type ProbeDeps } from "../../check/result.js";
import { accessSchema, channelCommon, httpUrl, minEditIntervalSchema, nonEmpty, streamingSchema } from "../../config/fields.js";
import { definePlatform } from "../platform.js";

export const telegramWebhookSchema = z.strictObject({
  /** Public https URL Telegram posts updates to. */
  url: httpUrl,
  host: nonEmpty.default("127.0.0.1"),
  port: z.number().int().min(0).max(65_535).default(8787),
  path: z.string().regex(/^\//, "must start with /").default("/telegram"),
  /** Telegram echoes it in a header, so forged updates can be refused: required. */
  secretToken: z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, "must be 1-256 letters, digits, _ or -"),
});

export const telegramChannelSchema = z
  .strictObject({
    type: z.literal("telegram"),
    ...channelCommon,
    access: accessSchema.prefault({}),
    token: z.string().regex(/^\d+:[A-Za-z0-9_-]{35}$/, "must look like 123456:ABC... (digits, colon, 35 characters)"),
    apiRoot: httpUrl.default("https://api.telegram.org"),
    mode: z.enum(["polling", "webhook"]).default("polling"),
    webhook: telegramWebhookSchema.optional(),
    /** In groups, answer only when mentioned or replied to. */
    requireMention: z.boolean().default(true),
    /** Register the bot's command list with Telegram at start. */
    setCommands: z.boolean().default(true),
    streaming: streamingSchema,
    minEditIntervalMs: minEditIntervalSchema,
  })
  .refine((c) => c.mode !== "webhook" || c.webhook !== undefined, {
    message: 'required when mode is "webhook"',
    path: ["webhook"],
  });

export type TelegramChannelConfig = z.output<typeof telegramChannelSchema> & { id: string };

const TelegramMe = z.object({ ok: z.literal(true), result: z.object({ username: z.string().optional(), first_name: z.string() }) });
const TelegramError = z.object({ ok: z.literal(false), error_code: z.number().optional(), description: z.string().optional() });

async function checkTelegram(channel: TelegramChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const got = await probe(deps, `${channel.apiRoot}/bot${channel.token}/getMe`);
  if (got.kind === "unreachable") {
    return {
      status: "fail",
      subject,
      message: `cannot reach the Bot API at ${channel.apiRoot} (${got.reason})`,
      fix: "check the network, or the channel's apiRoot",
    };
  }
  const me = TelegramMe.safeParse(got.body);
  if (got.status === 200 && me.success) {
    return { status: "ok", subject, message: `token accepted (bot ${me.data.result.username ? `@${me.data.result.username}` : me.data.result.first_name})` };
  }
  const error = TelegramError.safeParse(got.body);
  const said = error.success && error.data.description ? ` "${error.data.description}"` : "";
  if (got.status === 401 || got.status === 404) {
    return {
      status: "fail",
      subject,
      message: `Telegram does not accept the token (${got.status}${said})`,
      fix: `put the token @BotFather gave you in channel ${channel.id}'s token (or the variable it names); /token in @BotFather shows it again`,
    };
  }
  return { status: "fail", subject, message: `getMe failed (HTTP ${got.status}${said})`, fix: "try again later, or check the channel's apiRoot" };
}

export const telegramPlatform = definePlatform({
  type: "telegram",
  schema: telegramChannelSchema,
  finalize: (channel, { id }): TelegramChannelConfig => ({ ...channel, id }),
  secrets: (channel) => (channel.webhook ? [channel.token, channel.webhook.secretToken] : [channel.token]),
  check: checkTelegram,
  async create(channel, deps) {
    const { createTelegramAdapter } = await import("./index.js");
    return createTelegramAdapter(channel, deps);
  },
});
