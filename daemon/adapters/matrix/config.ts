/**
 * A Matrix channel's config: the zod schema (the one definition; its key names are the hosted
 * service's: `homeserver`, `user_id`, `access_token`) and the type inferred from it. platform.ts
 * and the adapter both import it, so neither has to import the other.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupChatOptions, httpUrl, minEditIntervalSchema, streamingSchema } from "../../vocabulary/config-fields.js";

export const matrixChannelSchema = z.strictObject({
  type: z.literal("matrix").describe('A Matrix bot user (client-server API, /sync): "matrix".'),
  ...channelCommon,
  ...groupChatOptions,
  access: accessSchema.prefault({}),
  homeserver: httpUrl.describe("The homeserver's client-server API base URL (https://matrix.example.org). Required, no default."),
  user_id: z
    .string()
    .regex(/^@[^\s:]+:\S+$/, "must look like @name:server")
    .describe("The bot's user id (@bot:example.org); the access token must belong to it. Required, no default."),
  access_token: z
    .string()
    .regex(/^\S{16,}$/, "must be at least 16 characters without spaces")
    .describe("The bot user's access token, or ${VAR} naming the variable holding it. Required, no default."),
  requireMention: z
    .boolean()
    .default(true)
    .describe(
      "In group rooms, answer only messages that mention the bot (`m.mentions`, or its name or id in the text of a client without them). Default true.",
    ),
  streaming: streamingSchema,
  minEditIntervalMs: minEditIntervalSchema,
});

/** A Matrix channel once finalised: the account id is always set. */
export type MatrixChannelConfig = z.output<typeof matrixChannelSchema> & { id: string };
