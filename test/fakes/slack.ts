/**
 * A local stand-in for Slack, on one HTTP server bound to 127.0.0.1, port 0,
 * obeying the rules in Slack's docs (collected in the design note on Slack),
 * not the bridge's code:
 *
 * - Web API under `/api/<method>`, form-encoded or JSON, the token in
 *   `Authorization: Bearer`. Every error is HTTP 200 `{ok:false,error}`
 *   (`not_authed`, `invalid_auth`, `missing_scope` with `needed` and
 *   `provided`, `channel_not_found`, `msg_too_long` over 40,000 characters,
 *   `no_text`, `message_not_found` for an unknown ts, `already_reacted`,
 *   `no_reaction`, `file_not_found` for a completion before its upload) except
 *   rate limits: HTTP 429 with `Retry-After` (seconds), and nothing done.
 *   `chat.postMessage` allows `postsPerSecond` per channel with a short burst,
 *   `chat.update` `updatesPerMinute` (tier 3, ~50). Every answer names the
 *   token's scopes in `x-oauth-scopes`.
 * - Methods: auth.test, apps.connections.open (app token), chat.postMessage,
 *   chat.update, chat.startStream / appendStream / stopStream (appending to a
 *   stopped stream is refused), assistant.threads.setStatus (on a thread only:
 *   its `thread_ts` must be a message of the channel that is not itself a reply
 *   in a thread, else `invalid_thread_ts`), reactions.add /
 *   remove, files.getUploadURLExternal -> POST the bytes to `upload_url` ->
 *   files.completeUploadExternal (in that order, or `file_not_found`).
 *   `files.upload` is retired (`method_deprecated`). Files people share are
 *   served at `url_private_download` to the bot token only (without it Slack
 *   redirects to its sign-in page).
 * - HTTP Events API: `deliver` posts an `event_callback` to `requestUrl`,
 *   signed (`X-Slack-Signature: v0=HMAC(v0:ts:body)`), and waits `ackTimeoutMs`
 *   (Slack: 3 s) for a 2xx; otherwise it retries up to three times after
 *   `retryDelaysMs` with `X-Slack-Retry-Num` and `X-Slack-Retry-Reason`
 *   (`http_timeout`, `http_error`), the same `event_id` each time.
 * - Socket Mode at `/socket` (the URL apps.connections.open hands out, one
 *   ticket per URL): `hello` first, then `events_api` envelopes, each to one
 *   open connection; an envelope not acknowledged (`{envelope_id}` sent back)
 *   within `ackTimeoutMs` goes out again with a higher `retry_attempt`.
 *   `refresh` sends `disconnect` (`refresh_requested`) and closes the
 *   connection `refreshGraceMs` later; `goDeaf` keeps sockets up (pings
 *   answered) while no event reaches them, the field's most reported failure.
 *
 * - Buttons (Block Kit): `blocks` on chat.postMessage / chat.update are checked against
 *   Block Kit's limits (50 blocks; an actions block 25 elements; a button's text 75
 *   characters, `action_id` 255 and unique in the message, `value` 2,000; `block_id` 255
 *   and unique) or refused with `invalid_blocks`; chat.update without `blocks` keeps them.
 *   `tap` sends a `block_actions` payload, form-encoded `payload=` and signed to the
 *   interactivity Request URL (HTTP; Slack does not retry it) or as an `interactive`
 *   envelope (Socket Mode), acknowledged within 3 s; its `response_url` takes 5 posts within
 *   30 minutes (then `used_url` / `expired_url`), an ephemeral one shown to the tapper only.
 *
 * A channel mention arrives twice, as `message` and as `app_mention` (different
 * event ids, same ts), when both are subscribed (`subscriptions`).
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer, type RawData } from "ws";
import { waitUntil } from "../helpers/wait.js";
import { CallLog, type PlatformCall } from "./call-log.js";

/** Slack's hard limit on a message's text. */
const MAX_TEXT = 40_000;

export interface FakeSlackOptions {
  botToken: string;
  appToken?: string;
  signingSecret: string;
  /** The bot token's scopes. Default: everything the bridge can use. */
  scopes?: string[];
  /** Where events are posted (HTTP Events API); set later with `setRequestUrl`. */
  requestUrl?: string;
  /** How events reach the app. Default "http". */
  mode?: "http" | "socket";
  /** Event types the app subscribes to. Default message.im, message.channels, app_mention. */
  subscriptions?: string[];
  /** Slack's 3 s; tests may shorten it. */
  ackTimeoutMs?: number;
  /** Delays before retries 1-3. Slack: about at once, 1 min, 5 min. */
  retryDelaysMs?: [number, number, number];
  /** chat.postMessage per channel per second (Slack: about 1), with a burst of `postBurst`. */
  postsPerSecond?: number;
  postBurst?: number;
  /** chat.update per minute for the workspace (tier 3: ~50). */
  updatesPerMinute?: number;
  /** Socket Mode: time between `disconnect` and the close. */
  refreshGraceMs?: number;
  /** Socket Mode: server pings (the SDK reconnects when none comes for 30 s). Default 5 000. */
  pingIntervalMs?: number;
  now?: () => number;
}

export const ALL_SCOPES = [
  "app_mentions:read",
  "channels:history",
  "groups:history",
  "im:history",
  "mpim:history",
  "chat:write",
  "reactions:write",
  "files:read",
  "files:write",
  "assistant:write",
];

export interface PostedMessage {
  channel: string;
  ts: string;
  text: string;
  threadTs?: string;
  /** Every text it had, oldest first (edits and stream appends). */
  history: string[];
  files: { id: string; name: string; data: Buffer; title?: string }[];
  /** Started with chat.startStream: open until stopped. */
  stream?: "open" | "stopped";
  /** Its Block Kit blocks now (buttons), as the bot sent them. */
  blocks?: Record<string, unknown>[];
}

/** What one tap's `response_url` was sent. */
export interface TapResponse {
  text: string;
  ephemeral: boolean;
  replaceOriginal: boolean;
}

/** Block Kit's rules for a message's blocks: the first broken one, or undefined. */
export function blocksProblem(blocks: unknown): string | undefined {
  if (!Array.isArray(blocks)) return "blocks must be an array";
  if (blocks.length > 50) return "no more than 50 items allowed";
  const actionIds = new Set<string>();
  const blockIds = new Set<string>();
  for (const block of blocks as Record<string, unknown>[]) {
    if (typeof block.block_id === "string") {
      if (block.block_id.length > 255 || blockIds.has(block.block_id)) return "block_id must be unique and at most 255 characters";
      blockIds.add(block.block_id);
    }
    if (block.type !== "actions") continue;
    const elements = Array.isArray(block.elements) ? (block.elements as Record<string, unknown>[]) : [];
    if (elements.length < 1 || elements.length > 25) return "an actions block holds 1 to 25 elements";
    for (const element of elements) {
      const text = (element.text as Record<string, unknown> | undefined)?.text;
      if (element.type === "button" && (typeof text !== "string" || text.length < 1 || text.length > 75)) return "a button's text must be 1 to 75 characters";
      const actionId = element.action_id;
      if (typeof actionId === "string") {
        if (actionId.length > 255 || actionIds.has(actionId)) return "action_id must be unique and at most 255 characters";
        actionIds.add(actionId);
      }
      if (typeof element.value === "string" && element.value.length > 2000) return "a button's value must be at most 2000 characters";
    }
  }
  return undefined;
}

export interface ChatWrite {
  at: number;
  method: string;
  /** The message written. */
  ts: string;
  /** The text it shows after the write (a stream: all of it so far). */
  text: string;
}

export interface HttpDelivery {
  eventId: string;
  /** 0 for the first try, then X-Slack-Retry-Num. */
  attempt: number;
  /** The answer's status, or "timeout". */
  outcome: number | "timeout" | "refused";
}

export interface PersonMessage {
  user: string;
  channel: string;
  text: string;
  /** "im" for a DM, else "channel". Default: "im" when the channel starts with D. */
  channelType?: string;
  threadTs?: string;
  subtype?: string;
  botId?: string;
  /** `clipMs`: an audio clip recorded in Slack (`subtype: "slack_audio"`, `media_display_type: "audio"`, `duration_ms`). */
  files?: { name: string; mimetype: string; data: Buffer; clipMs?: number }[];
}

interface SharedFile {
  id: string;
  name: string;
  mimetype: string;
  data: Buffer;
}

interface PendingUpload {
  id: string;
  filename: string;
  length: number;
  data?: Buffer;
}

interface Envelope {
  id: string;
  payload: unknown;
  attempt: number;
  acked: boolean;
  /** Default "events_api". */
  type?: "events_api" | "slash_commands" | "interactive";
}

interface SocketConnection {
  ws: WebSocket;
  name: string;
  /** Sent `disconnect`; gets no more envelopes. */
  leaving: boolean;
}

export interface FakeSlack {
  readonly apiBase: string;
  readonly origin: string;
  readonly bot: { userId: string; botId: string; name: string; teamId: string };
  setRequestUrl(url: string): void;
  /** A person's message: delivered as `message` (and `app_mention` when it mentions the bot in a channel): its ts and event ids. */
  say(message: PersonMessage): { ts: string; eventIds: string[] };
  /**
   * A person runs the app's slash command (`/agent new`): form-encoded and signed to the
   * Request URL (HTTP), or a `slash_commands` envelope (Socket Mode). Slack does not retry a
   * command; resolves with the HTTP answer's status and body (Socket Mode: 200, "").
   */
  slashCommand(input: { user: string; channel: string; text: string; command?: string }): Promise<{ status: number | "timeout" | "refused"; body: string }>;
  /**
   * `user` taps the `index`-th button (0-based) of the bot's message `ts` in `channel`: a
   * signed `block_actions` payload to the interactivity URL (default the Request URL), or an
   * `interactive` envelope. Resolves with the HTTP answer's status (Socket Mode: 200) and
   * the tap's id, under which `tapResponses` lists what its `response_url` was sent.
   */
  tap(input: { channel: string; ts: string; user: string; index: number }): Promise<{ status: number | "timeout" | "refused"; id: string }>;
  /** What a tap's `response_url` was sent, in order. */
  tapResponses(id: string): TapResponse[];
  /** The labels of the buttons a bot message shows now ([]: none). */
  buttonsOn(channel: string, ts: string): string[];
  /** Delivers one event as Slack would (its event id is returned). */
  deliverEvent(event: Record<string, unknown>): string;
  /** Posts an event again as Slack's retry does (same event id, `X-Slack-Retry-Num` one up); resolves with the answer's status. */
  resend(eventId: string, reason?: string): Promise<number | "timeout" | "refused">;
  /** Every HTTP delivery attempt so far. */
  readonly deliveries: HttpDelivery[];
  /** Envelopes sent over Socket Mode (with redeliveries), and the ones acknowledged. */
  readonly socketStats: { sent: number; acked: number; redelivered: number; connectionsOpened: number; mostOpenAtOnce: number };
  openConnections(): number;
  /** Sends `disconnect` (refresh_requested) on every open connection; closes them `refreshGraceMs` later. */
  refresh(): void;
  /** Closes every socket at once without a word. */
  dropConnections(): void;
  /** Sockets stay up, events stop reaching the ones open now (they queue for a new connection). */
  goDeaf(): void;
  /** Told of every message the bot posts (benchmarks wait on it). */
  onPosted: ((message: PostedMessage) => void) | undefined;
  /** The bot's messages in a channel (every thread), oldest first. */
  messages(channel: string): PostedMessage[];
  reactions(channel: string, ts: string): string[];
  readonly statuses: { channel: string; threadTs: string; status: string }[];
  /** The bot's writes to a conversation that Slack took (post, update, stream start/append/stop), oldest first, on the fake's clock. */
  writes(channel: string): ChatWrite[];
  /** Every Web API call, with its connection. */
  calls(): PlatformCall[];
  /** Method names answered 429 so far. */
  readonly rateLimited: string[];
  /** Files people shared, fetched by the bot (url, had the bot token). */
  readonly downloads: { fileId: string; authorized: boolean }[];
  /** Holds uploads (the bytes POSTed to upload_url) after the first `skip` until `release` is called; `arrived` counts the held ones. */
  holdUploads(skip?: number): { release(): void; arrived(): number };
  /** The next `count` calls of `method` fail with `error` (HTTP 200 ok:false). */
  failNext(method: string, error: string, count?: number): void;
  close(): Promise<void>;
}

export function waitFor<T>(check: () => T | undefined | null | false, label = "condition", timeoutMs = 10_000): Promise<T> {
  return waitUntil(check, label, timeoutMs);
}

export async function createFakeSlack(options: FakeSlackOptions): Promise<FakeSlack> {
  const now = options.now ?? (() => Date.now());
  const scopes = options.scopes ?? ALL_SCOPES;
  const ackTimeoutMs = options.ackTimeoutMs ?? 3000;
  const retryDelaysMs = options.retryDelaysMs ?? [0, 60_000, 300_000];
  const postsPerSecond = options.postsPerSecond ?? 1;
  const postBurst = options.postBurst ?? 3;
  const updatesPerMinute = options.updatesPerMinute ?? 50;
  const refreshGraceMs = options.refreshGraceMs ?? 1000;
  const subscriptions = new Set(options.subscriptions ?? ["message.im", "message.channels", "app_mention"]);
  const bot = { userId: "U0BOT00001", botId: "B0BOT00001", name: "agent", teamId: "T0TEAM0001" };
  let requestUrl = options.requestUrl;
  const mode = options.mode ?? "http";

  const log = new CallLog(now);
  const timers = new Set<NodeJS.Timeout>();
  const later = (fn: () => void, ms: number) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  let closed = false;

  // --- state ---
  const posted = new Map<string, PostedMessage[]>();
  const reactions = new Map<string, Set<string>>();
  const statuses: FakeSlack["statuses"] = [];
  const chatWrites = new Map<string, ChatWrite[]>();
  const wrote = (method: string, message: PostedMessage) => {
    const list = chatWrites.get(message.channel) ?? [];
    chatWrites.set(message.channel, list);
    list.push({ at: now(), method, ts: message.ts, text: message.text });
  };
  /** People's messages, by channel: ts -> the thread it is a reply in (undefined: top level). */
  const peopleMessages = new Map<string, Map<string, string | undefined>>();
  const shared = new Map<string, SharedFile>();
  const uploads = new Map<string, PendingUpload>();
  const deliveries: HttpDelivery[] = [];
  /** HTTP mode: each event's body as first posted, for retries. */
  const bodies = new Map<string, string>();
  const rateLimited: string[] = [];
  const downloads: FakeSlack["downloads"] = [];
  const failures = new Map<string, { error: string; left: number }>();
  const postTimes = new Map<string, number[]>();
  const updateTimes: number[] = [];
  let tsCounter = 0;
  let idCounter = 0;
  let uploadGate: Promise<void> | null = null;
  /** Uploads that may still pass before the gate holds them. */
  let uploadsBeforeGate = 0;
  let heldUploads = 0;
  const nextTs = (): string => {
    // Unique and increasing, like Slack's: seconds, then a 6-digit counter.
    const seconds = Math.floor(now() / 1000);
    return `${seconds}.${String(++tsCounter).padStart(6, "0")}`;
  };
  const nextId = (prefix: string) => `${prefix}${String(++idCounter).padStart(8, "0")}`;

  // --- socket mode state ---
  const connections: SocketConnection[] = [];
  const tickets = new Set<string>();
  const queued: Envelope[] = [];
  const inFlight = new Map<string, Envelope>();
  const socketStats = { sent: 0, acked: 0, redelivered: 0, connectionsOpened: 0, mostOpenAtOnce: 0 };
  let deafBefore = -1;
  let connectionSeq = 0;

  const server = createServer((req, res) => void route(req, res));
  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? "/", "http://x");
    const ticket = url.searchParams.get("ticket") ?? "";
    if (url.pathname !== "/socket" || !tickets.delete(ticket)) {
      socket.end("HTTP/1.1 401 Unauthorized\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pinger = setInterval(() => {
    for (const c of connections) if (c.ws.readyState === WebSocket.OPEN) c.ws.ping();
  }, options.pingIntervalMs ?? 5000);

  // --- Web API ---
  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", origin);
    const body = await readBody(req);
    if (url.pathname.startsWith("/upload/")) return upload(url.pathname.slice("/upload/".length), body, res);
    if (url.pathname.startsWith("/files-pri/")) return download(url.pathname, req, res);
    if (url.pathname.startsWith("/actions/respond/")) return respondToTap(url.pathname.slice("/actions/respond/".length), body, res);
    if (url.pathname === "/signin") return void res.writeHead(200, { "content-type": "text/html" }).end("<html>Sign in to Slack</html>");
    if (!url.pathname.startsWith("/api/")) return void res.writeHead(404).end();
    const method = url.pathname.slice("/api/".length);
    log.record(log.name(req.socket, "tcp"), method);
    const args = parseArgs(req.headers["content-type"], body);
    const token = tokenOf(req, args);
    const reply = (status: number, data: Record<string, unknown>, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
      res.end(JSON.stringify(data));
    };
    const isApp = method === "apps.connections.open";
    if (!token) return reply(200, { ok: false, error: "not_authed" });
    if (token !== (isApp ? options.appToken : options.botToken)) {
      return reply(200, { ok: false, error: isApp && token === options.botToken ? "not_allowed_token_type" : "invalid_auth" });
    }
    const scopeHeader = { "x-oauth-scopes": (isApp ? ["connections:write"] : scopes).join(",") };
    const handler = METHODS[method];
    if (!handler) return reply(200, { ok: false, error: "unknown_method" }, scopeHeader);
    const needed = handler.scope;
    if (needed && !scopes.includes(needed)) {
      return reply(200, { ok: false, error: "missing_scope", needed, provided: scopes.join(",") }, scopeHeader);
    }
    const failure = failures.get(method);
    if (failure && failure.left > 0) {
      failure.left--;
      return reply(200, { ok: false, error: failure.error }, scopeHeader);
    }
    const retryAfter = handler.limit?.(args);
    if (retryAfter !== undefined) {
      rateLimited.push(method);
      return reply(429, { ok: false, error: "ratelimited" }, { ...scopeHeader, "retry-after": String(retryAfter) });
    }
    const result = await handler.run(args);
    reply(200, result, scopeHeader);
  }

  interface Method {
    scope?: string;
    /** Seconds to wait when over the limit (the call is then not done), else undefined. */
    limit?(args: Record<string, unknown>): number | undefined;
    run(args: Record<string, unknown>): Record<string, unknown> | Promise<Record<string, unknown>>;
  }

  /** `blocks` as sent (a JSON string when form-encoded): the list, undefined when absent, or what is wrong with it. */
  function blocksOf(value: unknown): Record<string, unknown>[] | undefined | string {
    if (value === undefined || value === null || value === "") return undefined;
    let parsed: unknown = value;
    if (typeof value === "string") {
      try {
        parsed = JSON.parse(value);
      } catch {
        return "blocks is not JSON";
      }
    }
    return blocksProblem(parsed) ?? (parsed as Record<string, unknown>[]);
  }

  /** Taps by id: their `response_url`'s uses (5 within 30 minutes), and what they were sent. */
  const taps = new Map<string, { at: number; responses: TapResponse[] }>();

  function respondToTap(id: string, body: Buffer, res: ServerResponse): undefined {
    const tap = taps.get(id);
    const answer = (status: number, text: string): undefined => void res.writeHead(status, { "content-type": "text/plain" }).end(text);
    if (!tap) return answer(404, "no_such_url");
    if (now() - tap.at > 30 * 60_000) return answer(404, "expired_url");
    if (tap.responses.length >= 5) return answer(404, "used_url");
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
    } catch {
      return answer(400, "invalid_payload");
    }
    if (typeof data.text !== "string" || !data.text) return answer(400, "no_text");
    tap.responses.push({ text: data.text, ephemeral: data.response_type !== "in_channel", replaceOriginal: data.replace_original === true });
    answer(200, "ok");
  }

  async function tapButton(input: {
    channel: string;
    ts: string;
    user: string;
    index: number;
  }): Promise<{ status: number | "timeout" | "refused"; id: string }> {
    const message = findMessage(input.channel, input.ts);
    const buttons = (message?.blocks ?? []).flatMap((b) =>
      b.type === "actions" && Array.isArray(b.elements) ? (b.elements as Record<string, unknown>[]).map((e) => ({ block: b, e })) : [],
    );
    const picked = buttons[input.index];
    if (!message || !picked) throw new Error(`fake slack: message ${input.ts} has no button ${input.index}`);
    const id = randomBytes(6).toString("hex");
    taps.set(id, { at: now(), responses: [] });
    const actionTs = nextTs();
    const payload = {
      type: "block_actions",
      user: { id: input.user, username: input.user.toLowerCase(), name: input.user.toLowerCase(), team_id: bot.teamId },
      api_app_id: "A0APP00001",
      token: "verification-token-unused",
      container: {
        type: "message",
        message_ts: message.ts,
        channel_id: input.channel,
        is_ephemeral: false,
        ...(message.threadTs ? { thread_ts: message.threadTs } : {}),
      },
      trigger_id: `${Math.floor(now() / 1000)}.${randomBytes(6).toString("hex")}`,
      team: { id: bot.teamId, domain: "team" },
      channel: { id: input.channel, name: input.channel.startsWith("D") ? "directmessage" : "general" },
      message: {
        type: "message",
        user: bot.userId,
        bot_id: bot.botId,
        ts: message.ts,
        text: message.text,
        blocks: message.blocks,
        ...(message.threadTs ? { thread_ts: message.threadTs } : {}),
      },
      response_url: `${origin}/actions/respond/${id}`,
      actions: [
        { type: "button", action_id: picked.e.action_id, block_id: picked.block.block_id, text: picked.e.text, value: picked.e.value, action_ts: actionTs },
      ],
    };
    if (mode === "socket") {
      queued.push({ id: randomBytes(8).toString("hex"), payload, attempt: 0, acked: false, type: "interactive" });
      pump();
      return { status: 200, id };
    }
    const target = requestUrl;
    if (!target) throw new Error("fake slack: no interactivity URL to post taps to");
    const raw = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
    const timestamp = String(Math.floor(now() / 1000));
    const signature = `v0=${createHmac("sha256", options.signingSecret).update(`v0:${timestamp}:${raw}`).digest("hex")}`;
    try {
      const res = await fetch(target, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": timestamp, "x-slack-signature": signature },
        body: raw,
        signal: AbortSignal.timeout(ackTimeoutMs),
      });
      await res.arrayBuffer().catch(() => undefined);
      return { status: res.status, id };
    } catch (error) {
      return { status: error instanceof Error && error.name === "TimeoutError" ? "timeout" : "refused", id };
    }
  }

  const str = (v: unknown): string => (typeof v === "string" ? v : v === undefined || v === null ? "" : String(v));

  const channelMessages = (channel: string): PostedMessage[] => {
    const list = posted.get(channel) ?? [];
    posted.set(channel, list);
    return list;
  };
  const findMessage = (channel: string, ts: string) => posted.get(channel)?.find((m) => m.ts === ts);
  const knownChannel = (channel: string) => /^[CDG][A-Z0-9]{2,}$/.test(channel);
  /** A thread is named by its parent's ts: a message of the channel (a person's or the bot's) that is no reply in a thread itself. */
  const isThread = (channel: string, ts: string): boolean => {
    const person = peopleMessages.get(channel);
    if (person?.has(ts)) return person.get(ts) === undefined;
    const bots = findMessage(channel, ts);
    return bots !== undefined && (bots.threadTs === undefined || bots.threadTs === ts);
  };

  const METHODS: Record<string, Method> = {
    "auth.test": {
      run: () => ({
        ok: true,
        url: "https://fake.slack.test/",
        team: "Fake Team",
        user: bot.name,
        team_id: bot.teamId,
        user_id: bot.userId,
        bot_id: bot.botId,
      }),
    },
    "apps.connections.open": {
      run: () => {
        const ticket = randomBytes(12).toString("hex");
        tickets.add(ticket);
        return { ok: true, url: `${origin.replace(/^http/, "ws")}/socket?ticket=${ticket}` };
      },
    },
    "chat.postMessage": {
      scope: "chat:write",
      limit: (args) => {
        // About one a second per channel, short bursts allowed: a sliding one-second window.
        const channel = str(args.channel);
        const t = now();
        const recent = (postTimes.get(channel) ?? []).filter((at) => t - at < 1000 * (postBurst / postsPerSecond));
        postTimes.set(channel, recent);
        if (recent.length >= postBurst) return 1;
        recent.push(t);
        return undefined;
      },
      run: (args) => {
        const channel = str(args.channel);
        const text = str(args.text);
        if (!knownChannel(channel)) return { ok: false, error: "channel_not_found" };
        if (!text.trim() && !args.blocks) return { ok: false, error: "no_text" };
        if (text.length > MAX_TEXT) return { ok: false, error: "msg_too_long" };
        const blocks = blocksOf(args.blocks);
        if (typeof blocks === "string") return { ok: false, error: "invalid_blocks", errors: [blocks] };
        const threadTs = str(args.thread_ts) || undefined;
        const message: PostedMessage = { channel, ts: nextTs(), text, history: [text], files: [], ...(threadTs ? { threadTs } : {}) };
        if (blocks?.length) message.blocks = blocks;
        channelMessages(channel).push(message);
        wrote("chat.postMessage", message);
        fakeSlack.onPosted?.(message);
        return { ok: true, channel, ts: message.ts, message: { type: "message", user: bot.userId, bot_id: bot.botId, text, ts: message.ts } };
      },
    },
    "chat.update": {
      scope: "chat:write",
      limit: () => {
        const t = now();
        while (updateTimes.length && t - (updateTimes[0] ?? 0) >= 60_000) updateTimes.shift();
        if (updateTimes.length >= updatesPerMinute) return Math.ceil((60_000 - (t - (updateTimes[0] ?? t))) / 1000);
        updateTimes.push(t);
        return undefined;
      },
      run: (args) => {
        const channel = str(args.channel);
        const text = str(args.text);
        const message = findMessage(channel, str(args.ts));
        if (!message) return { ok: false, error: "message_not_found" };
        if (text.length > MAX_TEXT) return { ok: false, error: "msg_too_long" };
        if (!text.trim() && !args.blocks) return { ok: false, error: "no_text" };
        const blocks = blocksOf(args.blocks);
        if (typeof blocks === "string") return { ok: false, error: "invalid_blocks", errors: [blocks] };
        // Without `blocks` the message keeps its own; `[]` takes them away.
        if (blocks !== undefined) {
          if (blocks.length) message.blocks = blocks;
          else delete message.blocks;
        }
        message.text = text;
        message.history.push(text);
        wrote("chat.update", message);
        return { ok: true, channel, ts: message.ts, text };
      },
    },
    "chat.startStream": {
      scope: "chat:write",
      run: (args) => {
        const channel = str(args.channel);
        const threadTs = str(args.thread_ts);
        if (!knownChannel(channel)) return { ok: false, error: "channel_not_found" };
        if (!threadTs) return { ok: false, error: "invalid_arguments" };
        if (channel.startsWith("D") && (!args.recipient_user_id || !args.recipient_team_id)) return { ok: false, error: "missing_recipient_user_id" };
        const text = str(args.markdown_text);
        const message: PostedMessage = { channel, ts: nextTs(), text, history: [text], files: [], threadTs, stream: "open" };
        channelMessages(channel).push(message);
        wrote("chat.startStream", message);
        return { ok: true, channel, ts: message.ts };
      },
    },
    "chat.appendStream": {
      scope: "chat:write",
      run: (args) => {
        const message = findMessage(str(args.channel), str(args.ts));
        if (!message) return { ok: false, error: "message_not_found" };
        if (message.stream !== "open") return { ok: false, error: "message_not_in_streaming_state" };
        const piece = str(args.markdown_text);
        if (!piece) return { ok: false, error: "no_text" };
        message.text += piece;
        message.history.push(message.text);
        if (message.text.length > MAX_TEXT) return { ok: false, error: "msg_too_long" };
        wrote("chat.appendStream", message);
        return { ok: true, channel: message.channel, ts: message.ts };
      },
    },
    "chat.stopStream": {
      scope: "chat:write",
      run: (args) => {
        const message = findMessage(str(args.channel), str(args.ts));
        if (!message) return { ok: false, error: "message_not_found" };
        if (message.stream !== "open") return { ok: false, error: "message_not_in_streaming_state" };
        const piece = str(args.markdown_text);
        if (piece) {
          message.text += piece;
          message.history.push(message.text);
        }
        message.stream = "stopped";
        wrote("chat.stopStream", message);
        return { ok: true, channel: message.channel, ts: message.ts, message: { text: message.text } };
      },
    },
    "assistant.threads.setStatus": {
      scope: "assistant:write",
      run: (args) => {
        const channel = str(args.channel_id);
        const threadTs = str(args.thread_ts);
        if (!knownChannel(channel)) return { ok: false, error: "channel_not_found" };
        if (!threadTs) return { ok: false, error: "invalid_arguments" };
        if (!isThread(channel, threadTs)) return { ok: false, error: "invalid_thread_ts" };
        statuses.push({ channel, threadTs, status: str(args.status) });
        return { ok: true };
      },
    },
    "reactions.add": {
      scope: "reactions:write",
      run: (args) => {
        const key = `${str(args.channel)}/${str(args.timestamp)}`;
        const name = str(args.name);
        if (!name) return { ok: false, error: "invalid_name" };
        const set = reactions.get(key) ?? new Set<string>();
        if (set.has(name)) return { ok: false, error: "already_reacted" };
        set.add(name);
        reactions.set(key, set);
        return { ok: true };
      },
    },
    "reactions.remove": {
      scope: "reactions:write",
      run: (args) => {
        const set = reactions.get(`${str(args.channel)}/${str(args.timestamp)}`);
        if (!set?.delete(str(args.name))) return { ok: false, error: "no_reaction" };
        return { ok: true };
      },
    },
    "files.upload": { scope: "files:write", run: () => ({ ok: false, error: "method_deprecated" }) },
    "files.getUploadURLExternal": {
      scope: "files:write",
      run: (args) => {
        const filename = str(args.filename);
        const length = Number(args.length);
        if (!filename || !Number.isInteger(length) || length <= 0) return { ok: false, error: "invalid_arguments" };
        const id = nextId("F");
        uploads.set(id, { id, filename, length });
        return { ok: true, upload_url: `${origin}/upload/${id}`, file_id: id };
      },
    },
    "files.completeUploadExternal": {
      scope: "files:write",
      run: (args) => {
        const files = parseJson(args.files);
        if (!Array.isArray(files) || files.length === 0) return { ok: false, error: "invalid_arguments" };
        const channel = str(args.channel_id);
        if (channel && !knownChannel(channel)) return { ok: false, error: "channel_not_found" };
        const done: PostedMessage["files"] = [];
        for (const f of files as { id?: unknown; title?: unknown }[]) {
          const pending = uploads.get(str(f.id));
          // Completing before the bytes were posted: Slack does not know the file yet.
          if (!pending?.data) return { ok: false, error: "file_not_found" };
          done.push({ id: pending.id, name: pending.filename, data: pending.data, ...(f.title ? { title: str(f.title) } : {}) });
        }
        for (const f of done) uploads.delete(f.id);
        if (channel) {
          const threadTs = str(args.thread_ts) || undefined;
          const text = str(args.initial_comment);
          channelMessages(channel).push({ channel, ts: nextTs(), text, history: [text], files: done, ...(threadTs ? { threadTs } : {}) });
        }
        return { ok: true, files: done.map((f) => ({ id: f.id, title: f.title ?? f.name })) };
      },
    },
  };

  async function upload(id: string, body: Buffer, res: ServerResponse): Promise<void> {
    const pending = uploads.get(id);
    if (!pending) return void res.writeHead(404).end("file not found");
    if (uploadGate && uploadsBeforeGate-- <= 0) {
      heldUploads++;
      await uploadGate;
    }
    if (body.length !== pending.length) return void res.writeHead(400).end("length mismatch");
    // Slack accepts raw bytes or a multipart form with one file; the bridge sends raw bytes.
    pending.data = body;
    res.writeHead(200, { "content-type": "text/plain" }).end(`OK - ${body.length}`);
  }

  function download(path: string, req: IncomingMessage, res: ServerResponse): void {
    const id = path.split("/")[2] ?? "";
    const file = shared.get(id);
    const authorized = req.headers.authorization === `Bearer ${options.botToken}`;
    downloads.push({ fileId: id, authorized });
    // Without the bot token Slack answers with its sign-in page, not the file.
    if (!authorized) return void res.writeHead(302, { location: `${origin}/signin` }).end();
    if (!file) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": file.mimetype, "content-length": String(file.data.length) }).end(file.data);
  }

  // --- events ---
  function callbackOf(event: Record<string, unknown>): { id: string; body: Record<string, unknown> } {
    const id = `Ev${randomBytes(5).toString("hex").toUpperCase()}`;
    return {
      id,
      body: {
        token: "verification-token-unused",
        team_id: bot.teamId,
        api_app_id: "A0APP00001",
        event: { ...event, event_ts: event.ts ?? nextTs() },
        type: "event_callback",
        event_id: id,
        event_time: Math.floor(now() / 1000),
        authorizations: [{ team_id: bot.teamId, user_id: bot.userId, is_bot: true }],
      },
    };
  }

  function deliverEvent(event: Record<string, unknown>): string {
    const { id, body } = callbackOf(event);
    if (mode === "socket") enqueueEnvelope(body);
    else {
      const raw = JSON.stringify(body);
      bodies.set(id, raw);
      void postEvent(id, raw, 0);
    }
    return id;
  }

  async function postEvent(eventId: string, raw: string, attempt: number, reason?: string, retryOnFailure = true): Promise<HttpDelivery["outcome"]> {
    if (closed) return "refused";
    if (!requestUrl) throw new Error("fake slack: no requestUrl to post events to");
    const timestamp = String(Math.floor(now() / 1000));
    const signature = `v0=${createHmac("sha256", options.signingSecret).update(`v0:${timestamp}:${raw}`).digest("hex")}`;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": signature,
    };
    if (attempt > 0) {
      headers["x-slack-retry-num"] = String(attempt);
      headers["x-slack-retry-reason"] = reason ?? "http_error";
    }
    let outcome: HttpDelivery["outcome"];
    try {
      const res = await fetch(requestUrl, { method: "POST", headers, body: raw, signal: AbortSignal.timeout(ackTimeoutMs) });
      await res.arrayBuffer().catch(() => undefined);
      outcome = res.status;
    } catch (error) {
      outcome = error instanceof Error && error.name === "TimeoutError" ? "timeout" : "refused";
    }
    deliveries.push({ eventId, attempt, outcome });
    const acked = typeof outcome === "number" && outcome >= 200 && outcome < 300;
    if (acked || attempt >= 3 || closed || !retryOnFailure) return outcome;
    const delay = retryDelaysMs[attempt] ?? 0;
    later(() => void postEvent(eventId, raw, attempt + 1, outcome === "timeout" ? "http_timeout" : "http_error"), delay);
    return outcome;
  }

  async function slashCommand(input: { user: string; channel: string; text: string; command?: string }) {
    const fields = {
      token: "verification-token-unused",
      team_id: bot.teamId,
      channel_id: input.channel,
      channel_name: input.channel.startsWith("D") ? "directmessage" : "general",
      user_id: input.user,
      user_name: input.user.toLowerCase(),
      command: input.command ?? "/agent",
      text: input.text,
      api_app_id: "A0APP00001",
      response_url: `${origin}/commands/respond`,
      trigger_id: `${Date.now()}.${randomBytes(6).toString("hex")}`,
    };
    if (mode === "socket") {
      queued.push({ id: randomBytes(8).toString("hex"), payload: fields, attempt: 0, acked: false, type: "slash_commands" });
      pump();
      return { status: 200 as const, body: "" };
    }
    if (!requestUrl) throw new Error("fake slack: no requestUrl to post commands to");
    const raw = new URLSearchParams(fields).toString();
    const timestamp = String(Math.floor(now() / 1000));
    const signature = `v0=${createHmac("sha256", options.signingSecret).update(`v0:${timestamp}:${raw}`).digest("hex")}`;
    try {
      const res = await fetch(requestUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": timestamp, "x-slack-signature": signature },
        body: raw,
        signal: AbortSignal.timeout(ackTimeoutMs),
      });
      return { status: res.status, body: await res.text() };
    } catch (error) {
      return { status: error instanceof Error && error.name === "TimeoutError" ? ("timeout" as const) : ("refused" as const), body: "" };
    }
  }

  function say(input: PersonMessage): { ts: string; eventIds: string[] } {
    const ts = nextTs();
    const channelType = input.channelType ?? (input.channel.startsWith("D") ? "im" : "channel");
    const files = (input.files ?? []).map((f) => {
      const id = nextId("F");
      shared.set(id, { id, name: f.name, mimetype: f.mimetype, data: f.data });
      return {
        id,
        name: f.name,
        mimetype: f.mimetype,
        size: f.data.length,
        url_private: `${origin}/files-pri/${id}/${encodeURIComponent(f.name)}`,
        url_private_download: `${origin}/files-pri/${id}/download/${encodeURIComponent(f.name)}`,
        ...(f.clipMs === undefined ? {} : { subtype: "slack_audio", media_display_type: "audio", duration_ms: f.clipMs }),
      };
    });
    const event: Record<string, unknown> = {
      type: "message",
      user: input.user,
      text: input.text,
      ts,
      channel: input.channel,
      channel_type: channelType,
      ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
      ...(input.subtype ? { subtype: input.subtype } : files.length ? { subtype: "file_share" } : {}),
      ...(input.botId ? { bot_id: input.botId } : {}),
      ...(files.length ? { files } : {}),
    };
    const inChannel = peopleMessages.get(input.channel) ?? new Map<string, string | undefined>();
    peopleMessages.set(input.channel, inChannel);
    inChannel.set(ts, input.threadTs !== undefined && input.threadTs !== ts ? input.threadTs : undefined);
    const messageSubscription = channelType === "im" ? "message.im" : channelType === "group" ? "message.groups" : "message.channels";
    const eventIds: string[] = [];
    if (subscriptions.has(messageSubscription)) eventIds.push(deliverEvent(event));
    const mentions = input.text.includes(`<@${bot.userId}>`);
    if (mentions && channelType !== "im" && subscriptions.has("app_mention") && !input.subtype && !input.botId) {
      const { channel_type: _drop, subtype: _s, ...rest } = event;
      eventIds.push(deliverEvent({ ...rest, type: "app_mention" }));
    }
    return { ts, eventIds };
  }

  // --- Socket Mode ---
  function onSocket(ws: WebSocket): void {
    const connection: SocketConnection = { ws, name: `socket-${++connectionSeq}`, leaving: false };
    connections.push(connection);
    socketStats.connectionsOpened++;
    socketStats.mostOpenAtOnce = Math.max(socketStats.mostOpenAtOnce, connections.filter((c) => c.ws.readyState === WebSocket.OPEN).length);
    log.record(connection.name, "CONNECT");
    ws.on("message", (data: RawData) => onFrame(data));
    ws.on("close", () => {
      const at = connections.indexOf(connection);
      if (at >= 0) connections.splice(at, 1);
    });
    ws.send(
      JSON.stringify({
        type: "hello",
        num_connections: connections.length,
        debug_info: { host: "fake-slack", approximate_connection_time: 18060 },
        connection_info: { app_id: "A0APP00001" },
      }),
    );
    pump();
  }

  function onFrame(data: RawData): void {
    let frame: unknown;
    try {
      frame = JSON.parse(data.toString());
    } catch {
      return;
    }
    const id = frame && typeof frame === "object" && "envelope_id" in frame ? str(frame.envelope_id) : "";
    const envelope = inFlight.get(id);
    if (!envelope || envelope.acked) return;
    envelope.acked = true;
    inFlight.delete(id);
    socketStats.acked++;
  }

  function enqueueEnvelope(payload: unknown): void {
    queued.push({ id: randomBytes(8).toString("hex"), payload, attempt: 0, acked: false });
    pump();
  }

  let rr = 0;
  /** Sends what is queued to a live connection (round robin), each waiting for its ack. */
  function pump(): void {
    for (;;) {
      const live = connections.filter((c, i) => !c.leaving && c.ws.readyState === WebSocket.OPEN && connectionIndex(c) > deafBefore && i >= 0);
      const envelope = queued[0];
      if (!envelope || live.length === 0) return;
      queued.shift();
      const target = live[rr++ % live.length];
      if (!target) return;
      send(target, envelope);
    }
  }

  const connectionIndex = (c: SocketConnection) => Number(c.name.slice("socket-".length));

  function send(connection: SocketConnection, envelope: Envelope): void {
    socketStats.sent++;
    if (envelope.attempt > 0) socketStats.redelivered++;
    inFlight.set(envelope.id, envelope);
    connection.ws.send(
      JSON.stringify({
        envelope_id: envelope.id,
        type: envelope.type ?? "events_api",
        payload: envelope.payload,
        accepts_response_payload: false,
        retry_attempt: envelope.attempt,
        retry_reason: envelope.attempt > 0 ? "timeout" : "",
      }),
    );
    later(() => {
      if (envelope.acked || closed) return;
      inFlight.delete(envelope.id);
      // Not acknowledged in time: Slack sends it again (to any connection), up to three retries.
      if (envelope.attempt >= 3) return;
      queued.push({ ...envelope, id: randomBytes(8).toString("hex"), attempt: envelope.attempt + 1 });
      pump();
    }, ackTimeoutMs);
  }

  function refresh(): void {
    for (const c of [...connections]) {
      if (c.leaving) continue;
      c.leaving = true;
      c.ws.send(JSON.stringify({ type: "disconnect", reason: "refresh_requested", debug_info: { host: "fake-slack" } }));
      later(() => c.ws.close(1000), refreshGraceMs);
    }
  }

  const fakeSlack: FakeSlack = {
    onPosted: undefined,
    apiBase: `${origin}/api`,
    origin,
    bot,
    setRequestUrl: (url) => {
      requestUrl = url;
    },
    say,
    slashCommand,
    tap: tapButton,
    tapResponses: (id) => [...(taps.get(id)?.responses ?? [])],
    buttonsOn: (channel, ts) =>
      (findMessage(channel, ts)?.blocks ?? []).flatMap((b) =>
        b.type === "actions" && Array.isArray(b.elements)
          ? (b.elements as Record<string, unknown>[]).map((e) => String((e.text as Record<string, unknown> | undefined)?.text ?? ""))
          : [],
      ),
    deliverEvent,
    resend(eventId, reason = "http_timeout") {
      const raw = bodies.get(eventId);
      if (!raw) throw new Error(`fake slack: no event ${eventId} was posted`);
      const attempt = deliveries.filter((d) => d.eventId === eventId).reduce((n, d) => Math.max(n, d.attempt), 0) + 1;
      return postEvent(eventId, raw, attempt, reason, false);
    },
    deliveries,
    socketStats,
    openConnections: () => connections.filter((c) => c.ws.readyState === WebSocket.OPEN).length,
    refresh,
    dropConnections() {
      for (const c of [...connections]) c.ws.terminate();
    },
    goDeaf() {
      deafBefore = connectionSeq;
    },
    messages: (channel) => [...(posted.get(channel) ?? [])],
    reactions: (channel, ts) => [...(reactions.get(`${channel}/${ts}`) ?? [])],
    statuses,
    writes: (channel) => [...(chatWrites.get(channel) ?? [])],
    calls: () => log.list(),
    rateLimited,
    downloads,
    holdUploads(skip = 0) {
      let release = () => {};
      uploadsBeforeGate = skip;
      heldUploads = 0;
      uploadGate = new Promise<void>((resolve) => {
        release = () => {
          uploadGate = null;
          resolve();
        };
      });
      return { release, arrived: () => heldUploads };
    },
    failNext(method, error, count = 1) {
      failures.set(method, { error, left: count });
    },
    async close() {
      closed = true;
      clearInterval(pinger);
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const c of [...connections]) c.ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fakeSlack;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function parseArgs(contentType: string | undefined, body: Buffer): Record<string, unknown> {
  if (!body.length) return {};
  if (contentType?.includes("application/json")) {
    const parsed = parseJson(body.toString("utf8"));
    return parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
  }
  return Object.fromEntries(new URLSearchParams(body.toString("utf8")));
}

function parseJson(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

function tokenOf(req: IncomingMessage, args: Record<string, unknown>): string | undefined {
  const header = req.headers.authorization;
  if (header?.startsWith("Bearer ")) return header.slice("Bearer ".length);
  return typeof args.token === "string" ? args.token : undefined;
}

/** A stable short hash, for tests that name things after content. */
export const digest = (data: Buffer): string => createHash("sha256").update(data).digest("hex").slice(0, 12);
