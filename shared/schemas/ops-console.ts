/**
 * The daemon's operator console (`/ui/api/...` on the ops server): what each
 * route takes and answers. The server parses every answer with these before
 * it sends it (a field that is not here never leaves: a pairing code's hash,
 * a message's text outside its chat), and the tests read the page's answers
 * with them. Errors are the contract's `{detail}` sentence.
 */
import { z } from "zod";

export const OpsConsoleError = z.object({ detail: z.string() });

/** A point of a plot: when (epoch ms) and the value then. */
const Point = z.tuple([z.number(), z.number()]);

export const OpsOverview = z.object({
  /** `platformName` as a person says it ("WhatsApp"), `platform` the config's type. */
  channels: z.array(z.object({ id: z.string(), platform: z.string(), platformName: z.string(), state: z.string(), detail: z.string().optional() })),
  queues: z.array(z.object({ instance: z.string(), waiting: z.number(), running: z.number() })),
  turnsPerMinute: z.number(),
  medianLatencyMs: z.number().nullable(),
  turns: z.record(z.string(), z.number()),
  errors: z.number(),
  service: z.array(z.object({ instance: z.string(), reachable: z.boolean(), status: z.string() })),
  config: z.object({
    hash: z.string(),
    lastReload: z
      .discriminatedUnion("ok", [
        z.object({ ok: z.literal(true), at: z.number(), hash: z.string(), changed: z.boolean(), restartNeeded: z.array(z.string()) }),
        z.object({ ok: z.literal(false), at: z.number(), problems: z.array(z.string()) }),
      ])
      .nullable(),
    otherNodesDiffer: z.array(z.object({ node: z.string(), hash: z.string() })).nullable(),
  }),
  /** The last hour, oldest first: turns per minute and latency at each delivered turn, queue depth at each move. */
  history: z.object({ now: z.number(), turnsPerMinute: z.array(Point), latencyMs: z.array(Point), queueDepth: z.array(Point) }),
});

export const OpsPairing = z.object({
  channels: z.array(z.string()),
  lists: z.array(
    z.object({
      channel: z.string(),
      // No code hash: zod drops what is not named here.
      pending: z.array(
        z.object({
          userId: z.string(),
          userName: z.string().optional(),
          platform: z.string(),
          chatId: z.string(),
          createdAt: z.number(),
          expiresAt: z.number(),
        }),
      ),
      approved: z.array(z.object({ userId: z.string(), userName: z.string().optional(), at: z.number(), by: z.string() })),
    }),
  ),
});

export const OpsApproveBody = z.strictObject({ channel: z.string().min(1), code: z.string().min(1).max(64) });
export const OpsRevokeBody = z.strictObject({ channel: z.string().min(1), user: z.string().min(1) });
/** What an action did, in one sentence for the page. */
export const OpsDone = z.object({ text: z.string() });

/** A chat as the console lists it: `name` is how a person would say it (daemon/ops/console/chat-name.ts). */
export const OpsChatSummary = z.object({
  key: z.string(),
  name: z.string(),
  platform: z.string(),
  accountId: z.string(),
  chatId: z.string(),
  chatType: z.enum(["direct", "group"]),
  threadId: z.string().optional(),
  instance: z.string(),
  session: z.object({ base: z.string(), generation: z.number(), chained: z.boolean() }),
  lastAt: z.number(),
  nextReset: z.object({ at: z.number(), reason: z.string() }).nullable(),
});
export const OpsChats = z.object({ chats: z.array(OpsChatSummary.extend({ turns: z.number() })) });
export const OpsChat = OpsChatSummary.extend({
  turns: z.array(
    z.object({
      entry: z.string(),
      acceptedAt: z.number(),
      userName: z.string().optional(),
      text: z.string(),
      reply: z.string().optional(),
      deliveredAt: z.number().optional(),
      latencyMs: z.number().optional(),
      /** The question the agent asked with this reply (buttons). */
      question: z.object({ id: z.string(), text: z.string(), options: z.array(z.string()), allowText: z.boolean() }).optional(),
      /** This message answered a question: the question's text (`text` is then the option chosen). */
      answers: z.string().optional(),
    }),
  ),
});
export const OpsFreshSession = z.object({ sessionId: z.string() });

export const OpsLinks = z.object({
  links: z.array(z.object({ channel: z.string(), platform: z.string(), state: z.string(), qr: z.string().nullable() })),
});

export const OpsCluster = z.object({
  cluster: z
    .object({
      node: z.string(),
      nodes: z.array(z.object({ id: z.string(), seenAgoMs: z.number() })),
      leases: z.array(
        z.object({
          unit: z.string(),
          holder: z.string().nullable(),
          epoch: z.number(),
          expiresInMs: z.number(),
          live: z.boolean(),
          ageMs: z.number().nullable(),
        }),
      ),
    })
    .nullable(),
});

/** A chat as the events name it (no text): `name` as the lists say it. */
const OpsEventChat = z.object({
  key: z.string(),
  name: z.string(),
  platform: z.string(),
  accountId: z.string(),
  chatId: z.string(),
  chatType: z.enum(["direct", "group"]),
  threadId: z.string().optional(),
});
/** What the event stream (`/ui/api/events`) carries besides `hello` and `overflow`; never a message's text (zod drops what is not named). */
export const OpsEvent = z.discriminatedUnion("type", [
  z.object({ type: z.literal("accepted"), at: z.number(), chat: OpsEventChat, instance: z.string(), entry: z.string(), kind: z.enum(["turn", "command"]) }),
  z.object({ type: z.literal("replied"), at: z.number(), chat: OpsEventChat, instance: z.string(), entry: z.string(), latencyMs: z.number() }),
  z.object({ type: z.literal("delivered"), at: z.number(), chat: OpsEventChat, instance: z.string(), entry: z.string(), latencyMs: z.number() }),
  z.object({ type: z.literal("queue"), at: z.number(), instance: z.string(), waiting: z.number(), running: z.number() }),
  z.object({ type: z.literal("channel"), at: z.number(), channel: z.string(), platform: z.string(), platformName: z.string(), state: z.string() }),
  z.object({ type: z.literal("pairing"), at: z.number() }),
  z.object({ type: z.literal("config"), at: z.number() }),
  z.object({ type: z.literal("session"), at: z.number(), chat: OpsEventChat, by: z.string() }),
]);
