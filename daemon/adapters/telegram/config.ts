/**
 * A Telegram channel's config: the zod schema (the one definition, every
 * option described with its default, so config.schema.json carries it) and
 * the type inferred from it. platform.ts and the adapter both import it, so
 * neither has to import the other.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupChatOptions, httpUrl, minEditIntervalSchema, nonEmpty, streamingSchema } from "../../vocabulary/config-fields.js";

export const telegramWebhookSchema = z
  .strictObject({
    url: httpUrl.describe("Public https URL Telegram posts updates to (registered with setWebhook at start). Required."),
    host: nonEmpty.default("127.0.0.1").describe('Address the webhook server listens on. Default "127.0.0.1" (behind a reverse proxy).'),
    port: z.number().int().min(0).max(65_535).default(8787).describe("Port the webhook server listens on (0: any free port). Default 8787."),
    path: z.string().regex(/^\//, "must start with /").default("/telegram").describe('Request path updates are posted to. Default "/telegram".'),
    secretToken: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,256}$/, "must be 1-256 letters, digits, _ or -")
      .describe("Telegram echoes it in a header, so forged updates are refused: 1-256 letters, digits, _ or -. Required, no default."),
  })
  .describe('Webhook mode\'s settings; required when mode is "webhook", ignored otherwise.');

export const telegramChannelSchema = z
  .strictObject({
    type: z.literal("telegram").describe('A Telegram bot (Bot API, long polling or a webhook): "telegram".'),
    ...channelCommon,
    ...groupChatOptions,
    access: accessSchema.prefault({}),
    token: z
      .string()
      .regex(/^\d+:[A-Za-z0-9_-]{35}$/, "must look like 123456:ABC... (digits, colon, 35 characters)")
      .describe("The bot token @BotFather gave (123456:ABC...), or ${VAR} naming the variable holding it. Required, no default."),
    apiRoot: httpUrl.default("https://api.telegram.org").describe('Bot API server (a local Bot API server can stand in). Default "https://api.telegram.org".'),
    mode: z
      .enum(["polling", "webhook"])
      .default("polling")
      .describe('"polling": long-poll getUpdates; "webhook": Telegram posts updates to `webhook.url`. Default "polling".'),
    webhook: telegramWebhookSchema.optional(),
    requireMention: z.boolean().default(true).describe("In groups, answer only when mentioned, replied to or commanded. Default true."),
    setCommands: z.boolean().default(true).describe("Register the bot's command menu (/new, /status, ...) with Telegram at start. Default true."),
    replyNotifies: z
      .boolean()
      .default(true)
      .describe(
        "In groups a reply quotes the message it answers (so it lands in the right topic), and Telegram notifies the person quoted; false sends replies silently (`disable_notification`: no sound), still quoting. Default true.",
      ),
    streaming: streamingSchema,
    minEditIntervalMs: minEditIntervalSchema,
  })
  .refine((c) => c.mode !== "webhook" || c.webhook !== undefined, {
    message: 'required when mode is "webhook"',
    path: ["webhook"],
  })
  .refine((c) => isTelegramReaction(c.ackReaction.emoji), {
    message: "is not a reaction Telegram lets bots set (see setMessageReaction's list: 👀, 👍, 🔥, ...)",
    path: ["ackReaction", "emoji"],
  })
  .refine((c) => isTelegramReaction(c.ackReaction.done), {
    message: "is not a reaction Telegram lets bots set (see setMessageReaction's list: 👀, 👍, 🔥, ...)",
    path: ["ackReaction", "done"],
  });

export type TelegramWebhookConfig = z.output<typeof telegramWebhookSchema>;

/** A Telegram channel once finalised: the account id is always set. */
export type TelegramChannelConfig = z.output<typeof telegramChannelSchema> & { id: string };

/**
 * The reactions a bot may set on Telegram: `ReactionTypeEmoji.emoji` must be
 * one of the Bot API's fixed list (anything else is refused with 400
 * REACTION_INVALID), so the config is checked against it at load.
 */
export const TELEGRAM_REACTIONS: ReadonlySet<string> = new Set([
  "👍",
  "👎",
  "❤",
  "🔥",
  "🥰",
  "👏",
  "😁",
  "🤔",
  "🤯",
  "😱",
  "🤬",
  "😢",
  "🎉",
  "🤩",
  "🤮",
  "💩",
  "🙏",
  "👌",
  "🕊",
  "🤡",
  "🥱",
  "🥴",
  "😍",
  "🐳",
  "❤‍🔥",
  "🌚",
  "🌭",
  "💯",
  "🤣",
  "⚡",
  "🍌",
  "🏆",
  "💔",
  "🤨",
  "😐",
  "🍓",
  "🍾",
  "💋",
  "🖕",
  "😈",
  "😴",
  "😭",
  "🤓",
  "👻",
  "👨‍💻",
  "👀",
  "🎃",
  "🙈",
  "😇",
  "😨",
  "🤝",
  "✍",
  "🤗",
  "🫡",
  "🎅",
  "🎄",
  "☃",
  "💅",
  "🤪",
  "🗿",
  "🆒",
  "💘",
  "🙉",
  "🦄",
  "😘",
  "💊",
  "🙊",
  "😎",
  "👾",
  "🤷‍♂",
  "🤷",
  "🤷‍♀",
  "😡",
]);

/** Whether Telegram accepts `emoji` as a bot's reaction ("" counts: it means none). */
export const isTelegramReaction = (emoji: string): boolean => emoji === "" || TELEGRAM_REACTIONS.has(emoji);
