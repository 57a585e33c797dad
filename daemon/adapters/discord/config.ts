/**
 * A Discord channel's config: the zod schema (the one definition, every
 * option described with its default, so config.schema.json carries it) and
 * the type inferred from it. platform.ts and the adapter both import it, so
 * neither has to import the other.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupChatOptions, httpUrl, minEditIntervalSchema, streamingSchema } from "../../vocabulary/config-fields.js";

export const discordChannelSchema = z.strictObject({
  type: z.literal("discord").describe('A Discord bot: "discord".'),
  ...channelCommon,
  ...groupChatOptions,
  access: accessSchema
    .prefault({})
    .describe("Who is heard, in DMs (user ids) and guild channels (keyed by channel, thread parent or guild id). Default: nobody (an empty allowlist)."),
  token: z
    .string()
    .regex(/^\S+$/, 'must be the bare bot token (no whitespace, no "Bot " prefix)')
    .describe(
      'The bot token from the Developer Portal (Bot → Reset Token), without a "Bot " prefix, or ${VAR} naming the variable holding it. Required, no default.',
    ),
  api: httpUrl
    .default("https://discord.com/api")
    .describe('REST base the bot calls (and `check` probes); the gateway\'s address is asked of it. Default "https://discord.com/api".'),
  gatewayUrl: z
    .url({ protocol: /^wss?$/, error: "must be a ws(s) URL" })
    .optional()
    .describe("Gateway address to use instead of the one the REST API names (a local fake, in tests). Default: the one Discord names."),
  requireMention: z.boolean().default(true).describe("In guild channels, answer only when mentioned or replied to. Default true."),
  replyNotifies: z
    .boolean()
    .default(true)
    .describe(
      "In guild channels a reply answers its message as a Discord reply; true lets that reply notify the person it answers (`allowed_mentions.replied_user`), false answers without a ping. Text from the agent never pings anyone (@everyone, roles, users). Default true.",
    ),
  streaming: streamingSchema,
  minEditIntervalMs: minEditIntervalSchema,
});

/** A Discord channel once finalised: the account id is always set. */
export type DiscordChannelConfig = z.output<typeof discordChannelSchema> & { id: string };
