/**
 * The daemon's one JSON config file, as a zod schema with every default
 * filled in. Objects are strict so a misspelt key is an error rather than a
 * silently ignored setting; `"//"` comment keys are stripped before parsing
 * (see load.ts). Messages never echo input values: they may be secrets.
 */
import { z } from "zod";
import type { FinalizeContext } from "../adapters/platform.js";
import { platforms } from "../adapters/registry.js";
import { PostgresStateOptionsSchema } from "../state/postgres/options.js";
import { schedulesSchema } from "./schedules.js";
import {
  httpUrl,
  idString,
  nonEmpty,
  nonNegInt,
  posInt,
  queueModeSchema,
  queueOverrideSchema,
  buttonsOverrideSchema,
  buttonsSchema,
  sessionResetSchema,
  transcriptionSchema,
} from "../vocabulary/config-fields.js";

export { accessSchema, groupAccessSchema, type AccessConfig, type GroupAccessConfig } from "../vocabulary/config-fields.js";

const MiB = 1024 * 1024;

export const chatTypeSchema = z.enum(["direct", "group"]);
export const routeScopeSchema = z.enum(["user", "group", "group_user"]);
export const logLevelSchema = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

export const serviceSchema = z.strictObject({
  baseUrl: httpUrl.default("http://127.0.0.1:8080").describe("The hosting service's base URL (or the local emulator's). Default: http://127.0.0.1:8080."),
  apiKey: z
    .string()
    .regex(/^svc_(org|sk)_/, "must start with svc_org_ or svc_sk_")
    .regex(/^\S+$/, "must not contain whitespace")
    .describe(
      "An organization key (svc_org_...) or a scoped key (svc_sk_...) with `interact` on the routed instances (`files` for attachments, `read` for /status); best as ${NAME}. Required.",
    ),
  defaultModel: nonEmpty.default("claude-sonnet-4-5").describe("The model asked for when a route names none. Default: claude-sonnet-4-5."),
  requestTimeoutMs: posInt
    .default(120_000)
    .describe(
      "How long one call to the service may wait for its headers, and for each next piece of its body, ms; a call that times out is retried like a network error. Default: 120000 (2 min).",
    ),
  autoStart: z
    .boolean()
    .default(false)
    .describe("Start a stopped instance when a message arrives for it (the key needs `configure`). Default: false (wait for someone to start it)."),
});

const PORT_PROBLEM = "must be a port number (0 = pick one), null or false (off)";

export const opsSchema = z.strictObject({
  host: nonEmpty
    .default("127.0.0.1")
    .describe("The address the ops server (/healthz, /metrics) listens on; 0.0.0.0 exposes it beyond this machine. Default: 127.0.0.1."),
  /** 0 picks a free port; null or false turns the ops server off (normalised to null). */
  port: z
    .union([z.number().int(PORT_PROBLEM).min(0, PORT_PROBLEM).max(65_535, PORT_PROBLEM), z.null(), z.literal(false)], {
      error: PORT_PROBLEM,
    })
    .default(9464)
    .transform((p): number | null => (p === false ? null : p))
    .describe("The ops server's port: 0 picks a free one (printed at start); null or false turns the ops server off. Default: 9464."),
  token: z
    .string()
    .min(16, "must be at least 16 characters")
    .regex(/^\S+$/, "must not contain whitespace")
    .optional()
    .describe(
      "The operator's console (/ui/) and its API ask for this token; it is a secret, scrubbed from logs like the others, best as ${NAME}. Required when `host` is not a loopback address (unless `console` is false). Default: none (the console answers on loopback only, without one).",
    ),
  console: z.boolean().default(true).describe("Serve the operator's console at /ui/ beside /healthz and /metrics. Default: true."),
});

/** Whether an ops host only listens on this machine (a console there may go without a token). */
export const isLoopbackHost = (host: string): boolean => host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);

const opsWithConsoleRule = opsSchema.superRefine((ops, ctx) => {
  if (ops.console && ops.port !== null && ops.token === undefined && !isLoopbackHost(ops.host)) {
    ctx.addIssue({
      code: "custom",
      path: ["token"],
      message: `the console on a host beyond this machine needs ops.token: set one (best as \${NAME}), bind ops.host to 127.0.0.1, or set ops.console to false to serve only /healthz and /metrics`,
    });
  }
});

export const queueSchema = z.strictObject({
  concurrencyPerInstance: posInt
    .default(4)
    .describe("Turns running against one instance at a time (each session has at most one in flight, in arrival order). Default: 4."),
  maxPendingPerSession: posInt
    .default(20)
    .describe(
      "Messages waiting per session; beyond it a platform that redelivers gets the message back later, elsewhere the person is told the agent is busy. Default: 20.",
    ),
  maxPendingTotal: posInt
    .default(1000)
    .describe("Messages waiting across all sessions; beyond it new messages are refused as for maxPendingPerSession. Default: 1000."),
  debounceMs: nonNegInt
    .default(1500)
    .describe("Messages from one session within this many ms of each other become one turn (joined by newlines); 0 sends each alone. Default: 1500."),
  typingDelayMs: nonNegInt
    .default(500)
    .describe(
      "How long a turn's answer may take before the chat shows the agent typing (then refreshed until the answer is in); an answer within it is sent without one. 0 shows it at once. Default: 500.",
    ),
  maxTurnAgeMs: nonNegInt
    .default(24 * 60 * 60 * 1000)
    .describe("Pending turns older than this after a restart are not answered; the person is told. Default: 86400000 (24 h)."),
  mode: queueModeSchema
    .default("followup")
    .describe(
      'What a message sent while the agent is still answering that session does, unless a channel, a route or the chat (/queue) says otherwise: "followup" waits and is answered on its own; "collect" joins everything that came meanwhile into one next turn; "interrupt" stops the running answer and answers the newest message. Default: followup.',
    ),
});

export const retrySchema = z
  .strictObject({
    maxAttempts: posInt
      .default(6)
      .describe(
        "Tries in all, the first included, for a service call that fails with a network error, a timeout or a 5xx, and for a send to a chat. Default: 6.",
      ),
    baseDelayMs: nonNegInt
      .default(500)
      .describe("The wait after the first failure, ms; it doubles with each further failure (with jitter) up to maxDelayMs. Default: 500."),
    maxDelayMs: nonNegInt.default(30_000).describe("The longest wait between two tries, ms; at least baseDelayMs. Default: 30000."),
    errorCooldownMs: nonNegInt
      .default(60_000)
      .describe(
        "After telling a person that a message could not be answered (or that the agent is busy), further such notices in that chat wait this long and then come as one, saying how many. Default: 60000.",
      ),
    instanceWaitMs: nonNegInt
      .default(120_000)
      .describe(
        "How long a message waits for an instance that is not running (409) while the bridge polls its status, starting it when autoStart allows; it does not use up maxAttempts. Default: 120000 (2 min).",
      ),
  })
  .refine((r) => r.maxDelayMs >= r.baseDelayMs, {
    message: "must be at least baseDelayMs",
    path: ["maxDelayMs"],
  });

export const routeSchema = z.strictObject({
  match: z
    .strictObject({
      platform: nonEmpty.optional().describe("The platform, as a channel's `type` names it. Default: any."),
      accountId: nonEmpty.optional().describe("The channel's id (its `id`, or its type when it has none). Default: any."),
      chatId: idString.optional().describe("The chat's id on its platform (a group, a channel, or a person's direct chat). Default: any."),
      userId: idString.optional().describe("The sender's id on its platform (`/whoami` shows it). Default: any."),
      chatType: chatTypeSchema.optional().describe('"direct" (one person and the bot) or "group". Default: any.'),
    })
    .prefault({})
    .describe("Which messages the route takes: every given field must equal the message's; an empty match (the default) matches everything."),
  instance: nonEmpty.describe("Instance id on the service. Required."),
  model: nonEmpty.optional().describe("The model asked for on this route. Default: service.defaultModel."),
  instructions: z.string().optional().describe("System instructions sent with every turn on this route. Default: none (the instance's own)."),
  scope: routeScopeSchema
    .optional()
    .describe("Whose context a conversation shares. Default: per user in direct chats, per group in groups. Direct chats are always per user."),
  sessionReset: z
    .union([sessionResetSchema, z.literal(false)])
    .optional()
    .describe("This route's own session reset, in place of its channel's (`sessionReset`); false: never. Default: the channel's."),
  queue: queueOverrideSchema.optional().describe("This route's queue mode, in place of its channel's (`queue.mode`). Default: the channel's."),
  buttons: buttonsOverrideSchema.optional().describe("This route's question tools and their settings, each in place of its channel's. Default: the channel's."),
});

export const attachmentsSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(true)
    .describe(
      "Pass files people send on to the instance's workspace (inbox/<platform>/<chat>/...) and name them in the turn; the key needs `files`. Default: true.",
    ),
  maxBytes: posInt.default(20 * MiB).describe("The largest file passed on, bytes; larger ones are dropped and the person is told. Default: 20971520 (20 MiB)."),
});

export const replyFilesSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(true)
    .describe(
      "Send the files the agent names in its reply (a `MEDIA: <path>` line, a Markdown image or link to a workspace path) to the chat as a photo, voice note or document, within each platform's size limit (a line says so otherwise); the key needs `files`. Default: true.",
    ),
});

export const fileStateSchema = z.strictObject({
  kind: z.literal("file").describe('"file": the journal, snapshot and spool in dataDir; one daemon per dataDir.'),
});

/** The state backend: the file journal (default), or PostgreSQL shared by several daemons. */
export const stateSchema = z.discriminatedUnion("kind", [fileStateSchema, PostgresStateOptionsSchema]);

/**
 * One channel: the union of every registered platform's channel schema, in
 * registry order, told apart by `type`.
 */
const [firstPlatform, ...otherPlatforms] = platforms;
export const channelSchema = z.discriminatedUnion("type", [firstPlatform.schema, ...otherPlatforms.map((p) => p.schema)]);

export const daemonConfigSchema = z
  .strictObject({
    service: serviceSchema.describe("The hosting service the bridge talks to, and how."),
    dataDir: nonEmpty
      .default(".data/daemon")
      .describe("Where the daemon keeps its journal, snapshot, lock and downloaded files (one daemon per folder). Default: .data/daemon."),
    state: stateSchema
      .default({ kind: "file" })
      .describe(
        'Where the daemon keeps its state: "file" (the journal in dataDir, one daemon) or "postgres" (several daemons with the same config form one bridge; see docs/cluster.md). Default: {"kind": "file"}.',
      ),
    logLevel: logLevelSchema.default("info").describe("The least severe log lines written; message text is never logged. Default: info."),
    ops: opsWithConsoleRule.prefault({}).describe("The ops HTTP server: /healthz, Prometheus /metrics and the operator's console (/ui/)."),
    watchConfig: z
      .boolean()
      .default(false)
      .describe(
        "Re-read this file when it changes, as SIGHUP and `agent-bridge reload` do (a file with problems is refused; the running config stays). Default: false.",
      ),
    queue: queueSchema.prefault({}).describe("How turns queue per instance and per session, and how much may wait."),
    retry: retrySchema.prefault({}).describe("How failed service calls and sends are tried again, and how often a person is told of failures."),
    /** First match wins. May be empty here; whoever starts the daemon checks. */
    routes: z
      .array(routeSchema)
      .default([])
      .describe("Which instance answers which messages: the first route whose match fits wins; a message no route fits is not answered. Default: none."),
    attachments: attachmentsSchema.prefault({}).describe("Files people send: whether and up to what size they reach the instance."),
    replyFiles: replyFilesSchema.prefault({}).describe("Files the agent names in its replies: whether they are sent to the chat."),
    buttons: buttonsSchema
      .prefault({})
      .describe("Questions with buttons: tools the agent may call to ask the person a choice or a confirmation, shown natively (docs/bridge.md, Buttons)."),
    transcription: transcriptionSchema.optional(),
    schedules: schedulesSchema,
    identityLinks: z
      .array(
        z
          .array(
            z.strictObject({
              channel: nonEmpty.describe("The channel's id. Required."),
              userId: idString.describe("The person's id on that channel (/whoami shows it). Required."),
            }),
          )
          .min(2, "must name at least two identities"),
      )
      .default([])
      .describe(
        "People the owner links across apps: each entry lists one person's ids on several channels, whose direct chats then share one conversation (people can also link themselves with /link). Default: none.",
      ),
    channels: z
      .array(channelSchema)
      .default([])
      .describe("The chat accounts the bridge runs, one per platform account, each told apart by its `type`. Default: none."),
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
      if (cfg.state.kind === "postgres" && ch.enabled && platforms.some((p) => p.type === ch.type && p.machineBound)) {
        ctx.issues.push({
          code: "custom",
          input: ch.type,
          path: ["channels", i, "type"],
          message: `a ${ch.type} channel belongs to one machine and cannot move between nodes: with "state": {"kind": "postgres"} disable it`,
        });
      }
      return finalizeChannel(ch, { id, dataDir: cfg.dataDir });
    });
    const scheduleIds = new Map<string, number>();
    cfg.schedules.forEach((s, i) => {
      const first = scheduleIds.get(s.id);
      if (first !== undefined)
        ctx.issues.push({ code: "custom", input: s.id, path: ["schedules", i, "id"], message: `duplicate schedule id "${s.id}" (also schedules[${first}])` });
      else scheduleIds.set(s.id, i);
    });
    // One person per identity: a member of two groups would join their conversations.
    const linked = new Map<string, number>();
    cfg.identityLinks.forEach((group, i) => {
      group.forEach((member, j) => {
        const key = JSON.stringify([member.channel, member.userId]);
        const first = linked.get(key);
        if (first !== undefined && first !== i)
          ctx.issues.push({
            code: "custom",
            input: member.userId,
            path: ["identityLinks", i, j],
            message: `${member.channel} user ${member.userId} is in identityLinks[${first}] too: one person's ids belong in one group`,
          });
        else linked.set(key, i);
      });
    });
    // Routes and schedules naming a channel id are checked by the loader, which also sees disabled channels.
    return { ...cfg, channels };
  });

export type DaemonConfig = z.output<typeof daemonConfigSchema>;
export type DaemonConfigInput = z.input<typeof daemonConfigSchema>;
export type ChannelConfig = DaemonConfig["channels"][number];
export type RouteConfig = z.output<typeof routeSchema>;
export type RouteScope = z.output<typeof routeScopeSchema>;
export type ServiceConfig = z.output<typeof serviceSchema>;
export type StateConfig = z.output<typeof stateSchema>;
export type OpsConfig = z.output<typeof opsSchema>;
export type QueueConfig = z.output<typeof queueSchema>;
export type RetryConfig = z.output<typeof retrySchema>;
export type AttachmentsConfig = z.output<typeof attachmentsSchema>;
export type ReplyFilesConfig = z.output<typeof replyFilesSchema>;
export type { TranscriptionConfig } from "../vocabulary/config-fields.js";
export type { ScheduleConfig } from "./schedules.js";

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
