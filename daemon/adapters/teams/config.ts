/**
 * A Microsoft Teams channel's config: the zod schema (the one definition, the
 * keys as the hosted service names them: `app_id`, `app_password`,
 * `tenant_id`) and the type inferred from it. platform.ts and the adapter
 * both import it, so neither has to import the other.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupContextSchema, httpUrl, minEditIntervalSchema, nonEmpty, streamingSchema } from "../../vocabulary/config-fields.js";

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** The words that turn token validation off: said in full, so it is never a slip. */
export const ANONYMOUS_MODE = "anonymous-local-tools-only";

export const teamsHttpSchema = z
  .strictObject({
    host: nonEmpty
      .default("127.0.0.1")
      .describe('Address the messaging endpoint listens on. Default "127.0.0.1" (behind a reverse proxy that terminates TLS).'),
    port: z.number().int().min(0).max(65_535).default(3978).describe("Port the messaging endpoint listens on (0: any free port). Default 3978."),
    path: z
      .string()
      .regex(/^\//, "must start with /")
      .default("/api/messages")
      .describe('Request path of the bot\'s messaging endpoint (Azure Bot → Configuration). Default "/api/messages".'),
  })
  .prefault({})
  .describe("Where Teams (the Bot Connector) posts activities. Default 127.0.0.1:3978/api/messages.");

export const teamsChannelSchema = z
  .strictObject({
    type: z.literal("teams").describe('A Microsoft Teams bot (Azure Bot resource, Bot Framework activities over HTTP): "teams".'),
    ...channelCommon,
    groupContext: groupContextSchema,
    access: accessSchema
      .prefault({})
      .describe(
        "Who is heard: in personal chats (the person's AAD object id or Teams user id 29:...) and group chats / channels (keyed by conversation id 19:...). Default: nobody (an empty allowlist).",
      ),
    app_id: z
      .string()
      .regex(UUID, "a Teams app_id is a UUID")
      .describe("The bot's Microsoft App ID (Azure Bot → Configuration → Microsoft App ID), a UUID. Every activity's token must be issued for it. Required."),
    app_password: z
      .string()
      .regex(/^\S{8,}$/, "a Teams app_password is at least 8 characters without spaces")
      .optional()
      .describe(
        "A client secret of the bot's app registration (Certificates & secrets), or ${VAR} naming the variable holding it: the bridge gets its tokens for replies with it. Required unless `auth` is the anonymous mode.",
      ),
    tenant_id: z
      .string()
      .regex(UUID, "a Teams tenant_id is a UUID")
      .optional()
      .describe(
        "Directory (tenant) ID, for a single-tenant bot: replies use this tenant's token endpoint and activities from any other tenant are refused. Absent: a multi-tenant bot.",
      ),
    auth: z
      .enum(["jwt", ANONYMOUS_MODE])
      .default("jwt")
      .describe(
        `"jwt": every request must carry a Bot Framework token (signature, issuer, audience, expiry, tenant checked) or it is refused. "${ANONYMOUS_MODE}": no token is checked and none is sent, for Microsoft's local Agents Playground only; the endpoint must then listen on a loopback address, and \`check\` warns. Default "jwt".`,
      ),
    http: teamsHttpSchema,
    openIdMetadata: httpUrl
      .default("https://login.botframework.com/v1/.well-known/openidconfiguration")
      .describe("Where the keys that sign the Bot Connector's tokens are published (OpenID metadata). Default the Bot Framework's."),
    tokenEndpoint: httpUrl
      .optional()
      .describe(
        "OAuth 2.0 token endpoint the bridge gets its own tokens from (client credentials). Default https://login.microsoftonline.com/<tenant_id or botframework.com>/oauth2/v2.0/token.",
      ),
    requireMention: z.boolean().default(true).describe("In group chats and channels, answer only a message that @mentions the bot. Default true."),
    streaming: streamingSchema,
    minEditIntervalMs: minEditIntervalSchema,
  })
  .refine((c) => c.auth === ANONYMOUS_MODE || c.app_password !== undefined, {
    message: 'required unless auth is "anonymous-local-tools-only"',
    path: ["app_password"],
  })
  .refine((c) => c.auth !== ANONYMOUS_MODE || isLoopback(c.http.host), {
    message: `the anonymous mode answers anyone: it listens only on a loopback address (127.0.0.1, ::1, localhost)`,
    path: ["http", "host"],
  });

/** A Teams channel once finalised: the account id is always set. */
export type TeamsChannelConfig = z.output<typeof teamsChannelSchema> & { id: string };

/** The token endpoint the bridge's own tokens come from. */
export const tokenEndpointOf = (c: Pick<TeamsChannelConfig, "tokenEndpoint" | "tenant_id">): string =>
  c.tokenEndpoint ?? `https://login.microsoftonline.com/${c.tenant_id ?? "botframework.com"}/oauth2/v2.0/token`;

/** The scope a bot's token for the Bot Connector is asked with. */
export const CONNECTOR_SCOPE = "https://api.botframework.com/.default";

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}
