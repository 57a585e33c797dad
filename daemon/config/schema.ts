/**
 * The daemon's one JSON config file, as a zod schema with every default
 * filled in. Objects are strict so a misspelt key is an error rather than a
 * silently ignored setting; `"//"` comment keys are stripped before parsing
 * (see load.ts). Messages never echo input values: they may be secrets.
 */
import { z } from "zod";
import type { FinalizeContext } from "../adapters/platform.js";
import { platforms } from "../adapters/registry.js";
import { httpUrl, idString, nonEmpty, nonNegInt, posInt } from "./fields.js";

export { accessSchema, groupAccessSchema, type AccessConfig, type GroupAccessConfig } from "./fields.js";

const MiB = 1024 * 1024;

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

/**
 * One channel: the union of every registered platform's channel schema, in
 * registry order, told apart by `type`.
 */
const [firstPlatform, ...otherPlatforms] = platforms;
export const channelSchema = z.discriminatedUnion("type", [firstPlatform.schema, ...otherPlatforms.map((p) => p.schema)]);

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
      return finalizeChannel(ch, { id, dataDir: cfg.dataDir });
    });
    // Routes naming a channel id are checked by the loader, which also sees disabled channels.
    return { ...cfg, channels };
  });

export type DaemonConfig = z.output<typeof daemonConfigSchema>;
export type DaemonConfigInput = z.input<typeof daemonConfigSchema>;
export type ChannelConfig = DaemonConfig["channels"][number];
export type RouteConfig = z.output<typeof routeSchema>;
export type RouteScope = z.output<typeof routeScopeSchema>;
export type ServiceConfig = z.output<typeof serviceSchema>;
export type OpsConfig = z.output<typeof opsSchema>;
export type QueueConfig = z.output<typeof queueSchema>;
export type RetryConfig = z.output<typeof retrySchema>;
export type AttachmentsConfig = z.output<typeof attachmentsSchema>;

type ParsedChannelConfig = z.output<typeof channelSchema>;

/** The channel with the per-platform defaults that need its id or the data folder (each platform's `finalize`). */
function finalizeChannel(channel: ParsedChannelConfig, context: FinalizeContext) {
  for (const platform of platforms) {
    const done = platform.finalize(channel, context);
    if (done) return done;
  }
  // The union only parses registered types, so a platform always answers.
  throw new Error(`no platform for channel type "${channel.type}"`);
}
