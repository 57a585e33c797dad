/**
 * A LINE channel's config: the zod schema (the one definition; the keys the
 * hosted service names, `channel_access_token` and `channel_secret`, spelt as
 * it spells them) and the type inferred from it. platform.ts and the adapter
 * both import it, so neither has to import the other.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupContextSchema, httpUrl, nonEmpty } from "../../vocabulary/config-fields.js";
import { fileLinksSchema, filesPathOf } from "../file-links/config.js";

export const lineHttpSchema = z
  .strictObject({
    host: nonEmpty
      .default("127.0.0.1")
      .describe('Address the webhook endpoint listens on. Default "127.0.0.1" (behind a reverse proxy that terminates TLS: LINE posts only to HTTPS).'),
    port: z.number().int().min(0).max(65_535).default(3000).describe("Port the webhook endpoint listens on (0: any free port). Default 3000."),
    path: z
      .string()
      .regex(/^\//, "must start with /")
      .default("/line/webhook")
      .describe('Request path of the channel\'s Webhook URL (Messaging API tab). Default "/line/webhook".'),
  })
  .prefault({})
  .describe("Where LINE posts webhook events. Default 127.0.0.1:3000/line/webhook.");

const lineChannelFields = z.strictObject({
  type: z.literal("line").describe('A LINE Official Account through the Messaging API: "line".'),
  ...channelCommon,
  groupContext: groupContextSchema,
  access: accessSchema
    .prefault({})
    .describe("Who is heard: in one-to-one chats (user ids U...) and groups or rooms (keyed by group id C... or room id R...). Default: nobody."),
  channel_access_token: z
    .string()
    .regex(/^[A-Za-z0-9+/=._-]{32,}$/, "must be the channel access token (Messaging API tab, a long base64 string)")
    .describe("The channel access token (LINE Developers Console → Messaging API → Channel access token), or ${VAR}. Required."),
  channel_secret: z
    .string()
    .regex(/^[0-9a-f]{32}$/, "must be the channel secret (Basic settings, 32 hexadecimal digits)")
    .describe("The channel secret (Basic settings), or ${VAR}: every webhook is verified with it (X-Line-Signature). Required."),
  http: lineHttpSchema,
  api: httpUrl.default("https://api.line.me").describe('Messaging API base the bot calls (and `check` probes). Default "https://api.line.me".'),
  data_api: httpUrl
    .default("https://api-data.line.me")
    .describe('Base the content people send (images, files, audio) is downloaded from. Default "https://api-data.line.me".'),
  requireMention: z.boolean().default(true).describe("In groups and rooms, answer only a message that mentions the bot. Default true."),
  webhook_redelivery: z
    .boolean()
    .default(false)
    .describe(
      'Whether "Webhook redelivery" is turned on for the channel (Messaging API tab). true: an event the bridge cannot take now is answered 500 and LINE delivers it again; false: it is refused with a notice. Default false.',
    ),
  quota_warning: z
    .number()
    .min(0)
    .max(1)
    .default(0.1)
    .describe("Warn in the log when the month's push-message quota left falls below this share (LINE's quota API). 0: never. Default 0.1."),
  file_links: fileLinksSchema,
});

export const lineChannelSchema = lineChannelFields.refine(
  (c) => c.file_links.public_base_url === undefined || !`${c.http.path}/`.startsWith(`${filesPathOf(c.file_links.public_base_url)}/`),
  { message: "the path of public_base_url must not contain the webhook path", path: ["file_links", "public_base_url"] },
);

/** A LINE channel once finalised: the account id is always set. */
export type LineChannelConfig = z.output<typeof lineChannelSchema> & { id: string };
