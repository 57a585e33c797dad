/**
 * The daemon's one JSON config file, as a zod schema with every default
 * filled in. Objects are strict so a misspelt key is an error rather than a
 * silently ignored setting; `"//"` comment keys are stripped before parsing
 * (see load.ts). Messages never echo input values: they may be secrets.
 */
import { join } from "node:path";
import { z } from "zod";

const MiB = 1024 * 1024;

/** Ids may be written as JSON numbers for convenience, but only while exact. */
const idString = z
  .union([z.string(), z.number()], { error: "must be a string" })
  .transform((v, ctx) => {
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

const nonEmpty = z.string().trim().min(1, "must not be empty");
const posInt = z.number().int("must be a whole number").min(1, "must be at least 1");
const nonNegInt = z.number().int("must be a whole number").min(0, "must not be negative");
const httpUrl = z
  .url({ protocol: /^https?$/, error: "must be an http(s) URL" })
  // A trailing slash would double up when paths are appended.
  .transform((u) => u.replace(/\/+$/, ""));

export const chatTypeSchema = z.enum(["direct", "group"]);
export const routeScopeSchema = z.enum(["user", "group", "group_user"]);
export const logLevelSchema = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

export const serviceSchema = z.strictObject({
  baseUrl: httpUrl.default("http://127.0.0.1:8080").describe("The hosting service (or the local emulator)."),
  apiKey: z
    .string()
    .regex(/^svc_(org|sk)_/, "must start with svc_org_ or svc_sk_")
    .regex(/^\S+$/, "must not contain whitespace")
    .describe("An organization key (svc_org_...) or a scoped key (svc_sk_...) with `interact` on the routed instances; best as ${NAME}."),
  defaultModel: nonEmpty.default("claude-sonnet-4-5"),
  requestTimeoutMs: posInt.default(120_000),
  autoStart: z.boolean().default(false).describe("Start a stopped instance when a message arrives for it (the key needs `configure`)."),
});

const PORT_PROBLEM = "must be a port number (0 = pick one), null or false (off)";

export const opsSchema = z.strictObject({
  host: nonEmpty.default("127.0.0.1"),
  /** 0 picks a free port; null or false turns the ops server off (normalised to null). */
  port: z
    .union([z.number().int(PORT_PROBLEM).min(0, PORT_PROBLEM).max(65_535, PORT_PROBLEM), z.null(), z.literal(false)], {
      error: PORT_PROBLEM,
    })
    .default(9464)
    .transform((p): number | null => (p === false ? null : p)),
});

export const queueSchema = z.strictObject({
  concurrencyPerInstance: posInt.default(4),
  maxPendingPerSession: posInt.default(20),
  maxPendingTotal: posInt.default(1000),
  debounceMs: nonNegInt.default(1500).describe("Messages from one session within this many ms of each other become one turn."),
  maxTurnAgeMs: nonNegInt.default(24 * 60 * 60 * 1000).describe("Pending turns older than this after a restart are not answered; the person is told."),
});

export const retrySchema = z
  .strictObject({
    maxAttempts: posInt.default(6),
    baseDelayMs: nonNegInt.default(500),
    maxDelayMs: nonNegInt.default(30_000),
    errorCooldownMs: nonNegInt.default(60_000),
    instanceWaitMs: nonNegInt.default(120_000),
  })
  .refine((r) => r.maxDelayMs >= r.baseDelayMs, {
    message: "must be at least baseDelayMs",
    path: ["maxDelayMs"],
  });

export const routeSchema = z.strictObject({
  /** Every given field must equal the message's; an empty match matches everything. */
  match: z
    .strictObject({
      platform: nonEmpty.optional(),
      accountId: nonEmpty.optional(),
      chatId: idString.optional(),
      userId: idString.optional(),
      chatType: chatTypeSchema.optional(),
    })
    .prefault({}),
  instance: nonEmpty.describe("Instance id on the service."),
  model: nonEmpty.optional(),
  instructions: z.string().optional(),
  scope: routeScopeSchema
    .optional()
    .describe("Whose context a conversation shares. Default: per user in direct chats, per group in groups. Direct chats are always per user."),
});

export const attachmentsSchema = z.strictObject({
  enabled: z.boolean().default(true),
  maxBytes: posInt.default(20 * MiB),
});

export const groupAccessSchema = z.strictObject({
  enabled: z.boolean().default(true),
  requireMention: z.boolean().optional().describe("Overrides the channel's `requireMention` for this group."),
  users: z.array(idString).optional().describe('Who may talk in this group; replaces the channel-wide `users` list here. "*" = anyone.'),
});

export const accessSchema = z.strictObject({
  mode: z.enum(["allowlist", "open"]).default("allowlist").describe('"allowlist" fails closed (empty list = nobody); "open" must be chosen explicitly.'),
  users: z.array(idString).default([]).describe('User ids; WhatsApp phone numbers (+4915...) or `...@lid` ids. "*" = anyone.'),
  groups: z.record(z.string(), groupAccessSchema).default({}).describe("Per group, keyed by chat id."),
  allowUnlistedGroups: z.boolean().default(false),
});

const channelCommon = {
  id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, _ or -")
    .optional()
    .describe("Account id, unique across channels; defaults to the type."),
  enabled: z.boolean().default(true),
};

/** How a reply shows while the agent writes it. */
export const streamingSchema = z
  .enum(["off", "partial"])
  .default("partial")
  .describe('"partial": the reply appears as the agent writes it (a message edited in place; the terminal prints as it comes); "off": the whole reply once it is done.');

export const terminalChannelSchema = z.strictObject({
  type: z.literal("terminal"),
  ...channelCommon,
  /** Absent: the local user (and only they) may talk. */
  access: accessSchema.optional(),
  userId: idString.default("local"),
  userName: nonEmpty.optional(),
  prompt: z.string().default("you> "),
  streaming: streamingSchema,
});

export const telegramWebhookSchema = z.strictObject({
  /** Public https URL Telegram posts updates to. */
  url: httpUrl,
  host: nonEmpty.default("127.0.0.1"),
  port: z.number().int().min(0).max(65_535).default(8787),
  path: z.string().regex(/^\//, "must start with /").default("/telegram"),
  /** Telegram echoes it in a header, so forged updates can be refused: required. */
  secretToken: z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, "must be 1-256 letters, digits, _ or -"),
});

export const telegramChannelSchema = z
  .strictObject({
    type: z.literal("telegram"),
    ...channelCommon,
    access: accessSchema.prefault({}),
    token: z.string().regex(/^\d+:[A-Za-z0-9_-]{35}$/, "must look like 123456:ABC... (digits, colon, 35 characters)"),
    apiRoot: httpUrl.default("https://api.telegram.org"),
    mode: z.enum(["polling", "webhook"]).default("polling"),
    webhook: telegramWebhookSchema.optional(),
    /** In groups, answer only when mentioned or replied to. */
    requireMention: z.boolean().default(true),
    /** Register the bot's command list with Telegram at start. */
    setCommands: z.boolean().default(true),
    streaming: streamingSchema,
  })
  .refine((c) => c.mode !== "webhook" || c.webhook !== undefined, {
    message: 'required when mode is "webhook"',
    path: ["webhook"],
  });

export const discordChannelSchema = z.strictObject({
  type: z.literal("discord"),
  ...channelCommon,
  access: accessSchema.prefault({}),
  token: z.string().regex(/^\S+$/, 'must be the bare bot token (no whitespace, no "Bot " prefix)'),
  /** REST base. */
  api: httpUrl.default("https://discord.com/api"),
  /** Gateway override, for tests against a local fake. */
  gatewayUrl: z.url({ protocol: /^wss?$/, error: "must be a ws(s) URL" }).optional(),
  /** In guild channels, answer only when mentioned or replied to. */
  requireMention: z.boolean().default(true),
  streaming: streamingSchema,
});

export const whatsappChannelSchema = z.strictObject({
  type: z.literal("whatsapp"),
  ...channelCommon,
  access: accessSchema.prefault({}),
  /** Default `<dataDir>/whatsapp/<id>`. */
  authDir: nonEmpty.optional(),
  printQr: z.boolean().default(true),
  /** In groups, answer only when mentioned or replied to. */
  requireMention: z.boolean().default(true),
  /** Mark admitted senders' messages as read once they are journaled. */
  readReceipts: z.boolean().default(true),
});

export const channelSchema = z.discriminatedUnion("type", [
  terminalChannelSchema,
  telegramChannelSchema,
  discordChannelSchema,
  whatsappChannelSchema,
]);

const defaultAccess = (users: string[]) => ({
  mode: "allowlist" as const,
  users,
  groups: {},
  allowUnlistedGroups: false,
});

export const daemonConfigSchema = z
  .strictObject({
    service: serviceSchema,
    dataDir: nonEmpty.default(".data/daemon"),
    logLevel: logLevelSchema.default("info"),
    ops: opsSchema.prefault({}),
    queue: queueSchema.prefault({}),
    retry: retrySchema.prefault({}),
    /** First match wins. May be empty here; whoever starts the daemon checks. */
    routes: z.array(routeSchema).default([]),
    attachments: attachmentsSchema.prefault({}),
    channels: z.array(channelSchema).default([]),
  })
  .transform((cfg, ctx) => {
    const seen = new Map<string, number>();
    const channels = cfg.channels.map((ch, i) => {
      const id = ch.id ?? ch.type;
      const first = seen.get(id);
      if (first !== undefined) {
        ctx.issues.push({
          code: "custom",
          input: id,
          path: ["channels", i, "id"],
          message: `duplicate account id "${id}" (also channels[${first}]); give each channel its own id`,
        });
      } else seen.set(id, i);
      switch (ch.type) {
        case "terminal":
          return { ...ch, id, access: ch.access ?? defaultAccess([ch.userId]) };
        case "whatsapp":
          return { ...ch, id, authDir: ch.authDir ?? join(cfg.dataDir, "whatsapp", id) };
        default:
          return { ...ch, id };
      }
    });
    // Routes naming a channel id are checked by the loader, which also sees disabled channels.
    return { ...cfg, channels };
  });

export type DaemonConfig = z.output<typeof daemonConfigSchema>;
export type DaemonConfigInput = z.input<typeof daemonConfigSchema>;
export type ChannelConfig = DaemonConfig["channels"][number];
export type TerminalChannelConfig = Extract<ChannelConfig, { type: "terminal" }>;
export type TelegramChannelConfig = Extract<ChannelConfig, { type: "telegram" }>;
export type DiscordChannelConfig = Extract<ChannelConfig, { type: "discord" }>;
export type WhatsAppChannelConfig = Extract<ChannelConfig, { type: "whatsapp" }>;
export type AccessConfig = z.output<typeof accessSchema>;
export type GroupAccessConfig = z.output<typeof groupAccessSchema>;
export type RouteConfig = z.output<typeof routeSchema>;
export type RouteScope = z.output<typeof routeScopeSchema>;
export type ServiceConfig = z.output<typeof serviceSchema>;
export type OpsConfig = z.output<typeof opsSchema>;
export type QueueConfig = z.output<typeof queueSchema>;
export type RetryConfig = z.output<typeof retrySchema>;
export type AttachmentsConfig = z.output<typeof attachmentsSchema>;
