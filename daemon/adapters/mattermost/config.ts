/**
 * A Mattermost channel's config: the zod schema (the one definition; the keys
 * the hosted service names, `bot_token` and `base_url`) and the type inferred
 * from it. platform.ts and the adapter both import it.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupChatOptions, httpUrl, minEditIntervalSchema, streamingSchema } from "../../vocabulary/config-fields.js";

export const mattermostChannelSchema = z.strictObject({
  type: z.literal("mattermost").describe('A Mattermost bot account: "mattermost".'),
  ...channelCommon,
  ...groupChatOptions,
  access: accessSchema
    .prefault({})
    .describe("Who is heard, in direct messages (user ids) and channels (keyed by channel id or team id). Default: nobody (an empty allowlist)."),
  bot_token: z
    .string()
    // The hosted service's rule (emulator/channels/catalog.ts): Mattermost's ids and tokens are 26 characters.
    .regex(/^[a-z0-9]{26}$/, "must be the bot's access token: 26 lowercase letters and digits (no Bearer prefix)")
    .describe(
      "The bot account's access token (System Console → Integrations → Bot Accounts → Create Token), or ${VAR} naming the variable holding it. Required, no default.",
    ),
  base_url: httpUrl.describe(
    'The server\'s address as people open it, e.g. "https://chat.example.com" (the REST API is under /api/v4, the WebSocket at /api/v4/websocket). Required.',
  ),
  requireMention: z
    .boolean()
    .default(true)
    .describe("In channels and group messages, answer only posts that @mention the bot (or are in a thread it was mentioned in). Default true."),
  streaming: streamingSchema,
  minEditIntervalMs: minEditIntervalSchema,
});

/** A Mattermost channel once finalised: the account id is always set. */
export type MattermostChannelConfig = z.output<typeof mattermostChannelSchema> & { id: string };
