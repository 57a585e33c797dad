/**
 * A Google Chat channel's config: the zod schema (the one definition, every
 * option described with its default, so config.schema.json carries it) and
 * the type inferred from it. `audience_type` and `audience` are named as the
 * hosted service names them (emulator/channels/catalog.ts); the rest follows
 * the daemon's own spelling. platform.ts and the adapter both import it.
 */
import { z } from "zod";
import { accessSchema, channelCommon, httpUrl, minEditIntervalSchema, nonEmpty, streamingSchema } from "../../vocabulary/config-fields.js";
import { fileLinksSchema, filesPathOf } from "../file-links/config.js";

/** Who signs what Chat posts to an app (developers.google.com/workspace/chat/verify-requests-from-chat). */
export const CHAT_ISSUER = "chat@system.gserviceaccount.com";
/** Project number audience: a JWT signed by Chat's own service account, with these certificates. */
export const CHAT_CERTS_URL = "https://www.googleapis.com/service_accounts/v1/metadata/x509/chat@system.gserviceaccount.com";
/** HTTP endpoint URL audience: a Google-signed OIDC ID token, with Google's OAuth2 certificates. */
export const GOOGLE_OIDC_ISSUERS = ["https://accounts.google.com", "accounts.google.com"] as const;
export const GOOGLE_CERTS_URL = "https://www.googleapis.com/oauth2/v1/certs";

export const googleChatHttpSchema = z
  .strictObject({
    host: nonEmpty
      .default("127.0.0.1")
      .describe('Address the app\'s HTTP endpoint listens on. Default "127.0.0.1" (behind a reverse proxy that terminates TLS).'),
    port: z.number().int().min(0).max(65_535).default(3001).describe("Port the endpoint listens on (0: any free port). Default 3001."),
    path: z
      .string()
      .regex(/^\//, "must start with /")
      .default("/googlechat/events")
      .describe('Request path of the app\'s HTTP endpoint URL (Chat API → Configuration → Connection settings). Default "/googlechat/events".'),
  })
  .prefault({})
  .describe("Where Google Chat posts interaction events. Default 127.0.0.1:3001/googlechat/events.");

export const googleChatChannelSchema = z
  .strictObject({
    type: z.literal("googlechat").describe('A Google Chat app on an HTTP endpoint: "googlechat".'),
    ...channelCommon,
    access: accessSchema
      .prefault({})
      .describe(
        "Who is heard: users (users/123...) in direct messages and spaces (keyed by space name, spaces/AAAA...). Default: nobody (an empty allowlist).",
      ),
    audience_type: z
      .enum(["project-number", "app-url"])
      .describe(
        'How Chat signs its requests, as chosen under Connection settings → Authentication audience: "project-number" (a JWT from chat@system.gserviceaccount.com whose audience is the project number) or "app-url" (a Google OIDC ID token whose audience is the endpoint URL). Required.',
      ),
    audience: nonEmpty.describe(
      "The audience every request's token must carry: the Cloud project number (digits) or the endpoint's full https URL, as configured in Chat. Required.",
    ),
    serviceAccountKeyFile: nonEmpty
      .optional()
      .describe("Path of the service account's JSON key (the app answers through the Chat API as it, scope chat.bot). One of this or serviceAccountKey."),
    serviceAccountKey: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The service account's JSON key itself, as ${VAR} naming the variable holding it (never written in the file). One of this or serviceAccountKeyFile.",
      ),
    http: googleChatHttpSchema,
    api: httpUrl.default("https://chat.googleapis.com").describe('Chat API base the app calls (and `check` probes). Default "https://chat.googleapis.com".'),
    certsUrl: httpUrl
      .optional()
      .describe(
        "Where the keys that sign Chat's requests are published. Default: Chat's x509 certificates for project-number, Google's OAuth2 certificates for app-url.",
      ),
    syncReplyMs: z
      .number()
      .int()
      .min(0)
      .max(25_000)
      .default(8_000)
      .describe(
        "A reply ready this soon after the message is answered in the HTTP response itself (Chat waits about 30 s); later ones, and every streamed reply, are posted through the Chat API. 0: always through the API. Default 8000.",
      ),
    requireMention: z
      .boolean()
      .default(true)
      .describe("In spaces, answer only a message that @mentions the app (Chat sends an app nothing else from a space). Default true."),
    streaming: streamingSchema,
    minEditIntervalMs: minEditIntervalSchema,
    file_links: fileLinksSchema,
  })
  .refine((c) => c.file_links.public_base_url === undefined || !`${c.http.path}/`.startsWith(`${filesPathOf(c.file_links.public_base_url)}/`), {
    message: "the path of public_base_url must not contain the endpoint's path",
    path: ["file_links", "public_base_url"],
  })
  .refine((c) => (c.serviceAccountKeyFile === undefined) !== (c.serviceAccountKey === undefined), {
    message: "give exactly one of serviceAccountKeyFile and serviceAccountKey",
    path: ["serviceAccountKeyFile"],
  })
  .refine((c) => c.audience_type !== "project-number" || /^\d{6,20}$/.test(c.audience), {
    message: 'with audience_type "project-number", audience is the Cloud project number (digits)',
    path: ["audience"],
  })
  .refine((c) => c.audience_type !== "app-url" || /^https?:\/\/\S+$/.test(c.audience), {
    message: 'with audience_type "app-url", audience is the endpoint\'s full URL (https://...)',
    path: ["audience"],
  });

/** A Google Chat channel once finalised: the account id is always set. */
export type GoogleChatChannelConfig = z.output<typeof googleChatChannelSchema> & { id: string };

/** The certificates that sign the requests of this channel's audience type. */
export const certsUrlOf = (c: Pick<GoogleChatChannelConfig, "audience_type" | "certsUrl">): string =>
  c.certsUrl ?? (c.audience_type === "project-number" ? CHAT_CERTS_URL : GOOGLE_CERTS_URL);
