/**
 * Mattermost through @mattermost/client, wired from its parts: the WebSocket
 * (connection.ts) brings `posted` events, inbound.ts translates them,
 * hand-over.ts hands them to the core in order, catch-up.ts fetches what a
 * reconnect could not replay; outbound.ts sends replies, edits, files,
 * reactions and typing through Client4's REST routes (rest.ts).
 */
import { z } from "zod";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import { MattermostCatchUp } from "./catch-up.js";
import type { MattermostChannelConfig } from "./config.js";
import { type ConnectionTuning, createSocketConnection, defaultConnectionTuning, type SocketEvent } from "./connection.js";
import { MattermostHandOver } from "./hand-over.js";
import { type BotIdentity, type ChannelFacts, filesOf, type MattermostPost, postSchema, translateMessage } from "./inbound.js";
import { createMattermostOutbound, MATTERMOST_FILE_LIMITS, MATTERMOST_LIMITS, runeLength } from "./outbound.js";
import { createRest } from "./rest.js";

export { TokenRefused } from "./connection.js";
export type { ConnectionTuning } from "./connection.js";
export { MATTERMOST_LIMITS, emojiName } from "./outbound.js";

export interface MattermostAdapterOptions extends Partial<ConnectionTuning> {
  random?: Random;
  attachmentTimeoutMs?: number;
}

const Me = z.object({ id: z.string(), username: z.string() });
/** `posted`'s data: the post as a JSON string, and around it what the server knows of the channel and the mentions. */
const PostedData = z.object({
  post: z.string(),
  channel_type: z.string().default("O"),
  team_id: z.string().default(""),
  sender_name: z.string().optional(),
  mentions: z.string().optional(),
});

export function createMattermostAdapter(config: MattermostChannelConfig, deps: AdapterDeps, options: MattermostAdapterOptions = {}): ChatAdapter {
  const accountId = config.id;
  const log = deps.logger.child({ adapter: "mattermost", accountId });
  const redact = (text: string): string => redactSecrets(text, [config.bot_token]);
  const { random = cryptoRandom, attachmentTimeoutMs = 60_000, ...tuningOverrides } = options;
  const tuning: ConnectionTuning = { ...defaultConnectionTuning, ...stripUndefined(tuningOverrides) };

  const rest = createRest({ baseUrl: config.base_url, token: config.bot_token, clock: deps.clock });
  let bot: BotIdentity | null = null;
  const outbound = createMattermostOutbound({ rest, botId: () => bot?.id ?? "me" });
  const catchUp = new MattermostCatchUp({ state: deps.state, clock: deps.clock, log, rest });
  const handOver = new MattermostHandOver({
    log,
    catchUp,
    redact,
    attachmentTimeoutMs,
    fileUrl: (id) => rest.client.getFileRoute(id),
    authHeaders: () => ({ authorization: `Bearer ${config.bot_token}` }),
  });

  function takePost(post: MattermostPost, facts: ChannelFacts, extra: { mentions?: string[]; senderName?: string } = {}): void {
    if (!bot) return;
    const onIgnored = (reason: string) => log.debug({ messageId: post.id, chatId: post.channel_id, reason }, "mattermost post ignored");
    const message = translateMessage({ post, channel: facts, ...extra }, { bot, accountId, onIgnored });
    if (message) handOver.take(message, filesOf(post), facts);
  }

  function onEvent(event: SocketEvent): void {
    if (event.event !== "posted") return;
    const data = PostedData.safeParse(event.data);
    const post = data.success ? parseJson(data.data.post, postSchema) : undefined;
    if (!data.success || !post) {
      log.warn("mattermost posted event not understood");
      return;
    }
    const mentions = data.data.mentions ? parseJson(data.data.mentions, z.array(z.string())) : undefined;
    takePost(
      post,
      { type: data.data.channel_type, teamId: data.data.team_id },
      {
        ...(mentions ? { mentions } : {}),
        ...(data.data.sender_name ? { senderName: data.data.sender_name } : {}),
      },
    );
  }

  const connection = createSocketConnection({
    baseUrl: config.base_url,
    token: config.bot_token,
    clock: deps.clock,
    random,
    log,
    tuning,
    onEvent,
    onNewConnection: () => void catchUp.run((post, facts) => takePost(post, facts)),
    report: (event) => {
      const status = event.detail === undefined ? event : { ...event, detail: redact(event.detail) };
      log.debug({ state: status.state, detail: status.detail }, "mattermost status");
      handOver.status(status);
    },
  });

  async function whoAmI(): Promise<BotIdentity> {
    const result = await rest.call(rest.client.getUserRoute("me"), { method: "get" });
    if (!result.ok) throw new Error(`Mattermost refused GET /users/me: ${redact(result.message)} (HTTP ${result.status}); check the channel's bot_token`);
    return Me.parse(result.data);
  }

  return {
    platform: "mattermost",
    accountId,
    limits: { ...MATTERMOST_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? MATTERMOST_LIMITS.minEditIntervalMs },
    redelivers: false,
    // Mattermost counts runes of the raw text (it renders Markdown itself).
    measure: runeLength,

    async start(sink) {
      bot = await whoAmI();
      handOver.open(sink);
      await connection.start();
    },

    async stop() {
      await connection.stop();
      await handOver.idle();
      handOver.close();
      await catchUp.save();
    },

    send: (target, text) => outbound.send(target, text),
    edits: { edit: (target, messageId, text) => outbound.edit(target, messageId, text) },
    files: { limits: MATTERMOST_FILE_LIMITS, send: (target, file) => outbound.sendFile(target, file) },
    sendTyping: (target) => outbound.sendTyping(target),
    reactions: { react: (target, messageId, emoji, options) => outbound.react(target, messageId, emoji, options) },
  };
}

function parseJson<T>(text: string, schema: z.ZodType<T>): T | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
