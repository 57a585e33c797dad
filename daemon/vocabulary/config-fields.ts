/**
 * Field schemas shared by the daemon config and every platform's channel
 * schema (daemon/adapters/<platform>/platform.ts). Kept apart from schema.ts,
 * which builds the channel union from the platform registry, so a platform
 * can use them without an import cycle. Messages never echo input values:
 * they may be secrets.
 */
import { z } from "zod";

/** Ids may be written as JSON numbers for convenience, but only while exact. */
export const idString = z.union([z.string(), z.number()], { error: "must be a string" }).transform((v, ctx) => {
  if (typeof v === "number") {
    if (Number.isSafeInteger(v)) return String(v);
    ctx.issues.push({ code: "custom", input: v, message: "must be a string: this id is not exact as a JSON number" });
    return z.NEVER;
  }
  const t = v.trim();
  if (t) return t;
  ctx.issues.push({ code: "custom", input: v, message: "must not be empty" });
  return z.NEVER;
});

export const nonEmpty = z.string().trim().min(1, "must not be empty");
export const posInt = z.number().int("must be a whole number").min(1, "must be at least 1");
export const nonNegInt = z.number().int("must be a whole number").min(0, "must not be negative");
export const httpUrl = z
  .url({ protocol: /^https?$/, error: "must be an http(s) URL" })
  // A trailing slash would double up when paths are appended.
  .transform((u) => u.replace(/\/+$/, ""));

export const groupAccessSchema = z.strictObject({
  enabled: z.boolean().default(true).describe("false: the bridge answers nobody in this group. Default: true."),
  requireMention: z.boolean().optional().describe("Overrides the channel's `requireMention` for this group. Default: the channel's."),
  context: z.boolean().optional().describe("Overrides the channel's `groupContext.enabled` for this group. Default: the channel's."),
  users: z
    .array(idString)
    .optional()
    .describe('Who may talk in this group; replaces the channel-wide `users` list here. "*" = anyone. Default: the channel-wide list.'),
});

export const accessSchema = z
  .strictObject({
    mode: z
      .enum(["allowlist", "pairing", "open"])
      .default("allowlist")
      .describe(
        '"allowlist" fails closed (empty list = nobody); "pairing": as allowlist, and an unknown sender in a direct chat gets a one-time code an owner approves (`agent-bridge pairing approve`, `/approve CODE`); "open" lets anyone talk and must be chosen explicitly. Default: allowlist (new configs: pairing).',
      ),
    users: z
      .array(idString)
      .default([])
      .describe('Who may talk: user ids as /whoami shows them (a phone number as +4915... where the platform has them). "*" = anyone. Default: nobody.'),
    owners: z
      .array(idString)
      .default([])
      .describe("Who owns the bot on this channel: they may talk in direct chats and approve pairing codes with `/approve CODE`. Default: nobody."),
    groups: z
      .record(z.string(), groupAccessSchema)
      .default({})
      .describe("Per group, keyed by chat id: whether it is answered, its mention rule and its users. Default: none."),
    allowUnlistedGroups: z
      .boolean()
      .default(false)
      .describe("true: groups not listed in `groups` are answered too (under the channel-wide `users`). Default: false (refused)."),
  })
  .describe("Who may talk to the bridge on this channel: users, and groups with their own rules.");

/** The acknowledgement reaction: which messages get it, and what becomes of it once answered. */
export const ackReactionSchema = z
  .strictObject({
    emoji: z
      .string()
      .trim()
      .max(16, "must be one emoji")
      .default("👀")
      .describe(
        'The reaction put on a message when the bridge takes it; "" turns it off. Some platforms accept only their own list of reactions. Default: 👀.',
      ),
    scope: z
      .enum(["group-mentions", "group-all", "direct", "all", "off"])
      .default("group-mentions")
      .describe(
        '"group-mentions": group messages that address the bot; "group-all": every group message taken; "direct": direct chats only; "all": everywhere; "off": never. Default: group-mentions (none in direct chats).',
      ),
    done: z
      .string()
      .trim()
      .max(16, "must be one emoji")
      .default("")
      .describe('Once the message is answered, the reaction is replaced by this one; "" removes it. Default: "" (removed).'),
  })
  .prefault({})
  .describe(
    "A reaction that shows a message was taken (best effort: a failure to react never holds up the reply). Default: 👀 on group messages that address the bot.",
  );

/** How unaddressed group messages are kept as context for the next one that addresses the bot. */
export const groupContextSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        "Keep, in groups that require a mention, the recent messages not addressed to the bot, and send them (marked as context, with the speakers' names) with the next message that is. Default: true.",
      ),
    maxMessages: posInt.max(200, "must be at most 200").default(20).describe("The most messages kept per group (the oldest go first). Default: 20."),
    maxAgeMs: posInt.default(2 * 60 * 60 * 1000).describe("Messages older than this are dropped, ms. Default: 7200000 (2 h)."),
    maxChars: posInt
      .max(100_000, "must be at most 100000")
      .default(4000)
      .describe("The most characters of context kept per group, names included (the oldest go first; a longer single message is cut). Default: 4000."),
  })
  .prefault({})
  .describe(
    "Group context: only for groups the bridge serves and senders it would answer; kept in memory only, never logged, never past these bounds. Default: on, 20 messages, 2 h, 4000 characters.",
  );

/** An IANA time zone name this runtime knows (`Intl`), e.g. `Europe/Berlin`. */
const timeZoneName = z.string().refine(
  (zone) => {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: zone });
      return true;
    } catch {
      return false;
    }
  },
  { message: 'must be an IANA time zone such as "Europe/Berlin" or "UTC"' },
);

/** The host's own time zone: what a daily reset hour means when the config names none. */
export { timeZoneName };

export const hostTimeZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone;

/** When a session ends on its own (core/session-reset.ts): daily at an hour and/or after an idle time. */
export const sessionResetSchema = z
  .strictObject({
    daily: z
      .strictObject({
        atHour: z.number().int("must be a whole hour").min(0, "must be 0-23").max(23, "must be 0-23").describe("The hour (0-23) of the daily reset. Required."),
        timeZone: timeZoneName.optional().describe("The IANA time zone the hour is read in, e.g. Europe/Berlin. Default: the machine's own time zone."),
      })
      .optional()
      .describe("Reset once a day: the first message after this hour starts a fresh conversation. Default: no daily reset."),
    idleMinutes: posInt
      .optional()
      .describe("Reset after this many minutes without a turn: the next message starts a fresh conversation. Default: no idle reset."),
    notice: z
      .string()
      .max(300, "must be at most 300 characters")
      .default("(New conversation: the previous one was reset.)")
      .describe('The line put before the first answer after a reset; "" says nothing. Default: "(New conversation: the previous one was reset.)".'),
  })
  .transform(({ daily, ...rest }) => ({ ...rest, ...(daily ? { daily: { atHour: daily.atHour, timeZone: daily.timeZone ?? hostTimeZone() } } : {}) }))
  .describe(
    "When a conversation ends on its own, as with /new: daily at an hour and/or after an idle time, whichever comes first; checked when the next message comes. Default: never (only /new).",
  );

export type SessionResetConfig = z.output<typeof sessionResetSchema>;

/** What a message sent while the agent is still answering that session does (core/queue-mode.ts). */
export const queueModeSchema = z
  .enum(["followup", "collect", "interrupt"])
  .describe(
    '"followup": it waits and is answered on its own; "collect": everything that came while a turn ran becomes one next turn, marked as several messages; "interrupt": the running answer is stopped (what it showed stays, marked as stopped) and the newest message is answered, with the stopped ones.',
  );

export type QueueMode = z.output<typeof queueModeSchema>;

/** A channel's or a route's own queue settings (`queue.mode`), in place of the ones around it. */
export const queueOverrideSchema = z.strictObject({
  mode: queueModeSchema.optional().describe("This channel's or route's queue mode; a chat may choose its own with /queue. Default: the one around it."),
});

/** The bridge's tools for questions with buttons (core/questions/): which, how long they stay open, who may answer. */
const buttonsFields = {
  tools: z
    .array(z.enum(["choice", "confirm"]))
    .describe(
      'The tools offered to the agent in each call: "choice" (`ask_choice`: a question and 2-10 options, optionally a typed answer) and "confirm" (`ask_confirmation`: approve or deny). Default: none (no tools are sent).',
    ),
  expireMinutes: posInt
    .max(7 * 24 * 60, "must be at most 10080 (a week)")
    .describe("How long a question stays open; then its buttons go and the agent is told there was no answer. Default: 60."),
  answeredBy: z
    .enum(["asker", "members", "owners"])
    .describe(
      '"asker": only the person whose message the agent was answering; "members": anyone allowed to talk in the chat; "owners": only the channel\'s owners. In a direct chat the person answers either way. Default: asker.',
    ),
};

export const buttonsSchema = z.strictObject({
  tools: buttonsFields.tools.default([]),
  expireMinutes: buttonsFields.expireMinutes.default(60),
  answeredBy: buttonsFields.answeredBy.default("asker"),
});

/** A channel's or a route's own `buttons` settings, each in place of the one around it. */
export const buttonsOverrideSchema = z.strictObject({
  tools: buttonsFields.tools.optional(),
  expireMinutes: buttonsFields.expireMinutes.optional(),
  answeredBy: buttonsFields.answeredBy.optional(),
});

export type ButtonsConfig = z.output<typeof buttonsSchema>;

const transcriptionLimits = {
  maxBytes: posInt
    .default(25 * 1024 * 1024)
    .describe(
      "The largest audio file transcribed, bytes; a larger one goes to the agent as audio only and the person is told. Default: 26214400 (25 MiB, OpenAI's limit).",
    ),
  maxSeconds: posInt
    .default(600)
    .describe(
      "The longest voice note transcribed, seconds, where the platform says how long it is; a longer one goes as audio only, the person is told. Default: 600.",
    ),
  maxChars: posInt
    .max(100_000, "must be at most 100000")
    .default(8000)
    .describe("The longest transcript passed on, characters; a longer one is cut (marked as cut for the agent). Default: 8000."),
  timeoutMs: posInt
    .default(60_000)
    .describe("How long one transcription may take, ms; past it the audio goes through without a transcript and the person is told. Default: 60000."),
};

/** Voice notes and audio turned into text for the agent (daemon/transcription/): an OpenAI-compatible endpoint or a local command. */
export const transcriptionSchema = z
  .discriminatedUnion("kind", [
    z.strictObject({
      kind: z.literal("openai").describe('"openai": an OpenAI-compatible `/v1/audio/transcriptions` endpoint.'),
      url: httpUrl.describe(
        "The endpoint's API base, ending in /v1 (the audio is posted to <url>/audio/transcriptions); a URL ending in /audio/transcriptions is used as it is. Required.",
      ),
      apiKey: z
        .string()
        .regex(/^\S+$/, "must not contain whitespace")
        .optional()
        .describe("The endpoint's key, sent as `Authorization: Bearer`; best as ${NAME} (it is scrubbed from every log). Default: none (no header)."),
      model: nonEmpty.default("whisper-1").describe("The transcription model asked for. Default: whisper-1."),
      language: z
        .string()
        .regex(/^[a-z]{2,3}$/, "must be an ISO-639-1 code such as en or de")
        .optional()
        .describe("The spoken language as an ISO-639-1 code (en, de, ...), which helps the model. Default: the endpoint detects it."),
      ...transcriptionLimits,
    }),
    z.strictObject({
      kind: z.literal("command").describe('"command": a local program (whisper.cpp, say) that is given the audio file and prints the text.'),
      command: z
        .array(nonEmpty)
        .min(1, "must name the program")
        .describe(
          'The program and its arguments, run without a shell; "{file}" in an argument is replaced by the audio file\'s path, or the path is added last when no argument has it. It prints the transcript on stdout and exits 0. Required.',
        ),
      ...transcriptionLimits,
    }),
  ])
  .describe("Transcribe voice notes and audio people send: the agent gets the transcript, marked as one, with the audio still attached. Default: off.");

export type TranscriptionConfig = z.output<typeof transcriptionSchema>;

/** The keys every channel has, whatever its platform: spread into each channel schema. */
export const channelCommon = {
  id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, _ or -")
    .optional()
    .describe("Account id, unique across channels; routes match on it (`match.accountId`). Default: the type."),
  enabled: z
    .boolean()
    .default(true)
    .describe("false: the channel is left out (its settings are still checked, without its environment variables). Default: true."),
  sessionReset: sessionResetSchema.optional(),
  queue: queueOverrideSchema.optional().describe("This channel's queue mode, in place of the top-level `queue.mode`. Default: the top-level one."),
  buttons: buttonsOverrideSchema
    .optional()
    .describe("This channel's question tools and their settings, each in place of the top-level `buttons` one. Default: the top-level ones."),
  transcription: z
    .union([transcriptionSchema, z.literal(false)])
    .optional()
    .describe("This channel's own transcription of voice notes, in place of the top-level `transcription`; false: none here. Default: the top-level one."),
};

/** The keys of a channel on a platform with groups and reactions: spread into its schema beside `channelCommon`. */
export const groupChatOptions = {
  ackReaction: ackReactionSchema,
  groupContext: groupContextSchema,
};

export type AccessConfig = z.output<typeof accessSchema>;
export type AckReactionConfig = z.output<typeof ackReactionSchema>;
export type GroupContextConfig = z.output<typeof groupContextSchema>;
export type GroupAccessConfig = z.output<typeof groupAccessSchema>;

/** How a reply shows while the agent writes it (channels that can show a reply as it grows). */
export const streamingSchema = z
  .enum(["off", "partial"])
  .default("partial")
  .describe(
    '"partial": the reply appears as the agent writes it (a message edited in place, or printed as it comes where a chat cannot edit); "off": the whole reply once it is done. Default: partial.',
  );

/**
 * Streaming pace on a platform that edits: no default here, the adapter's own
 * (its platform's flood limit) applies when it is left out.
 */
export const minEditIntervalSchema = z
  .number()
  .int()
  .min(0)
  .max(60_000)
  .optional()
  .describe(
    "Streaming: least time between two sends or edits of replies in one chat, ms. Default: the platform's (1000). Lower only where the platform allows it (a local Bot API server, tests).",
  );
