/**
 * A Feishu/Lark channel's config: the zod schema (the one definition, every
 * option described with its default, so config.schema.json carries it) and
 * the type inferred from it. The keys Feishu's own console names are kept as
 * Feishu spells them (`app_id`, `app_secret`, `encrypt_key`,
 * `verification_token`); the daemon's own options are camelCase like every
 * other channel's. platform.ts and the adapter both import it.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupChatOptions, httpUrl, minEditIntervalSchema, nonEmpty, streamingSchema } from "../../vocabulary/config-fields.js";

export const feishuHttpSchema = z
  .strictObject({
    host: nonEmpty.default("127.0.0.1").describe('Address the event endpoint listens on. Default "127.0.0.1" (behind a reverse proxy that terminates TLS).'),
    port: z.number().int().min(0).max(65_535).default(3000).describe("Port the event endpoint listens on (0: any free port). Default 3000."),
    path: z
      .string()
      .regex(/^\//, "must start with /")
      .default("/feishu/events")
      .describe('Request path of the app\'s Request URL (Events & Callbacks → Event configuration). Default "/feishu/events".'),
  })
  .prefault({})
  .describe('Where Feishu posts events and card callbacks (mode "http"). Default 127.0.0.1:3000/feishu/events.');

/** Where each domain's open platform lives. */
export const FEISHU_DOMAINS = { feishu: "https://open.feishu.cn", lark: "https://open.larksuite.com" } as const;

export const feishuChannelSchema = z
  .strictObject({
    type: z.literal("feishu").describe('A Feishu (飞书) or Lark app with its bot: "feishu".'),
    ...channelCommon,
    ...groupChatOptions,
    access: accessSchema
      .prefault({})
      .describe("Who is heard: in direct chats (open ids ou_...) and groups (keyed by chat id oc_...). Default: nobody (an empty allowlist)."),
    app_id: z
      .string()
      .regex(/^cli_[0-9a-fA-F]{16}$/, "must be the app's App ID (cli_ and 16 hex digits)")
      .describe("The app's App ID (Credentials & Basic Info, cli_...). Required, no default."),
    app_secret: z
      .string()
      .regex(/^[A-Za-z0-9]{16,64}$/, "must be the app's App Secret (Credentials & Basic Info)")
      .describe("The app's App Secret, or ${VAR} naming the variable holding it. Required, no default."),
    encrypt_key: z
      .string()
      .regex(/^[\x21-\x7e]{1,128}$/, "must be the Encrypt Key (Events & Callbacks → Encryption Strategy)")
      .optional()
      .describe(
        'The Encrypt Key, or ${VAR}: with mode "http", Feishu encrypts every event with it and signs every request (X-Lark-Signature), and requests not signed with it are refused. Strongly recommended for "http"; unused by "websocket". Default: none.',
      ),
    verification_token: z
      .string()
      .regex(/^[A-Za-z0-9]{8,128}$/, "must be the Verification Token (Events & Callbacks → Encryption Strategy)")
      .optional()
      .describe('The Verification Token, or ${VAR}: with mode "http", every event must carry it. Required when mode is "http" and no encrypt_key is set.'),
    domain: z
      .enum(["feishu", "lark"])
      .default("feishu")
      .describe('"feishu": open.feishu.cn (China); "lark": open.larksuite.com (Lark, outside China). Default "feishu".'),
    api: httpUrl
      .optional()
      .describe(
        "The open platform's base URL in place of the domain's (a proxy, a test double). Default: the domain's (https://open.feishu.cn or https://open.larksuite.com).",
      ),
    mode: z
      .enum(["websocket", "http"])
      .default("websocket")
      .describe(
        '"websocket": the daemon opens the SDK\'s long connection (no public URL needed; Events & Callbacks → "Receive events through persistent connection"); "http": Feishu posts events to this daemon\'s endpoint (`http`). Default "websocket".',
      ),
    http: feishuHttpSchema,
    requireMention: z.boolean().default(true).describe("In groups, answer only a message that @mentions the bot. Default true."),
    streaming: streamingSchema,
    cardStreaming: z
      .boolean()
      .default(true)
      .describe(
        'With streaming "partial": stream replies with Feishu\'s card streaming (CardKit: the text typed out as it comes; needs the scope cardkit:card:write, Feishu 7.20+) where the app may; false (or when Feishu refuses): a card updated in place. Default true.',
      ),
    minEditIntervalMs: minEditIntervalSchema,
  })
  .refine((c) => c.mode !== "http" || c.encrypt_key !== undefined || c.verification_token !== undefined, {
    message: 'required when mode is "http" and no encrypt_key is set (an endpoint nothing verifies would take anyone\'s events)',
    path: ["verification_token"],
  })
  .refine((c) => feishuEmojiType(c.ackReaction.emoji) !== undefined, {
    message: "is not a reaction this bridge can name on Feishu (👀 ✅ 👍 ...)",
    path: ["ackReaction", "emoji"],
  })
  .refine((c) => feishuEmojiType(c.ackReaction.done) !== undefined, {
    message: "is not a reaction this bridge can name on Feishu (👀 ✅ 👍 ...)",
    path: ["ackReaction", "done"],
  });

/** A Feishu channel once finalised: the account id is always set. */
export type FeishuChannelConfig = z.output<typeof feishuChannelSchema> & { id: string };

/** The open platform base the channel talks to. */
export const apiBaseOf = (config: Pick<FeishuChannelConfig, "api" | "domain">): string => config.api ?? FEISHU_DOMAINS[config.domain];

/**
 * Feishu names reactions by `emoji_type` (its emoji list, "Message reaction
 * emoji types"); the config gives the emoji itself as on the other
 * platforms: the ones a bridge would use, by Feishu's names. "" means none.
 */
const EMOJI_TYPES: Readonly<Record<string, string>> = {
  "👀": "GLANCE",
  "✅": "DONE",
  "👍": "THUMBSUP",
  "👌": "OK",
  "🙏": "THANKS",
  "🔥": "Fire",
  "🎉": "PARTY",
  "❤": "HEART",
  "👏": "APPLAUSE",
  "💪": "MUSCLE",
  "😀": "SMILE",
};

/** Feishu's `emoji_type` of a reaction given as an emoji ("" for none), or undefined when unknown. */
export function feishuEmojiType(emoji: string): string | undefined {
  if (emoji === "") return "";
  return EMOJI_TYPES[emoji] ?? EMOJI_TYPES[emoji.replace(/\uFE0F/g, "")];
}
