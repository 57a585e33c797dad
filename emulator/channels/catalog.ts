/**
 * The channel catalog, exactly as docs/api-contract.md ("Channels") lists it:
 * data, imported by the store's schema (which channel names a record may
 * hold), the channel routes, the console and the redaction of captured bodies.
 */
import { notFound } from "../errors.js";

export interface FieldSpec {
  description: string;
  /** Stored and shown only redacted. */
  secret: boolean;
  /** Returns why the value has the wrong form (never quoting a secret), or nothing. */
  check(value: string, config: Record<string, string>): string | undefined;
}

export interface ChannelSpec {
  channel: string;
  label: string;
  connection_type: "token" | "interactive";
  fields: Record<string, FieldSpec>;
}

const matching = (pattern: RegExp, why: string) => (value: string) => (pattern.test(value) ? undefined : why);
const httpUrl = (why: string) => (value: string) => {
  if (!URL.canParse(value)) return why;
  const { protocol } = new URL(value);
  return protocol === "https:" || protocol === "http:" ? undefined : why;
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const field = (description: string, secret: boolean, check: FieldSpec["check"]): FieldSpec => ({ description, secret, check });

/** The catalog, exactly as docs/api-contract.md ("Channels") lists it. */
export const CHANNELS: readonly ChannelSpec[] = [
  {
    channel: "telegram",
    label: "Telegram",
    connection_type: "token",
    fields: {
      token: field(
        "Bot token from @BotFather (123456789:ABC...)",
        true,
        matching(/^\d+:[A-Za-z0-9_-]{35}$/, "a Telegram bot token is <digits>:<35 letters, digits, _ or ->, as @BotFather gives it"),
      ),
    },
  },
  {
    channel: "discord",
    label: "Discord",
    connection_type: "token",
    fields: {
      token: field(
        "Bot token from the Discord developer portal",
        true,
        matching(/^[A-Za-z0-9_-]{18,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{25,}$/, "a Discord bot token has three dot-separated base64url parts"),
      ),
    },
  },
  {
    channel: "slack",
    label: "Slack",
    connection_type: "token",
    fields: {
      bot_token: field("Bot user OAuth token (xoxb-...)", true, matching(/^xoxb-[A-Za-z0-9-]{10,}$/, "a Slack bot token starts with xoxb-")),
      app_token: field("App-level token for Socket Mode (xapp-...)", true, matching(/^xapp-[A-Za-z0-9-]{10,}$/, "a Slack app token starts with xapp-")),
    },
  },
  { channel: "whatsapp", label: "WhatsApp", connection_type: "interactive", fields: {} },
  {
    channel: "signal",
    label: "Signal",
    connection_type: "token",
    fields: {
      account: field(
        "Phone number of the Signal account, in E.164 form (+15551234567)",
        false,
        matching(/^\+[1-9]\d{6,14}$/, "a Signal account is a phone number in E.164 form, like +15551234567"),
      ),
    },
  },
  {
    channel: "matrix",
    label: "Matrix",
    connection_type: "token",
    fields: {
      homeserver: field("Homeserver URL (https://matrix.example.org)", false, httpUrl("a Matrix homeserver is an http(s) URL")),
      user_id: field("Bot user id (@bot:example.org)", false, matching(/^@[^\s:]+:\S+$/, "a Matrix user id looks like @name:server")),
      access_token: field("Access token of the bot user", true, matching(/^\S{16,}$/, "a Matrix access token is at least 16 characters without spaces")),
    },
  },
  {
    channel: "mattermost",
    label: "Mattermost",
    connection_type: "token",
    fields: {
      bot_token: field("Bot account access token", true, matching(/^[a-z0-9]{26}$/, "a Mattermost token is 26 lowercase letters and digits")),
      base_url: field("Server URL (https://chat.example.com)", false, httpUrl("a Mattermost base URL is an http(s) URL")),
    },
  },
  {
    channel: "line",
    label: "LINE",
    connection_type: "token",
    fields: {
      channel_access_token: field(
        "Channel access token (long-lived)",
        true,
        matching(/^[A-Za-z0-9+/=._-]{32,}$/, "a LINE channel access token is a long base64 string"),
      ),
      channel_secret: field("Channel secret (32 hex digits)", true, matching(/^[0-9a-f]{32}$/, "a LINE channel secret is 32 hexadecimal digits")),
    },
  },
  {
    channel: "googlechat",
    label: "Google Chat",
    connection_type: "token",
    fields: {
      audience_type: field(
        "How the audience is given: app-url or project-number",
        false,
        matching(/^(app-url|project-number)$/, "audience_type is app-url or project-number"),
      ),
      audience: field("The app URL, or the Google Cloud project number", false, (value, config) =>
        config.audience_type === "project-number"
          ? /^\d{6,20}$/.test(value)
            ? undefined
            : "with audience_type project-number, audience is the project number (digits)"
          : httpUrl("with audience_type app-url, audience is an https URL")(value),
      ),
    },
  },
  {
    channel: "msteams",
    label: "Microsoft Teams",
    connection_type: "token",
    fields: {
      app_id: field("Microsoft App ID of the bot (a UUID)", false, matching(UUID, "a Teams app_id is a UUID")),
      app_password: field(
        "Client secret of the bot's app registration",
        true,
        matching(/^\S{8,}$/, "a Teams app_password is at least 8 characters without spaces"),
      ),
      tenant_id: field("Directory (tenant) ID (a UUID)", false, matching(UUID, "a Teams tenant_id is a UUID")),
    },
  },
];

const BY_NAME = new Map(CHANNELS.map((spec) => [spec.channel, spec]));

export function channelSpec(name: string): ChannelSpec {
  const spec = BY_NAME.get(name);
  if (!spec) throw notFound(`Unknown channel '${name.length > 64 ? `${name.slice(0, 61)}...` : name}'. Known: ${CHANNELS.map((c) => c.channel).join(", ")}.`);
  return spec;
}
