/**
 * A local stand-in for Discord: the REST API (`/api/v10/...`) and the gateway
 * WebSocket on one HTTP server bound to 127.0.0.1, port 0. It speaks just what
 * discord.js 14 (@discordjs/rest 2, @discordjs/ws 1) uses, with JSON encoding
 * and no compression (zlib-sync is not installed, so the library asks for none):
 *
 * - REST: `GET /gateway/bot` (the ws manager's first call on login), `GET /users/@me`,
 *   `GET /channels/:id`, `POST /channels/:id/messages` (recorded), `POST /channels/:id/typing`,
 *   `POST /users/@me/channels` (open a DM), `PATCH /channels/:id/messages/:id` (edits the bot's own
 *   messages; history kept; with `editIntervalMs`, edits closer together get Discord's 429), and
 *   `POST /channels/:id/messages` also as multipart (`payload_json`, `files[n]`; at most 10 files of
 *   10 MiB, else 50035/40005), the files kept with the message;
 *   `PUT`/`DELETE /channels/:id/messages/:id/reactions/:emoji/@me` (the bot's own reaction: the
 *   message must exist, the emoji must be a Unicode emoji or `name:id`, else 10008/10014),
 *   attachment downloads under `/attachments/`.
 *   Every `/api` call must carry `Authorization: Bot <token>` or gets 401.
 * - Gateway: HELLO (op 10) on connect; IDENTIFY (op 2) -> READY then GUILD_CREATE for each
 *   guild (discord.js holds its `clientReady` until every guild listed in READY arrives);
 *   HEARTBEAT (op 1) -> ACK (op 11); RESUME (op 6) -> replay of missed dispatches, then RESUMED,
 *   or INVALID_SESSION (op 9, d false) when the session is gone.
 *
 * Buttons: a message's `components` (on create and edit) must follow Discord's rules (at most
 * 5 action rows of at most 5 buttons; a button with a style other than Link needs a `custom_id`
 * of 1-100 characters, unique in the message; a label at most 80 characters), else 50035.
 * `tapButton` dispatches INTERACTION_CREATE (type 3, `member` in a guild, `user` in a DM) and
 * the interaction must be answered at `POST /interactions/:id/:token/callback` (no bot token:
 * the interaction's token is the credential) within 3 s of its creation, once (a late answer:
 * 10062 Unknown interaction; a second: 40060 already acknowledged); follow-ups at
 * `POST /webhooks/:application_id/:token` only after that answer, for 15 minutes.
 *
 * Application commands: `PUT /applications/:id/commands` replaces the bot's global commands
 * (names 1-32 lower-case characters, descriptions 1-100, at most 100 commands, else 50035);
 * `useCommand` dispatches an APPLICATION_COMMAND interaction (type 2) for one of them. A deferred
 * answer (type 5) posts the "thinking" response, which `PATCH /webhooks/:application_id/:token/
 * messages/@original` later replaces (within 15 minutes).
 *
 * Threads (`FakeGuild.threads`) are channels of their own, as on Discord: type 11
 * (PUBLIC_THREAD) with the `parent_id` of the text channel they hang off and
 * `thread_metadata`, listed in GUILD_CREATE's `threads` (the active threads a
 * bot is given on connect); a message in one carries the thread's id as its
 * `channel_id`, and the bot posts into it at `/channels/<thread id>/messages`.
 *
 * Discord has no one-connection rule: every gateway session of the bot (two processes
 * on one token, say) receives every dispatch, and a new IDENTIFY does not end the
 * others (discord.js guides: "You're running two instances of the bot" is how
 * duplicate replies look). `dropConnection` and friends act on the newest session.
 * REST calls (by HTTP connection, `tcp-N`) and gateway IDENTIFY/RESUME (by
 * WebSocket, `gateway-N`) are logged with their time in `platformCalls()`.
 *
 * Tests drive it with `dispatchMessage` and friends, break it with `dropConnection`,
 * `invalidateSession`, `closeGateway` and `failNext`, and read what the bot did with
 * `sentMessages`, `typingCount` and `waitFor`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocketServer, WebSocket, type RawData } from "ws";
import { multipartParts } from "../helpers/multipart.js";
import { waitUntil } from "../helpers/wait.js";
import { CallLog, type PlatformCall } from "./call-log.js";

const DISCORD_EPOCH = 1_420_070_400_000n;
/** Discord's upload limit without boosts or Nitro: 10 MiB. */
const FILE_LIMIT = 10 * 1024 * 1024;

export interface FakeUser {
  id: string;
  username: string;
  bot?: boolean;
  global_name?: string | null;
}

export interface FakeGuild {
  id: string;
  name: string;
  channels: { id: string; name: string }[];
  /** Active public threads, each under one of `channels`. */
  threads?: { id: string; name: string; parentId: string }[];
}

export interface FakeAttachmentInput {
  filename: string;
  contentType?: string;
  data: Buffer;
  /** Reported size when it should differ from `data.length` (a lying platform). */
  size?: number;
  /**
   * A voice message's length: the attachment gets `duration_secs` and a `waveform` (as Discord's
   * voice messages carry them) and the message the IS_VOICE_MESSAGE flag (1 << 13).
   */
  durationSecs?: number;
}

export interface DispatchMessageInput {
  channelId: string;
  author: FakeUser;
  content: string;
  /** Set for guild channels; omitted for DMs. */
  guildId?: string;
  /** Users mentioned (Discord fills `mentions` with them). */
  mentions?: FakeUser[];
  /** Role ids mentioned (`<@&id>`). */
  mentionRoles?: string[];
  /** Id of a message in the same channel this one replies to. */
  replyTo?: string;
  attachments?: FakeAttachmentInput[];
  /** Message id; a fresh snowflake when omitted. */
  id?: string;
}

export interface RecordedMessage {
  id: string;
  channelId: string;
  content: string;
  /** The `message_reference.message_id` the bot replied to, if any. */
  replyTo?: string;
  allowedMentions?: unknown;
  /** Files attached (multipart `files[n]`), in order. */
  files?: { name: string; data: Buffer }[];
  /** The whole JSON body as the bot sent it. */
  body: Record<string, unknown>;
}

export interface GatewayConnectionInfo {
  path: string;
  query: Record<string, string>;
}

export interface FakeDiscordOptions {
  token: string;
  bot?: FakeUser;
  guilds?: FakeGuild[];
  /** Sent in HELLO. Large by default so tests see no heartbeat churn. */
  heartbeatIntervalMs?: number;
  /** Wall clock for snowflakes and timestamps. */
  now?: () => number;
  /** Edits in one channel closer together than this answer 429 (default 0: no limit). */
  editIntervalMs?: number;
}

/** One version of a bot message: as posted, then after each edit. */
export interface MessageVersion {
  content: string;
  /** The fake's clock when it was accepted. */
  at: number;
}

interface ChannelRecord {
  id: string;
  /** 0 GUILD_TEXT, 1 DM, 11 PUBLIC_THREAD. */
  type: 0 | 1 | 11;
  name?: string;
  guildId?: string;
  /** Threads: the text channel they hang off. */
  parentId?: string;
  /** DM channels: the other person. */
  recipient?: FakeUser;
}

interface Session {
  id: string;
  seq: number;
  /** Dispatches sent in this session, for RESUME replays. */
  log: { s: number; payload: string }[];
  resumable: boolean;
  socket: WebSocket | null;
  /** Whether `socket` has finished READY/RESUMED and receives dispatches. */
  live: boolean;
}

interface Fault {
  method: string;
  path: RegExp;
  status: number;
  times: number;
}

type Json = Record<string, unknown>;

/** One answer to an interaction: its callback (type 4, 5, 6 or 7) or a follow-up. */
export interface InteractionAnswer {
  kind: "callback" | "followup";
  /** The callback type (4 message, 5 deferred message, 6 deferred update, 7 update); absent for a follow-up. */
  type?: number;
  content?: string;
  /** Shown only to the person who tapped (flags 64). */
  ephemeral: boolean;
  at: number;
}

/** Discord's rules for a bulk overwrite of application commands; the first broken one, or undefined. */
export function commandsProblem(commands: unknown): string | undefined {
  if (!Array.isArray(commands)) return "must be an array";
  if (commands.length > 100) return "Must be 100 or fewer in length.";
  const names = new Set<string>();
  for (const [i, command] of (commands as Json[]).entries()) {
    if (typeof command.name !== "string" || !/^[-_\p{Ll}\p{N}]{1,32}$/u.test(command.name)) return `${i}.name: Command name is invalid`;
    if (names.has(command.name)) return `${i}.name: Application command names must be unique`;
    names.add(command.name);
    if (typeof command.description !== "string" || command.description.length < 1 || command.description.length > 100)
      return `${i}.description: Must be between 1 and 100 in length.`;
    const options = Array.isArray(command.options) ? (command.options as Json[]) : [];
    if (options.length > 25) return `${i}.options: Must be 25 or fewer in length.`;
    let optional = false;
    for (const option of options) {
      if (typeof option.description !== "string" || option.description.length < 1 || option.description.length > 100)
        return `${i}.options: description must be 1-100 characters`;
      // Required options come first.
      if (option.required === true && optional) return `${i}.options: Required options must be placed before non-required options`;
      if (option.required !== true) optional = true;
    }
  }
  return undefined;
}

/** Discord's rules for a message's components; the first broken one as Discord words it, or undefined. */
export function componentProblem(components: unknown): string | undefined {
  if (components === undefined) return undefined;
  if (!Array.isArray(components)) return "components: must be an array";
  if (components.length > 5) return "components: Must be 5 or fewer in length.";
  const ids = new Set<string>();
  for (const [r, row] of components.entries()) {
    const rowJson = row as Json;
    if (rowJson?.type !== 1 || !Array.isArray(rowJson.components)) return `components.${r}: an action row (type 1) with components`;
    if (rowJson.components.length < 1 || rowJson.components.length > 5) return `components.${r}.components: Must be between 1 and 5 in length.`;
    for (const [c, item] of rowJson.components.entries()) {
      const button = item as Json;
      const at = `components.${r}.components.${c}`;
      if (button?.type !== 2) return `${at}: only buttons (type 2) here`;
      if (typeof button.style !== "number" || button.style < 1 || button.style > 6) return `${at}.style: Value must be one of {1, 2, 3, 4, 5, 6}.`;
      if (typeof button.label === "string" && [...button.label].length > 80) return `${at}.label: Must be 80 or fewer in length.`;
      if (button.style === 5) {
        if (typeof button.url !== "string" || button.custom_id !== undefined) return `${at}: a link button has a url and no custom_id`;
        continue;
      }
      if (typeof button.custom_id !== "string" || button.custom_id.length < 1 || button.custom_id.length > 100) {
        return `${at}.custom_id: Must be between 1 and 100 in length.`;
      }
      if (ids.has(button.custom_id)) return `${at}.custom_id: Component custom id cannot be duplicated`;
      ids.add(button.custom_id);
    }
  }
  return undefined;
}

export interface FakeDiscord {
  readonly bot: FakeUser;
  /** Attachment downloads wait until the returned function is called (a slow CDN). */
  holdAttachments(): () => void;
  /** Attachment downloads asked for so far. */
  readonly attachmentRequests: number;
  /** REST base to configure the client with (`rest.api`), e.g. `http://127.0.0.1:PORT/api`. */
  readonly apiBase: string;
  /** What `GET /gateway/bot` hands out. */
  readonly gatewayUrl: string;
  /** What READY names as `resume_gateway_url`; RESUMEs connect here. */
  readonly resumeGatewayUrl: string;
  readonly stats: { identifies: number; resumes: number; connections: number; invalidSessions: number };
  /** Every gateway connection's path and query string, oldest first. */
  readonly connections: GatewayConnectionInfo[];
  /** Every IDENTIFY payload's `d`, oldest first (token included: tests check it reached the gateway). */
  readonly identifyPayloads: Json[];
  /** True while a socket is connected and past READY/RESUMED. */
  isLive(): boolean;
  /** Gateway sessions connected and past READY/RESUMED now (each receives every dispatch). */
  liveSessions(): number;
  /** REST calls and gateway IDENTIFY/RESUME with their time and connection, oldest first. */
  platformCalls(): PlatformCall[];
  /** Sends MESSAGE_CREATE and returns the message object dispatched. */
  dispatchMessage(input: DispatchMessageInput): Json;
  /** A message sent while the bot had no gateway session: in the channel's history (`GET /channels/:id/messages`), dispatched to nobody. */
  postWhileAway(input: DispatchMessageInput): Json;
  /** A DM from `author` (the DM channel is created on first use). */
  dispatchDirectMessage(author: FakeUser, content: string, extra?: Partial<DispatchMessageInput>): Json;
  /** The bot's managed role in a guild (`<@&id>` mentions it). */
  botRoleId(guildId: string): string;
  /** The DM channel id between the bot and `user` (created if needed). */
  dmChannelFor(user: FakeUser): string;
  /** Messages the bot posted to a channel, oldest first. */
  sentMessages(channelId: string): RecordedMessage[];
  typingCount(channelId: string): number;
  /** The bot's own reactions on a message now, in the order added. */
  reactionsOn(messageId: string): string[];
  /** Every accepted reaction change, in order. */
  reactionLog: { messageId: string; emoji: string; op: "add" | "remove" }[];
  /** A bot message's versions (post, then each accepted edit); undefined for an unknown id. */
  messageVersions(messageId: string): MessageVersion[] | undefined;
  /** The bot's messages in a channel with their current content (after edits), oldest first. */
  shownMessages(channelId: string): { id: string; content: string; versions: MessageVersion[] }[];
  /** The labels of a message's buttons as it shows them now, in order ([]: none). */
  buttonsOn(messageId: string): string[];
  /** `user` taps the `index`-th button (0-based, in order) of a bot message: INTERACTION_CREATE to every session. */
  tapButton(input: { messageId: string; user: FakeUser; index: number }): { interactionId: string };
  /** The bot's registered application commands (names), in order. */
  commands(): string[];
  /** `user` runs the bot's command `name` with string options in `channelId`: INTERACTION_CREATE (type 2). */
  useCommand(input: { channelId: string; user: FakeUser; name: string; options?: Record<string, string> }): { interactionId: string };
  /** The response an interaction shows now (the deferred one, then what replaced it); undefined: none yet. */
  interactionResponse(interactionId: string): { content: string; loading: boolean; messageId: string } | undefined;
  /** How each interaction was answered: callbacks and follow-ups, in order. */
  interactionAnswers(interactionId: string): InteractionAnswer[];
  /** Edits in one channel closer together than this answer 429 with `retry_after` (0: no limit). */
  setEditInterval(ms: number): void;
  /** Edits answered 429 because of `setEditInterval`, so far. */
  rateLimitedEdits(): number;
  /** The next `times` requests matching method and path answer `status` with an error body. */
  failNext(method: string, path: RegExp, status: number, times?: number): void;
  /** Closes the live socket with a resumable code (4000 by default); the session stays resumable. */
  dropConnection(code?: number): void;
  /** Sends INVALID_SESSION (op 9). With `resumable` false the session is forgotten. */
  invalidateSession(resumable?: boolean): void;
  /** Closes the live socket with any code, e.g. a non-recoverable one (4010 invalid shard). */
  closeGateway(code: number, reason?: string): void;
  /** Accepts the next `n` gateway connections without ever sending HELLO. */
  silenceNextConnections(n: number): void;
  close(): Promise<void>;
}

/** Re-checks `check` until it returns something truthy; rejects with `label` after `timeoutMs`. */
export function waitFor<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  label = "condition",
  timeoutMs = 10_000,
): Promise<T> {
  return waitUntil(check, label, timeoutMs);
}

export async function createFakeDiscord(options: FakeDiscordOptions): Promise<FakeDiscord> {
  const now = options.now ?? (() => Date.now());
  const bot: FakeUser = options.bot ?? { id: "900000000000000001", username: "relay-bot", bot: true };
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? 41_250;
  const guilds = options.guilds ?? [];

  let increment = 0n;
  const snowflake = (): string => (((BigInt(now()) - DISCORD_EPOCH) << 22n) | (increment++ & 0xfffn)).toString();

  // Discord's `timestamp` and the time inside the id agree; discord.js reads the latter.
  const snowflakeTime = (id: string): number | undefined => (/^\d{15,20}$/.test(id) ? Number((BigInt(id) >> 22n) + DISCORD_EPOCH) : undefined);

  const channels = new Map<string, ChannelRecord>();
  for (const guild of guilds) {
    for (const channel of guild.channels) {
      channels.set(channel.id, { id: channel.id, type: 0, name: channel.name, guildId: guild.id });
    }
    for (const thread of guild.threads ?? []) {
      if (!guild.channels.some((c) => c.id === thread.parentId)) throw new Error(`thread ${thread.id}: no channel ${thread.parentId} in guild ${guild.id}`);
      channels.set(thread.id, { id: thread.id, type: 11, name: thread.name, guildId: guild.id, parentId: thread.parentId });
    }
  }
  const dmByUser = new Map<string, string>();
  const messages = new Map<string, Json>();
  const sent = new Map<string, RecordedMessage[]>();
  const typing = new Map<string, number>();
  const reactions = new Map<string, string[]>();
  const attachments = new Map<string, { data: Buffer; contentType: string }>();
  let attachmentGate: Promise<void> | undefined;
  let attachmentRequests = 0;
  const faults: Fault[] = [];
  /** Interactions by id: their token, when they were made, how they were answered. */
  const interactions = new Map<
    string,
    {
      token: string;
      at: number;
      channelId: string;
      messageId: string;
      user: FakeUser;
      answers: InteractionAnswer[];
      response?: { content: string; loading: boolean; messageId: string };
    }
  >();
  /** The bot's global application commands, as registered. */
  let registeredCommands: Json[] = [];
  const versions = new Map<string, MessageVersion[]>();
  let editIntervalMs = options.editIntervalMs ?? 0;
  const lastEditAt = new Map<string, number>();
  let rateLimitedEdits = 0;
  const stats = { identifies: 0, resumes: 0, connections: 0, invalidSessions: 0 };
  const connectionLog: GatewayConnectionInfo[] = [];
  const identifyPayloads: Json[] = [];
  const sessions = new Map<string, Session>();
  /** The newest session: what `dropConnection`, `invalidateSession` and `closeGateway` act on. */
  let current: Session | null = null;
  const callLog = new CallLog(now);
  let silence = 0;

  const userJson = (user: FakeUser): Json => ({
    id: user.id,
    username: user.username,
    discriminator: "0",
    global_name: user.global_name ?? null,
    avatar: null,
    bot: user.bot ?? false,
  });

  const threadJson = (channel: ChannelRecord): Json => ({
    id: channel.id,
    type: 11,
    guild_id: channel.guildId,
    parent_id: channel.parentId,
    name: channel.name,
    owner_id: "1",
    last_message_id: null,
    rate_limit_per_user: 0,
    message_count: 0,
    member_count: 1,
    thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date(now()).toISOString(), locked: false },
  });

  const channelJson = (channel: ChannelRecord): Json =>
    channel.type === 1
      ? { id: channel.id, type: 1, last_message_id: null, recipients: channel.recipient ? [userJson(channel.recipient)] : [] }
      : channel.type === 11
        ? threadJson(channel)
        : {
            id: channel.id,
            type: 0,
            guild_id: channel.guildId,
            name: channel.name,
            position: 0,
            permission_overwrites: [],
            nsfw: false,
            topic: null,
            last_message_id: null,
            parent_id: null,
            rate_limit_per_user: 0,
          };

  const guildJson = (guild: FakeGuild): Json => ({
    id: guild.id,
    name: guild.name,
    icon: null,
    owner_id: "1",
    unavailable: false,
    member_count: 2,
    large: false,
    joined_at: new Date(now()).toISOString(),
    features: [],
    channels: guild.channels.map((c) => channelJson({ id: c.id, type: 0, name: c.name, guildId: guild.id })),
    threads: (guild.threads ?? []).map((t) => threadJson({ id: t.id, type: 11, name: t.name, guildId: guild.id, parentId: t.parentId })),
    roles: [
      { id: guild.id, name: "@everyone", permissions: "1071698660929", position: 0, color: 0, hoist: false, managed: false, mentionable: false, flags: 0 },
      {
        id: botRoleId(guild.id),
        name: bot.username,
        permissions: "0",
        position: 1,
        color: 0,
        hoist: false,
        managed: true,
        mentionable: false,
        flags: 0,
        tags: { bot_id: bot.id },
      },
    ],
    members: [{ user: userJson(bot), roles: [botRoleId(guild.id)], joined_at: new Date(now()).toISOString(), deaf: false, mute: false, flags: 0 }],
    presences: [],
    voice_states: [],
    emojis: [],
    stickers: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
  });

  // Not a real snowflake rule: just distinct and stable for the bot's managed role.
  function botRoleId(guildId: string): string {
    return (BigInt(guildId) + 7n).toString();
  }

  // ---- REST ----------------------------------------------------------------

  const server = createServer((req, res) => {
    void handleHttp(req, res).catch((error: unknown) => {
      send(res, 500, { message: String(error), code: 0 });
    });
  });

  const send = (res: ServerResponse, status: number, body?: unknown, contentType = "application/json") => {
    if (res.headersSent) return;
    if (body === undefined) {
      res.writeHead(status).end();
      return;
    }
    const payload = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
    res.writeHead(status, { "content-type": contentType, "content-length": payload.length }).end(payload);
  };

  /** A message create: JSON, or multipart with `payload_json` and `files[n]` (how discord.js sends attachments). */
  const readMessageBody = async (req: IncomingMessage): Promise<{ body: Json; files: { name: string; data: Buffer }[] }> => {
    const type = req.headers["content-type"] ?? "";
    if (!type.includes("multipart/form-data")) return { body: await readJson(req), files: [] };
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: Json = {};
    const files: { name: string; data: Buffer }[] = [];
    for (const part of multipartParts(Buffer.concat(chunks), type)) {
      if (part.name === "payload_json") body = JSON.parse(part.data.toString("utf8")) as Json;
      else if (/^files\[\d+\]$/.test(part.name)) files.push({ name: part.fileName ?? part.name, data: part.data });
    }
    return { body, files };
  };

  const readRaw = async (req: IncomingMessage): Promise<Buffer> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  const readJson = async (req: IncomingMessage): Promise<Json> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (!chunks.length) return {};
    const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    return parsed && typeof parsed === "object" ? (parsed as Json) : {};
  };

  async function handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const method = req.method ?? "GET";
    const path = url.pathname;

    const attachment = /^\/attachments\/(\d+)\/(\d+)\/[^/]+$/.exec(path);
    if (attachment && method === "GET") {
      attachmentRequests++;
      await attachmentGate;
      const stored = attachments.get(attachment[2]!);
      if (!stored) return send(res, 404, { message: "Not Found", code: 0 });
      return send(res, 200, stored.data, stored.contentType);
    }

    if (!path.startsWith("/api/v10/")) return send(res, 404, { message: "404: Not Found", code: 0 });
    const route = path.slice("/api/v10".length);
    callLog.record(callLog.name(req.socket, "tcp"), `${method} ${route.replace(/\/\d+/g, "/:id")}`);
    // An interaction's answers carry its token in the path, no bot token (discord.js sends them `auth: false`).
    const callback = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(route);
    if (callback && method === "POST") return answerInteraction(req, res, callback[1]!, callback[2]!);
    const original = /^\/webhooks\/(\d+)\/([^/]+)\/messages\/(?:@|%40)original$/.exec(route);
    if (original && method === "PATCH") return editOriginal(req, res, original[1]!, original[2]!);
    const followUp = /^\/webhooks\/(\d+)\/([^/]+)$/.exec(route);
    if (followUp && method === "POST") return followUpInteraction(req, res, followUp[1]!, followUp[2]!);
    if (req.headers.authorization !== `Bot ${options.token}`) {
      return send(res, 401, { message: "401: Unauthorized", code: 0 });
    }
    const faultIndex = faults.findIndex((f) => f.method === method && f.path.test(route));
    if (faultIndex >= 0) {
      const fault = faults[faultIndex]!;
      if (--fault.times <= 0) faults.splice(faultIndex, 1);
      return send(res, fault.status, { message: `injected ${fault.status}`, code: 0 });
    }

    if (method === "GET" && route === "/gateway/bot") {
      return send(res, 200, {
        url: gatewayUrl,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 86_400_000, max_concurrency: 1 },
      });
    }
    if (method === "GET" && route === "/users/@me") return send(res, 200, userJson(bot));
    if (method === "PUT" && route === `/applications/${bot.id}/commands`) {
      const body: unknown = JSON.parse((await readRaw(req)).toString("utf8") || "null");
      const problem = commandsProblem(body);
      if (problem)
        return send(res, 400, { message: "Invalid Form Body", code: 50035, errors: { _errors: [{ code: "APPLICATION_COMMAND_INVALID", message: problem }] } });
      registeredCommands = (body as Json[]).map((c) => ({ ...c, id: snowflake(), application_id: bot.id, version: snowflake() }));
      return send(res, 200, registeredCommands);
    }
    if (method === "POST" && route === "/users/@me/channels") {
      const body = await readJson(req);
      const recipientId = typeof body.recipient_id === "string" ? body.recipient_id : "";
      if (!recipientId) return send(res, 400, { message: "Invalid Form Body", code: 50035 });
      const id = dmChannelFor({ id: recipientId, username: `user-${recipientId}` });
      return send(res, 200, channelJson(channels.get(id)!));
    }
    const reactionRoute = /^\/channels\/(\d+)\/messages\/(\d+)\/reactions\/([^/]+)\/@me$/.exec(route);
    if (reactionRoute && (method === "PUT" || method === "DELETE")) return ownReaction(res, method, reactionRoute[1]!, reactionRoute[2]!, reactionRoute[3]!);
    const messageRoute = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(route);
    if (messageRoute && method === "PATCH") return editMessage(req, res, messageRoute[1]!, messageRoute[2]!);
    const channelRoute = /^\/channels\/(\d+)(\/messages|\/typing)?$/.exec(route);
    if (channelRoute) {
      const channel = channels.get(channelRoute[1]!);
      if (!channel) return send(res, 404, { message: "Unknown Channel", code: 10003 });
      const sub = channelRoute[2];
      if (method === "GET" && !sub) return send(res, 200, channelJson(channel));
      if (method === "GET" && sub === "/messages") return send(res, 200, history(channel.id, new URL(req.url ?? "/", httpBase).searchParams));
      if (method === "POST" && sub === "/typing") {
        typing.set(channel.id, (typing.get(channel.id) ?? 0) + 1);
        return send(res, 204);
      }
      if (method === "POST" && sub === "/messages") {
        const { body, files } = await readMessageBody(req);
        const content = typeof body.content === "string" ? body.content : "";
        if (!content && !files.length) return send(res, 400, { message: "Cannot send an empty message", code: 50006 });
        if (files.length > 10) return send(res, 400, { message: "Invalid Form Body", code: 50035 });
        if (files.some((f) => f.data.length > FILE_LIMIT)) return send(res, 413, { message: "Request entity too large", code: 40005 });
        if ([...content].length > 2000) {
          return send(res, 400, {
            message: "Invalid Form Body",
            code: 50035,
            errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length." }] } },
          });
        }
        const problem = componentProblem(body.components);
        if (problem)
          return send(res, 400, { message: "Invalid Form Body", code: 50035, errors: { _errors: [{ code: "COMPONENT_INVALID", message: problem }] } });
        const reference = body.message_reference as Json | undefined;
        const replyTo = typeof reference?.message_id === "string" ? reference.message_id : undefined;
        // A reference names a message by its snowflake (with fail_if_not_exists false an unknown one is dropped, a malformed one refused).
        if (reference && !/^\d{15,20}$/.test(String(reference.message_id ?? ""))) {
          return send(res, 400, {
            message: "Invalid Form Body",
            code: 50035,
            errors: { message_reference: { message_id: { _errors: [{ code: "NUMBER_TYPE_COERCE", message: "Value is not snowflake." }] } } },
          });
        }
        const message = messageJson({ id: snowflake(), channel, author: bot, content, replyTo });
        if (Array.isArray(body.components)) message.components = body.components;
        messages.set(message.id as string, message);
        const record: RecordedMessage = { id: message.id as string, channelId: channel.id, content, body, allowedMentions: body.allowed_mentions };
        if (files.length) record.files = files;
        if (replyTo) record.replyTo = replyTo;
        sent.set(channel.id, [...(sent.get(channel.id) ?? []), record]);
        versions.set(record.id, [{ content, at: now() }]);
        return send(res, 200, message);
      }
    }
    return send(res, 404, { message: "404: Not Found", code: 0 });
  }

  /** The bot's own reaction: added (idempotent) or removed; 204 either way, as Discord answers. */
  async function ownReaction(res: ServerResponse, method: "PUT" | "DELETE", channelId: string, messageId: string, encoded: string): Promise<void> {
    if (!channels.has(channelId)) return send(res, 404, { message: "Unknown Channel", code: 10003 });
    const message = messages.get(messageId);
    if (!message || message.channel_id !== channelId) return send(res, 404, { message: "Unknown Message", code: 10008 });
    let emoji: string;
    try {
      emoji = decodeURIComponent(encoded);
    } catch {
      return send(res, 400, { message: "Unknown Emoji", code: 10014 });
    }
    if (!/^\p{Extended_Pictographic}/u.test(emoji) && !/^[\w-]+:\d+$/.test(emoji)) return send(res, 400, { message: "Unknown Emoji", code: 10014 });
    const mine = reactions.get(messageId) ?? [];
    if (method === "PUT" && !mine.includes(emoji)) mine.push(emoji);
    if (method === "DELETE" && mine.includes(emoji)) mine.splice(mine.indexOf(emoji), 1);
    reactions.set(messageId, mine);
    fake.reactionLog.push({ messageId, emoji, op: method === "PUT" ? "add" : "remove" });
    return send(res, 204);
  }

  /** Discord's edit: only the author may change `content`; limits as on create. */
  async function editMessage(req: IncomingMessage, res: ServerResponse, channelId: string, messageId: string): Promise<void> {
    const channel = channels.get(channelId);
    if (!channel) return send(res, 404, { message: "Unknown Channel", code: 10003 });
    const message = messages.get(messageId);
    if (!message || message.channel_id !== channelId) return send(res, 404, { message: "Unknown Message", code: 10008 });
    const body = await readJson(req);
    const author = message.author as Json | undefined;
    if (author?.id !== bot.id) return send(res, 403, { message: "Cannot edit a message authored by another user", code: 50005 });
    if (body.content !== undefined && typeof body.content !== "string") {
      return send(res, 400, {
        message: "Invalid Form Body",
        code: 50035,
        errors: { content: { _errors: [{ code: "STRING_TYPE_CONVERT", message: "Could not interpret as string." }] } },
      });
    }
    const content = typeof body.content === "string" ? body.content : String(message.content);
    if (!content) return send(res, 400, { message: "Cannot send an empty message", code: 50006 });
    const problem = componentProblem(body.components);
    if (problem) return send(res, 400, { message: "Invalid Form Body", code: 50035, errors: { _errors: [{ code: "COMPONENT_INVALID", message: problem }] } });
    if ([...content].length > 2000) {
      return send(res, 400, {
        message: "Invalid Form Body",
        code: 50035,
        errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length." }] } },
      });
    }
    const at = now();
    const last = lastEditAt.get(channelId);
    if (editIntervalMs > 0 && last !== undefined && at - last < editIntervalMs) {
      const retryAfter = (last + editIntervalMs - at) / 1000;
      rateLimitedEdits++;
      // Discord's shape: seconds (a float) in the body and in Retry-After, with the bucket headers discord.js reads.
      res.setHeader("retry-after", String(Math.ceil(retryAfter)));
      res.setHeader("x-ratelimit-limit", "1");
      res.setHeader("x-ratelimit-remaining", "0");
      res.setHeader("x-ratelimit-reset-after", retryAfter.toFixed(3));
      res.setHeader("x-ratelimit-bucket", `edit-${channelId}`);
      res.setHeader("x-ratelimit-scope", "user");
      return send(res, 429, { message: "You are being rate limited.", retry_after: retryAfter, global: false });
    }
    lastEditAt.set(channelId, at);
    message.content = content;
    if (Array.isArray(body.components)) message.components = body.components;
    message.edited_timestamp = new Date(at).toISOString();
    versions.get(messageId)?.push({ content, at });
    return send(res, 200, message);
  }

  /** An interaction's one callback, within 3 s of the tap. */
  async function answerInteraction(req: IncomingMessage, res: ServerResponse, id: string, token: string): Promise<void> {
    const body = await readJson(req);
    const interaction = interactions.get(id);
    if (!interaction || interaction.token !== token || now() - interaction.at > 3000) return send(res, 404, { message: "Unknown interaction", code: 10062 });
    if (interaction.answers.some((a) => a.kind === "callback")) return send(res, 400, { message: "Interaction has already been acknowledged.", code: 40060 });
    const type = body.type;
    const data = (body.data ?? {}) as Json;
    if (type !== 4 && type !== 5 && type !== 6 && type !== 7) return send(res, 400, { message: "Invalid Form Body", code: 50035 });
    const content = typeof data.content === "string" ? data.content : undefined;
    interaction.answers.push({
      kind: "callback",
      type,
      ...(content !== undefined ? { content } : {}),
      ephemeral: ((Number(data.flags) || 0) & 64) !== 0,
      at: now(),
    });
    if (type === 4 || type === 5) {
      // The response is a message of the bot's in the channel ("thinking" until replaced, for a deferred one).
      const channel = channels.get(interaction.channelId);
      if (channel) {
        const shown = type === 5 ? "" : (content ?? "");
        const message = messageJson({ id: snowflake(), channel, author: bot, content: shown });
        message.flags = (type === 5 ? 128 : 0) | ((Number(data.flags) || 0) & 64);
        message.interaction_metadata = { id, type: 2, user: userJson(interaction.user) };
        messages.set(message.id as string, message);
        versions.set(message.id as string, [{ content: shown, at: now() }]);
        interaction.response = { content: shown, loading: type === 5, messageId: message.id as string };
      }
    }
    if (type === 7) {
      const message = messages.get(interaction.messageId);
      if (message && content !== undefined) message.content = content;
      if (message && Array.isArray(data.components)) message.components = data.components;
    }
    return send(res, 204);
  }

  /** The deferred response replaced (PATCH @original), within 15 minutes of the interaction. */
  async function editOriginal(req: IncomingMessage, res: ServerResponse, applicationId: string, token: string): Promise<void> {
    const body = await readJson(req);
    const interaction = [...interactions.values()].find((i) => i.token === token);
    if (applicationId !== bot.id || !interaction || now() - interaction.at > 15 * 60_000) return send(res, 404, { message: "Unknown Webhook", code: 10015 });
    const response = interaction.response;
    if (!response) return send(res, 404, { message: "Unknown Message", code: 10008 });
    const content = typeof body.content === "string" ? body.content : response.content;
    if ([...content].length > 2000) return send(res, 400, { message: "Invalid Form Body", code: 50035 });
    response.content = content;
    response.loading = false;
    const message = messages.get(response.messageId);
    if (message) {
      message.content = content;
      message.flags = 0;
      versions.get(response.messageId)?.push({ content, at: now() });
    }
    return send(res, 200, message ?? {});
  }

  /** A follow-up message: only once the interaction was answered, for 15 minutes. */
  async function followUpInteraction(req: IncomingMessage, res: ServerResponse, applicationId: string, token: string): Promise<void> {
    const body = await readJson(req);
    const interaction = [...interactions.values()].find((i) => i.token === token);
    if (applicationId !== bot.id || !interaction || now() - interaction.at > 15 * 60_000) return send(res, 404, { message: "Unknown Webhook", code: 10015 });
    if (!interaction.answers.some((a) => a.kind === "callback")) return send(res, 404, { message: "Unknown Webhook", code: 10015 });
    const content = typeof body.content === "string" ? body.content : "";
    interaction.answers.push({ kind: "followup", content, ephemeral: ((Number(body.flags) || 0) & 64) !== 0, at: now() });
    const channel = channels.get(interaction.channelId);
    if (!channel) return send(res, 404, { message: "Unknown Channel", code: 10003 });
    return send(res, 200, { ...messageJson({ id: snowflake(), channel, author: bot, content }), flags: Number(body.flags) || 0, webhook_id: bot.id });
  }

  function buttonsOf(message: Json | undefined): Json[] {
    const rows = Array.isArray(message?.components) ? (message.components as Json[]) : [];
    return rows.flatMap((row) => (Array.isArray(row.components) ? (row.components as Json[]) : []));
  }

  /**
   * Makes an interaction of `type` (2 a command, 3 a component) by `user` in `channel` and
   * dispatches INTERACTION_CREATE to every session: in a guild the person comes as
   * `member.user`, in a DM as `user`.
   */
  function dispatchInteraction(input: { type: 2 | 3; channel: ChannelRecord; user: FakeUser; messageId: string; data: Json; message?: Json }): {
    interactionId: string;
  } {
    const { channel, user } = input;
    if (!current) throw new Error("fake discord: no gateway session to dispatch into");
    const id = snowflake();
    const token = `ixtoken-${id}`;
    interactions.set(id, { token, at: now(), channelId: channel.id, messageId: input.messageId, user, answers: [] });
    const payload: Json = {
      id,
      application_id: bot.id,
      type: input.type,
      token,
      version: 1,
      channel_id: channel.id,
      channel: channel.guildId ? channelJson(channel) : { id: channel.id, type: 1, recipients: [userJson(user)] },
      ...(input.message ? { message: input.message } : {}),
      data: input.data,
      locale: "en-US",
      app_permissions: "0",
      entitlements: [],
      authorizing_integration_owners: {},
      context: channel.guildId ? 0 : 1,
      attachment_size_limit: FILE_LIMIT,
    };
    if (channel.guildId) {
      payload.guild_id = channel.guildId;
      payload.member = { user: userJson(user), roles: [], permissions: "0", joined_at: new Date(now()).toISOString(), deaf: false, mute: false, flags: 0 };
    } else payload.user = userJson(user);
    for (const session of sessions.values()) if (session.resumable) dispatch(session, "INTERACTION_CREATE", payload);
    return { interactionId: id };
  }

  function useCommand(input: { channelId: string; user: FakeUser; name: string; options?: Record<string, string> }): { interactionId: string } {
    const command = registeredCommands.find((c) => c.name === input.name);
    if (!command) throw new Error(`fake discord: the bot has no command /${input.name}`);
    const channel = channels.get(input.channelId);
    if (!channel) throw new Error(`fake discord: no channel ${input.channelId}`);
    const options = input.options ? { options: Object.entries(input.options).map(([name, value]) => ({ name, type: 3, value })) } : {};
    return dispatchInteraction({ type: 2, channel, user: input.user, messageId: "", data: { id: command.id, name: input.name, type: 1, ...options } });
  }

  function tapButton(input: { messageId: string; user: FakeUser; index: number }): { interactionId: string } {
    const message = messages.get(input.messageId);
    const button = buttonsOf(message)[input.index];
    if (!message || !button) throw new Error(`fake discord: message ${input.messageId} has no button ${input.index}`);
    const channel = channels.get(String(message.channel_id))!;
    return dispatchInteraction({
      type: 3,
      channel,
      user: input.user,
      messageId: input.messageId,
      message,
      data: { custom_id: button.custom_id, component_type: 2 },
    });
  }

  function messageJson(input: {
    id: string;
    channel: ChannelRecord;
    author: FakeUser;
    content: string;
    // Each absent or undefined field reads as the message not having it.
    mentions?: FakeUser[] | undefined;
    mentionRoles?: string[] | undefined;
    replyTo?: string | undefined;
    attachments?: Json[];
  }): Json {
    const referenced = input.replyTo ? messages.get(input.replyTo) : undefined;
    const mentions = [...(input.mentions ?? [])].map(userJson);
    const message: Json = {
      id: input.id,
      type: referenced ? 19 : 0,
      channel_id: input.channel.id,
      author: userJson(input.author),
      content: input.content,
      timestamp: new Date(snowflakeTime(input.id) ?? now()).toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions,
      mention_roles: input.mentionRoles ?? [],
      attachments: input.attachments ?? [],
      embeds: [],
      pinned: false,
      flags: 0,
      components: [],
    };
    if (input.channel.guildId) message.guild_id = input.channel.guildId;
    if (referenced) {
      message.message_reference = { type: 0, message_id: referenced.id, channel_id: input.channel.id, guild_id: input.channel.guildId };
      message.referenced_message = referenced;
    }
    return message;
  }

  function dmChannelFor(user: FakeUser): string {
    const existing = dmByUser.get(user.id);
    if (existing) return existing;
    const id = snowflake();
    channels.set(id, { id, type: 1, recipient: user });
    dmByUser.set(user.id, id);
    return id;
  }

  // ---- Gateway -------------------------------------------------------------

  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, req));
  });

  function onConnection(ws: WebSocket, req: IncomingMessage): void {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const query = Object.fromEntries(url.searchParams);
    connectionLog.push({ path: url.pathname, query });
    stats.connections++;
    if (silence > 0) {
      silence--;
      return;
    }
    // What discord.js must ask for: API v10, JSON, and no transport compression.
    if (query.v !== "10") {
      ws.close(4012, "Invalid API version");
      return;
    }
    if (query.encoding !== "json" || query.compress) {
      ws.close(4002, "Decode error");
      return;
    }

    let session: Session | null = null;
    const sendRaw = (payload: Json) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(payload));
    };
    sendRaw({ op: 10, d: { heartbeat_interval: heartbeatIntervalMs }, s: null, t: null });

    ws.on("message", (raw: RawData) => {
      let payload: Json;
      try {
        payload = JSON.parse(raw.toString()) as Json;
      } catch {
        ws.close(4002, "Decode error");
        return;
      }
      const d = (payload.d ?? {}) as Json;
      switch (payload.op) {
        case 1:
          sendRaw({ op: 11, d: null, s: null, t: null });
          return;
        case 2: {
          if (d.token !== options.token) return ws.close(4004, "Authentication failed");
          if (session) return ws.close(4005, "Already authenticated");
          stats.identifies++;
          identifyPayloads.push(d);
          callLog.record(callLog.name(ws, "gateway"), "IDENTIFY");
          session = { id: `session-${stats.identifies}-${snowflake()}`, seq: 0, log: [], resumable: true, socket: ws, live: true };
          sessions.set(session.id, session);
          current = session;
          dispatch(session, "READY", {
            v: 10,
            user: { ...userJson(bot), verified: true, mfa_enabled: false, flags: 0 },
            session_id: session.id,
            session_type: "normal",
            resume_gateway_url: resumeGatewayUrl,
            guilds: guilds.map((g) => ({ id: g.id, unavailable: true })),
            private_channels: [],
            relationships: [],
            presences: [],
            application: { id: bot.id, flags: 0 },
            shard: [0, 1],
          });
          for (const guild of guilds) dispatch(session, "GUILD_CREATE", guildJson(guild));
          return;
        }
        case 6: {
          if (d.token !== options.token) return ws.close(4004, "Authentication failed");
          const known = typeof d.session_id === "string" ? sessions.get(d.session_id) : undefined;
          if (!known?.resumable) {
            stats.invalidSessions++;
            sendRaw({ op: 9, d: false, s: null, t: null });
            return;
          }
          stats.resumes++;
          callLog.record(callLog.name(ws, "gateway"), "RESUME");
          if (known.socket && known.socket !== ws) known.socket.close(4000, "Session resumed elsewhere");
          session = known;
          current = known;
          known.socket = ws;
          const from = typeof d.seq === "number" ? d.seq : 0;
          for (const entry of known.log) if (entry.s > from) ws.send(entry.payload);
          known.live = true;
          dispatch(known, "RESUMED", {});
          return;
        }
        default:
          // Presence updates, member requests and the like: accepted, ignored.
          return;
      }
    });
    ws.on("close", () => {
      if (session && session.socket === ws) {
        session.socket = null;
        session.live = false;
      }
    });
  }

  /**
   * `GET /channels/:id/messages?after=&limit=` as Discord answers it: with `after`, the oldest
   * `limit` (1-100, default 50) messages newer than that id; without, the newest; newest first.
   */
  function history(channelId: string, query: URLSearchParams): Json[] {
    const limit = Math.min(100, Math.max(1, Number(query.get("limit") ?? 50) || 50));
    const after = query.get("after");
    const inChannel = [...messages.values()]
      .filter((m) => m.channel_id === channelId)
      .sort((a, b) => (BigInt(a.id as string) < BigInt(b.id as string) ? -1 : 1));
    const picked = after === null ? inChannel.slice(-limit) : inChannel.filter((m) => BigInt(m.id as string) > BigInt(after)).slice(0, limit);
    return picked.reverse();
  }

  /** Sends (or, while the socket is away, keeps for a RESUME) one dispatch in `session`. */
  function dispatch(session: Session, type: string, data: Json): void {
    const s = ++session.seq;
    const payload = JSON.stringify({ op: 0, t: type, s, d: data });
    session.log.push({ s, payload });
    if (session.log.length > 1000) session.log.shift();
    if (session.socket && session.socket.readyState === WebSocket.OPEN) session.socket.send(payload);
  }

  function dispatchMessage(input: DispatchMessageInput, options: { dispatch?: boolean } = {}): Json {
    let channel = channels.get(input.channelId);
    if (!channel) {
      channel = input.guildId
        ? { id: input.channelId, type: 0, name: `channel-${input.channelId}`, guildId: input.guildId }
        : { id: input.channelId, type: 1, recipient: input.author };
      channels.set(channel.id, channel);
    }
    const id = input.id ?? snowflake();
    const attachmentJson = (input.attachments ?? []).map((a) => {
      const attachmentId = snowflake();
      const contentType = a.contentType ?? "application/octet-stream";
      attachments.set(attachmentId, { data: a.data, contentType });
      return {
        id: attachmentId,
        filename: a.filename,
        size: a.size ?? a.data.length,
        content_type: contentType,
        ...(a.durationSecs !== undefined ? { duration_secs: a.durationSecs, waveform: Buffer.alloc(8, 128).toString("base64") } : {}),
        url: `${httpBase}/attachments/${channel.id}/${attachmentId}/${encodeURIComponent(a.filename)}`,
        proxy_url: `${httpBase}/attachments/${channel.id}/${attachmentId}/${encodeURIComponent(a.filename)}`,
      };
    });
    const message = messageJson({
      id,
      channel,
      author: input.author,
      content: input.content,
      mentions: input.mentions,
      mentionRoles: input.mentionRoles,
      replyTo: input.replyTo,
      attachments: attachmentJson,
    });
    if (input.attachments?.some((a) => a.durationSecs !== undefined)) message.flags = 1 << 13;
    // Discord adds the replied-to author to `mentions` when the reply pings them.
    const referenced = message.referenced_message as Json | undefined;
    const referencedAuthor = referenced?.author as Json | undefined;
    if (referencedAuthor && Array.isArray(message.mentions) && !message.mentions.some((m) => (m as Json).id === referencedAuthor.id)) {
      message.mentions.push(referencedAuthor);
    }
    messages.set(id, message);
    // Gateway-only extras: `channel_type` is how discord.js builds an uncached DM channel.
    const payload: Json = { ...message, channel_type: channel.type };
    if (channel.guildId) {
      payload.member = { roles: [], joined_at: new Date(now()).toISOString(), deaf: false, mute: false, flags: 0 };
    }
    if (options.dispatch === false) return message;
    if (!current) throw new Error("fake discord: no gateway session to dispatch into");
    // Every session of the bot gets it: connected ones now, resumable ones on RESUME.
    for (const session of sessions.values()) if (session.resumable) dispatch(session, "MESSAGE_CREATE", payload);
    return message;
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const httpBase = `http://127.0.0.1:${port}`;
  const gatewayUrl = `ws://127.0.0.1:${port}`;
  const resumeGatewayUrl = `ws://127.0.0.1:${port}/resume`;

  const liveSocket = (): WebSocket | null => (current?.socket && current.socket.readyState === WebSocket.OPEN ? current.socket : null);

  const fake: FakeDiscord = {
    bot,
    holdAttachments() {
      let release!: () => void;
      attachmentGate = new Promise<void>((r) => (release = r));
      return () => {
        attachmentGate = undefined;
        release();
      };
    },
    get attachmentRequests() {
      return attachmentRequests;
    },
    apiBase: `${httpBase}/api`,
    gatewayUrl,
    resumeGatewayUrl,
    stats,
    connections: connectionLog,
    identifyPayloads,
    isLive: () => Boolean(current?.live && liveSocket()),
    liveSessions: () => [...sessions.values()].filter((x) => x.live && x.socket?.readyState === WebSocket.OPEN).length,
    platformCalls: () => callLog.list(),
    dispatchMessage: (input) => dispatchMessage(input),
    postWhileAway: (input) => dispatchMessage(input, { dispatch: false }),
    dispatchDirectMessage(author, content, extra = {}) {
      return dispatchMessage({ ...extra, channelId: dmChannelFor(author), author, content });
    },
    dmChannelFor,
    botRoleId,
    sentMessages: (channelId) => [...(sent.get(channelId) ?? [])],
    messageVersions: (messageId) => {
      const list = versions.get(messageId);
      return list ? list.map((v) => ({ ...v })) : undefined;
    },
    shownMessages: (channelId) =>
      (sent.get(channelId) ?? []).map((r) => ({
        id: r.id,
        content: String(messages.get(r.id)?.content ?? r.content),
        versions: (versions.get(r.id) ?? []).map((v) => ({ ...v })),
      })),
    setEditInterval(ms) {
      editIntervalMs = ms;
    },
    buttonsOn: (messageId) => buttonsOf(messages.get(messageId)).map((b) => String(b.label ?? "")),
    tapButton,
    commands: () => registeredCommands.map((c) => String(c.name)),
    useCommand,
    interactionResponse: (interactionId) => {
      const response = interactions.get(interactionId)?.response;
      return response ? { ...response } : undefined;
    },
    interactionAnswers: (interactionId) => [...(interactions.get(interactionId)?.answers ?? [])],
    rateLimitedEdits: () => rateLimitedEdits,
    typingCount: (channelId) => typing.get(channelId) ?? 0,
    reactionsOn: (messageId) => [...(reactions.get(messageId) ?? [])],
    reactionLog: [],
    failNext(method, path, status, times = 1) {
      faults.push({ method, path, status, times });
    },
    dropConnection(code = 4000) {
      const socket = liveSocket();
      if (!socket || !current) throw new Error("fake discord: no live connection to drop");
      current.live = false;
      socket.close(code, "Dropped by test");
    },
    invalidateSession(resumable = false) {
      const socket = liveSocket();
      if (!socket || !current) throw new Error("fake discord: no live connection to invalidate");
      stats.invalidSessions++;
      if (!resumable) {
        current.resumable = false;
        current.live = false;
      }
      socket.send(JSON.stringify({ op: 9, d: resumable, s: null, t: null }));
    },
    closeGateway(code, reason = "Closed by test") {
      const socket = liveSocket();
      if (!socket || !current) throw new Error("fake discord: no live connection to close");
      current.live = false;
      current.resumable = false;
      socket.close(code, reason);
    },
    silenceNextConnections(n) {
      silence += n;
    },
    async close() {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
