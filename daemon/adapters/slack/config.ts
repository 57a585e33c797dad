/**
 * A Slack channel's config: the zod schema (the one definition, every option
 * described with its default, so config.schema.json carries it) and the type
 * inferred from it. platform.ts and the adapter both import it, so neither
 * has to import the other.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupChatOptions, httpUrl, minEditIntervalSchema, nonEmpty, streamingSchema } from "../../vocabulary/config-fields.js";

export const slackHttpSchema = z
  .strictObject({
    host: nonEmpty
      .default("127.0.0.1")
      .describe('Address the Events API endpoint listens on. Default "127.0.0.1" (behind a reverse proxy that terminates TLS).'),
    port: z.number().int().min(0).max(65_535).default(3000).describe("Port the Events API endpoint listens on (0: any free port). Default 3000."),
    path: z
      .string()
      .regex(/^\//, "must start with /")
      .default("/slack/events")
      .describe('Request path of the app\'s Request URL (Event Subscriptions). Default "/slack/events".'),
  })
  .prefault({})
  .describe('HTTP Events API: where Slack posts events (mode "http"). Default 127.0.0.1:3000/slack/events.');

export const slackWatchdogSchema = z
  .strictObject({
    deafAfterMs: z
      .number()
      .int()
      .min(0)
      .default(30 * 60 * 1000)
      .describe(
        'Socket Mode: a connection that is up but has brought no event for this long, after events came before, is replaced by a new one ("connected but deaf"); 0 turns the watchdog off. Default 1800000 (30 min).',
      ),
  })
  .prefault({})
  .describe("The watchdog against a Socket Mode connection that is up while no events arrive.");

export const slackChannelSchema = z
  .strictObject({
    type: z.literal("slack").describe('A Slack app (Events API over HTTP, or Socket Mode): "slack".'),
    ...channelCommon,
    ...groupChatOptions,
    access: accessSchema
      .prefault({})
      .describe("Who is heard: in DMs (user ids U...) and channels (keyed by channel id C..., G...). Default: nobody (an empty allowlist)."),
    botToken: z
      .string()
      .regex(/^xoxb-[A-Za-z0-9-]+$/, "must be a bot token (xoxb-...)")
      .describe("The bot token (OAuth & Permissions → Bot User OAuth Token, xoxb-...), or ${VAR} naming the variable holding it. Required, no default."),
    mode: z
      .enum(["http", "socket"])
      .default("http")
      .describe(
        '"http": Slack posts events to this daemon\'s endpoint (`http`, verified with `signingSecret`; recommended for production); "socket": the daemon opens a Socket Mode connection with `appToken` (no public URL needed). Default "http".',
      ),
    signingSecret: z
      .string()
      .regex(/^[A-Za-z0-9]{16,128}$/, "must be the app's signing secret (Basic Information → App Credentials)")
      .optional()
      .describe('The app\'s signing secret, or ${VAR}: every posted event is verified with it. Required when mode is "http".'),
    appToken: z
      .string()
      .regex(/^xapp-[A-Za-z0-9-]+$/, "must be an app-level token (xapp-...) with connections:write")
      .optional()
      .describe('An app-level token (Basic Information → App-Level Tokens, scope connections:write), or ${VAR}. Required when mode is "socket".'),
    http: slackHttpSchema,
    api: httpUrl.default("https://slack.com/api").describe('Web API base the bot calls (and `check` probes). Default "https://slack.com/api".'),
    requireMention: z.boolean().default(true).describe("In channels, answer only a message that mentions the bot (or a thread it answers in). Default true."),
    watchdog: slackWatchdogSchema,
    streaming: streamingSchema,
    nativeStreaming: z
      .boolean()
      .default(true)
      .describe(
        'With streaming "partial": in channel threads, stream replies with Slack\'s native streaming (chat.startStream/appendStream/stopStream) where the workspace allows it; false (and in DMs): one message updated in place (chat.update). Default true.',
      ),
    minEditIntervalMs: minEditIntervalSchema,
  })
  .refine((c) => c.mode !== "http" || c.signingSecret !== undefined, { message: 'required when mode is "http"', path: ["signingSecret"] })
  .refine((c) => c.mode !== "socket" || c.appToken !== undefined, { message: 'required when mode is "socket"', path: ["appToken"] })
  .refine((c) => slackReactionName(c.ackReaction.emoji) !== undefined, {
    message: "is not a reaction this bridge can name on Slack (👀 ✅ 👍 ...)",
    path: ["ackReaction", "emoji"],
  })
  .refine((c) => slackReactionName(c.ackReaction.done) !== undefined, {
    message: "is not a reaction this bridge can name on Slack (👀 ✅ 👍 ...)",
    path: ["ackReaction", "done"],
  });

/** A Slack channel once finalised: the account id is always set. */
export type SlackChannelConfig = z.output<typeof slackChannelSchema> & { id: string };

/**
 * Slack names reactions (`reactions.add` takes `name: "eyes"`), the config
 * gives the emoji itself as on the other platforms: the ones a bridge would
 * use, by their Slack names. "" means none.
 */
const REACTION_NAMES: Readonly<Record<string, string>> = {
  "👀": "eyes",
  "✅": "white_check_mark",
  "✔": "heavy_check_mark",
  "☑": "ballot_box_with_check",
  "👍": "+1",
  "👌": "ok_hand",
  "🙏": "pray",
  "🔥": "fire",
  "🎉": "tada",
  "💯": "100",
  "🤔": "thinking_face",
  "⏳": "hourglass_flowing_sand",
  "⌛": "hourglass",
  "🆗": "ok",
  "✍": "writing_hand",
  "🧠": "brain",
  "🤖": "robot_face",
  "❤": "heart",
  "⭐": "star",
  "🚀": "rocket",
};

/** The Slack name of a reaction given as an emoji ("" for none), or undefined when unknown. */
export function slackReactionName(emoji: string): string | undefined {
  if (emoji === "") return "";
  return REACTION_NAMES[emoji] ?? REACTION_NAMES[emoji.replace(/\uFE0F/g, "")];
}

/**
 * Which bot scopes the config needs, for `agent-bridge check`: what the
 * bridge cannot work without (required) and what only a feature the config
 * turns on uses (that feature then fails, the rest works). Pure.
 */
export interface ScopeNeed {
  scope: string;
  /** What it is for, as a person reads it. */
  why: string;
  /** False: only a feature needs it (a warning when missing). */
  required: boolean;
}

export function scopesNeeded(config: Pick<SlackChannelConfig, "access" | "requireMention" | "ackReaction" | "groupContext">): ScopeNeed[] {
  const needs: ScopeNeed[] = [
    { scope: "chat:write", why: "to answer", required: true },
    { scope: "im:history", why: "to read direct messages (message.im events)", required: true },
    { scope: "files:read", why: "to fetch files people send", required: false },
    { scope: "files:write", why: "to send the agent's files", required: false },
    { scope: "assistant:write", why: 'to show "is thinking..." in assistant threads', required: false },
  ];
  const channels = config.access.allowUnlistedGroups || Object.values(config.access.groups).some((g) => g.enabled);
  if (channels) {
    needs.push({ scope: "app_mentions:read", why: "to hear mentions in channels (app_mention events)", required: true });
    const everyMessage = !config.requireMention || config.groupContext.enabled || Object.values(config.access.groups).some((g) => g.requireMention === false);
    needs.push({
      scope: "channels:history",
      why: "to hear follow-ups in threads and unmentioned channel messages (message.channels events)",
      required: everyMessage,
    });
    needs.push({ scope: "groups:history", why: "the same in private channels (message.groups events)", required: false });
  }
  if (config.ackReaction.scope !== "off" && (config.ackReaction.emoji !== "" || config.ackReaction.done !== "")) {
    needs.push({ scope: "reactions:write", why: "for the acknowledgement reaction", required: false });
  }
  return needs;
}

/** The needs `granted` leaves unmet, required first. */
export function missingScopes(needs: readonly ScopeNeed[], granted: readonly string[]): ScopeNeed[] {
  const have = new Set(granted);
  return needs.filter((n) => !have.has(n.scope)).sort((a, b) => Number(b.required) - Number(a.required));
}
