/**
 * A local stand-in for a Mattermost server: the REST API (`/api/v4/...`) and
 * the WebSocket (`/api/v4/websocket`) on one HTTP server bound to 127.0.0.1,
 * port 0, following Mattermost's documents and server source
 * (api4/post.go, reaction.go, file.go, user.go; platform/web_conn.go, web_hub.go;
 * app/ratelimit.go; model/websocket_message.go):
 *
 * - every `/api/v4` call needs `Authorization: Bearer <token>` (the scheme's case
 *   does not matter, `Token <token>` is taken too: app/session.go ParseAuthTokenFromRequest),
 *   else 401 with an AppError body (`id`, `message`, `status_code`);
 * - `POST /posts` (the bot must be a member of the channel, 403 otherwise; a
 *   `root_id` must name a root post of the same channel, 400 otherwise; a message
 *   of more than 16383 runes is 400), `PUT /posts/{id}/patch` (own posts only),
 *   `GET /channels/{id}`, `GET /channels/{id}/posts?since=` (posts whose `update_at`
 *   is after `since`, as a PostList `{order, posts}`), `GET /users/me`,
 *   `GET /users/{me|id}/channels` (every channel the bot is in, DMs and GMs too,
 *   each with its `last_post_at`; another user's is 403),
 *   `POST /reactions` (`user_id` must be the caller, 403; `emoji_name` a system or
 *   custom emoji's name, 400 for anything else, Unicode included), `DELETE
 *   /users/{id}/posts/{id}/reactions/{name}`, `POST /files` (multipart:
 *   `channel_id`, then `files`), `GET /files/{id}`, `POST /users/{id}/typing`;
 * - rate limits (`limitRequests`): answers carry `X-RateLimit-Limit`,
 *   `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds until the window
 *   refills); a request over the limit gets 429, `Retry-After` (seconds) and
 *   the text "limit exceeded";
 * - the socket: `authentication_challenge` answered `{status: "OK", seq_reply}`
 *   (or "FAIL" and the socket closed); then, on a new server connection, `hello`
 *   (seq 0, a new `connection_id`); events carry `seq`, counting on per server
 *   connection. Events broadcast while the socket is down queue on its server
 *   connection (the hub's send buffer); a reconnect naming the connection's
 *   `connection_id` and a `sequence_number` still in its queue gets them replayed
 *   from there with no hello (web_hub.go: "The hello message should only be sent
 *   when the reuseCount is 0"); otherwise a new connection and its hello.
 *   `ping` is answered `pong`.
 *
 * People act with `openDirect` (a new direct channel with the bot), `post` (a `posted` event with `channel_type`, `team_id`,
 * `sender_name` and the `mentions` the server computed, as a JSON string) and
 * `upload`; tests break things with `dropSockets`, `forgetConnections`,
 * `limitRequests` and read what the bot did with `botPosts`, `reactionsOn`, `typing`.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { type RawData, WebSocket, WebSocketServer } from "ws";
import { multipartParts } from "../helpers/multipart.js";

export interface FakeMattermostUser {
  id: string;
  username: string;
}

export interface FakeMattermostChannel {
  id: string;
  /** "D" direct, "G" group message, "O" public, "P" private. */
  type: "D" | "G" | "O" | "P";
  team_id?: string;
  name?: string;
}

/** A channel as the server keeps it (model.Channel's fields the fake serves); the bot is a member of every one. */
interface StoredChannel extends FakeMattermostChannel {
  create_at: number;
  /** The newest post's `create_at` (the server sets it on every post: app/post.go, store UpdateLastViewedAt / IncrementMentionCount). */
  last_post_at: number;
  total_msg_count: number;
}

export interface FakePost {
  id: string;
  create_at: number;
  update_at: number;
  edit_at: number;
  delete_at: number;
  user_id: string;
  channel_id: string;
  root_id: string;
  message: string;
  type: string;
  file_ids: string[];
  metadata: { files?: FakeFileInfo[] };
  props: Record<string, unknown>;
}

export interface FakeFileInfo {
  id: string;
  name: string;
  size: number;
  mime_type: string;
  extension: string;
}

interface ServerConnection {
  id: string;
  nextSeq: number;
  /** Events sent or waiting, with their seq (the last 128 sent, and all unsent). */
  queue: { seq: number; frame: string }[];
  socket: WebSocket | null;
}

/** A few of Mattermost's system emoji names (the server also takes custom ones; none are set up here). */
const SYSTEM_EMOJI = new Set([
  "eyes",
  "+1",
  "-1",
  "thumbsup",
  "thumbsdown",
  "white_check_mark",
  "heavy_check_mark",
  "x",
  "hourglass",
  "hourglass_flowing_sand",
  "thinking_face",
  "pray",
  "tada",
  "heart",
  "fire",
  "speech_balloon",
  "rocket",
  "zap",
  "ok",
  "writing_hand",
  "smile",
]);
const MAX_POST_RUNES = 16_383;
const DEAD_QUEUE = 128;

export interface FakeMattermostOptions {
  token: string;
  bot: FakeMattermostUser;
  users: FakeMattermostUser[];
  channels: FakeMattermostChannel[];
}

export async function createFakeMattermost(options: FakeMattermostOptions) {
  const users = new Map([options.bot, ...options.users].map((u) => [u.id, u]));
  const channels = new Map<string, StoredChannel>(options.channels.map((c) => [c.id, { ...c, create_at: Date.now(), last_post_at: 0, total_msg_count: 0 }]));
  const posts = new Map<string, FakePost>();
  const files = new Map<string, { info: FakeFileInfo; data: Buffer; channelId: string }>();
  const reactions: { user_id: string; post_id: string; emoji_name: string }[] = [];
  const typing: { channel_id: string; parent_id: string }[] = [];
  /** Each edit of a post by the bot: when (wall clock, ms) and what it said. */
  const edits: { postId: string; at: number; message: string }[] = [];
  const connections = new Map<string, ServerConnection>();
  const calls: { method: string; path: string; status: number }[] = [];
  let lastTime = 0;
  /** Events to number and queue but not write to the live socket (lost in flight). */
  let loseEvents = 0;
  /** While true, `ping` gets no answer (a half-open socket). */
  let deafToPings = false;
  /** While set, file downloads wait for it (a slow file store): a test can stop the bot between an event and its journal. */
  let fileHold: { arrived: number; released: Promise<void> } | null = null;
  let rate: { limit: number; remaining: number; resetSeconds: number; refuse: number; only?: string } | null = null;
  const socketLog: { connection_id: string; sequence_number: string; resumed: boolean }[] = [];

  const newId = (): string => randomBytes(13).toString("hex").slice(0, 26);
  /** Milliseconds, strictly increasing: two posts never share a time. */
  const now = (): number => (lastTime = Math.max(Date.now(), lastTime + 1));
  const runes = (text: string): number => [...text].length;

  // ---- Broadcast -------------------------------------------------------------

  function broadcast(event: string, data: Record<string, unknown>, channelId: string): void {
    for (const conn of connections.values()) {
      const seq = conn.nextSeq++;
      const frame = JSON.stringify({ event, data, broadcast: { omit_users: null, user_id: "", channel_id: channelId, team_id: "" }, seq });
      conn.queue.push({ seq, frame });
      if (loseEvents > 0) loseEvents--;
      else if (conn.socket?.readyState === WebSocket.OPEN) conn.socket.send(frame);
      trim(conn);
    }
  }

  function trim(conn: ServerConnection): void {
    if (conn.socket?.readyState === WebSocket.OPEN && conn.queue.length > DEAD_QUEUE) conn.queue.splice(0, conn.queue.length - DEAD_QUEUE);
  }

  function postedData(post: FakePost): Record<string, unknown> {
    const channel = channels.get(post.channel_id);
    const sender = users.get(post.user_id);
    const mentioned = [...post.message.matchAll(/@([a-z0-9._-]+)/gi)]
      .map((m) => [...users.values()].find((u) => u.username.toLowerCase() === m[1]?.toLowerCase().replace(/[.]$/, ""))?.id)
      .filter((id): id is string => id !== undefined && id !== post.user_id);
    // In a direct channel the other member is always notified.
    if (channel?.type === "D" && post.user_id !== options.bot.id) mentioned.push(options.bot.id);
    return {
      channel_display_name: channel?.name ?? "",
      channel_name: channel?.name ?? "",
      channel_type: channel?.type ?? "O",
      post: JSON.stringify(post),
      sender_name: `@${sender?.username ?? "unknown"}`,
      set_online: true,
      team_id: channel?.team_id ?? "",
      ...(mentioned.length > 0 ? { mentions: JSON.stringify([...new Set(mentioned)]) } : {}),
    };
  }

  function createPost(input: { channelId: string; userId: string; message: string; rootId?: string; fileIds?: string[] }, announce = true): FakePost {
    const at = now();
    const fileInfos = (input.fileIds ?? []).flatMap((id) => {
      const file = files.get(id);
      return file ? [file.info] : [];
    });
    const post: FakePost = {
      id: newId(),
      create_at: at,
      update_at: at,
      edit_at: 0,
      delete_at: 0,
      user_id: input.userId,
      channel_id: input.channelId,
      root_id: input.rootId ?? "",
      message: input.message,
      type: "",
      file_ids: input.fileIds ?? [],
      metadata: fileInfos.length > 0 ? { files: fileInfos } : {},
      props: {},
    };
    posts.set(post.id, post);
    const channel = channels.get(post.channel_id);
    if (channel) {
      channel.last_post_at = Math.max(channel.last_post_at, at);
      channel.total_msg_count++;
    }
    if (announce) broadcast("posted", postedData(post), post.channel_id);
    return post;
  }

  /** model.Channel as the API answers it. */
  function channelJson(channel: StoredChannel): Record<string, unknown> {
    return {
      id: channel.id,
      create_at: channel.create_at,
      update_at: channel.create_at,
      delete_at: 0,
      team_id: channel.team_id ?? "",
      type: channel.type,
      display_name: channel.name ?? "",
      name: channel.name ?? "",
      header: "",
      purpose: "",
      last_post_at: channel.last_post_at,
      last_root_post_at: channel.last_post_at,
      total_msg_count: channel.total_msg_count,
      creator_id: "",
    };
  }

  // ---- REST ------------------------------------------------------------------

  const appError = (res: ServerResponse, status: number, id: string, message: string): void =>
    json(res, status, { id, message, detailed_error: "", request_id: newId(), status_code: status });

  function json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  }

  async function readBody(req: IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  function parseJson(body: Buffer): Record<string, unknown> | undefined {
    try {
      const value: unknown = JSON.parse(body.toString("utf8"));
      return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  /** app/ratelimit.go: the headers on every answer while limiting is on; 429 with Retry-After over the limit. */
  function rateLimited(res: ServerResponse, call: string): boolean {
    if (!rate) return false;
    if (rate.refuse > 0 && (rate.only === undefined || rate.only === call)) {
      rate.refuse--;
      res.setHeader("X-RateLimit-Limit", String(rate.limit));
      res.setHeader("X-RateLimit-Remaining", "0");
      res.setHeader("X-RateLimit-Reset", String(rate.resetSeconds));
      res.setHeader("Retry-After", String(rate.resetSeconds));
      res.writeHead(429, { "content-type": "text/plain; charset=utf-8" });
      res.end("limit exceeded\n");
      return true;
    }
    res.setHeader("X-RateLimit-Limit", String(rate.limit));
    res.setHeader("X-RateLimit-Remaining", String(rate.limit));
    res.setHeader("X-RateLimit-Reset", "0");
    return false;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname;
    const method = req.method ?? "GET";
    res.on("finish", () => calls.push({ method, path, status: res.statusCode }));
    if (!path.startsWith("/api/v4/")) return appError(res, 404, "api.context.404.app_error", "Sorry, we could not find the page.");
    if (tokenOf(req.headers.authorization) !== options.token) {
      return appError(res, 401, "api.context.session_expired.app_error", "Invalid or expired session, please login again.");
    }
    if (rateLimited(res, `${method} ${path}`)) return;
    const body = await readBody(req);
    const route = path.slice("/api/v4".length);
    /** The route's captures when `method` and `pattern` match it. */
    const on = (verb: string, pattern: RegExp): string[] | undefined => {
      const found = method === verb ? route.match(pattern) : null;
      return found ? found.slice(1).map((part) => part ?? "") : undefined;
    };
    let m: string[] | undefined;

    if (method === "GET" && route === "/users/me") return json(res, 200, { ...options.bot, is_bot: true, roles: "system_user" });

    if (method === "POST" && route === "/posts") {
      const input = parseJson(body);
      const channelId = typeof input?.channel_id === "string" ? input.channel_id : "";
      const message = typeof input?.message === "string" ? input.message : "";
      const rootId = typeof input?.root_id === "string" ? input.root_id : "";
      const fileIds = Array.isArray(input?.file_ids) ? input.file_ids.filter((f): f is string => typeof f === "string") : [];
      if (!channels.has(channelId)) return appError(res, 403, "api.context.permissions.app_error", "You do not have the appropriate permissions.");
      if (runes(message) > MAX_POST_RUNES) return appError(res, 400, "model.post.is_valid.message_length.app_error", "Invalid Message property.");
      if (!message && fileIds.length === 0) return appError(res, 400, "api.context.invalid_body_param.app_error", "Invalid or missing post in request body.");
      if (rootId) {
        const root = posts.get(rootId);
        if (!root || root.channel_id !== channelId || root.root_id !== "") {
          return appError(res, 400, "api.post.create_post.root_id.app_error", "Invalid RootId parameter.");
        }
      }
      if (fileIds.some((id) => files.get(id)?.channelId !== channelId)) {
        return appError(res, 400, "api.post.create_post.file_ids.app_error", "Invalid FileIds parameter.");
      }
      return json(res, 201, createPost({ channelId, userId: options.bot.id, message, rootId, fileIds }));
    }

    m = on("PUT", /^\/posts\/([a-z0-9]+)\/patch$/);
    if (m) {
      const post = posts.get(m[0] ?? "");
      const input = parseJson(body);
      if (!post) return appError(res, 404, "app.post.get.app_error", "Unable to get the post.");
      if (post.user_id !== options.bot.id) return appError(res, 403, "api.context.permissions.app_error", "You do not have the appropriate permissions.");
      if (typeof input?.message === "string") {
        if (runes(input.message) > MAX_POST_RUNES) return appError(res, 400, "model.post.is_valid.message_length.app_error", "Invalid Message property.");
        post.message = input.message;
        post.edit_at = post.update_at = now();
        edits.push({ postId: post.id, at: Date.now(), message: input.message });
        broadcast("post_edited", { post: JSON.stringify(post) }, post.channel_id);
      }
      return json(res, 200, post);
    }

    m = on("GET", /^\/channels\/([a-z0-9]+)$/);
    if (m) {
      const channel = channels.get(m[0] ?? "");
      if (!channel) return appError(res, 404, "app.channel.get.existing.app_error", "Unable to find the existing channel.");
      return json(res, 200, channelJson(channel));
    }

    // api4/channel.go getChannelsForUser: every channel of every team the user is in, DMs and GMs too; only the user themself (or an admin) may ask.
    m = on("GET", /^\/users\/([a-z0-9]+|me)\/channels$/);
    if (m) {
      if (m[0] !== "me" && m[0] !== options.bot.id)
        return appError(res, 403, "api.context.permissions.app_error", "You do not have the appropriate permissions.");
      return json(res, 200, [...channels.values()].map(channelJson));
    }

    m = on("GET", /^\/channels\/([a-z0-9]+)\/posts$/);
    if (m) {
      const channelId = m[0] ?? "";
      if (!channels.has(channelId)) return appError(res, 403, "api.context.permissions.app_error", "You do not have the appropriate permissions.");
      const since = Number(url.searchParams.get("since") ?? "0");
      const found = [...posts.values()].filter((p) => p.channel_id === channelId && p.update_at > since).sort((a, b) => b.create_at - a.create_at);
      return json(res, 200, { order: found.map((p) => p.id), posts: Object.fromEntries(found.map((p) => [p.id, p])), next_post_id: "", prev_post_id: "" });
    }

    if (method === "POST" && route === "/reactions") {
      const input = parseJson(body);
      if (input?.user_id !== options.bot.id) return appError(res, 403, "api.context.permissions.app_error", "You do not have the appropriate permissions.");
      const postId = typeof input.post_id === "string" ? input.post_id : "";
      const name = typeof input.emoji_name === "string" ? input.emoji_name : "";
      if (!posts.has(postId)) return appError(res, 403, "api.context.permissions.app_error", "You do not have the appropriate permissions.");
      if (!SYSTEM_EMOJI.has(name)) return appError(res, 400, "api.emoji.get_by_name.app_error", "Unable to find the emoji.");
      if (!reactions.some((r) => r.post_id === postId && r.emoji_name === name && r.user_id === options.bot.id)) {
        reactions.push({ user_id: options.bot.id, post_id: postId, emoji_name: name });
      }
      return json(res, 200, { user_id: options.bot.id, post_id: postId, emoji_name: name, create_at: now() });
    }

    m = on("DELETE", /^\/users\/([a-z0-9]+)\/posts\/([a-z0-9]+)\/reactions\/([^/]+)$/);
    if (m) {
      if (m[0] !== options.bot.id) return appError(res, 403, "api.context.permissions.app_error", "You do not have the appropriate permissions.");
      const name = decodeURIComponent(m[2] ?? "");
      const at = reactions.findIndex((r) => r.post_id === m?.[1] && r.emoji_name === name);
      if (at >= 0) reactions.splice(at, 1);
      return json(res, 200, { status: "OK" });
    }

    if (method === "POST" && route === "/files") {
      const parts = multipartParts(body, req.headers["content-type"] ?? "");
      // api4/file.go reads channel_id before the files: a form with the file first is refused.
      const channelId = parts[0]?.name === "channel_id" ? parts[0].data.toString("utf8") : "";
      if (!channels.has(channelId))
        return appError(res, 400, "api.file.upload_file.incorrect_channelId.app_error", "Unable to upload the file. Incorrect channel ID.");
      const infos = parts
        .filter((p) => p.name === "files")
        .map((p) => {
          const name = p.fileName ?? "file";
          const info: FakeFileInfo = { id: newId(), name, size: p.data.length, mime_type: mimeOf(name), extension: name.split(".").pop() ?? "" };
          files.set(info.id, { info, data: p.data, channelId });
          return info;
        });
      if (infos.length === 0) return appError(res, 400, "api.file.upload_file.bad_parse.app_error", "Unable to upload file. Header cannot be parsed.");
      return json(res, 201, { file_infos: infos, client_ids: [] });
    }

    m = on("GET", /^\/files\/([a-z0-9]+)$/);
    if (m) {
      const file = files.get(m[0] ?? "");
      if (!file) return appError(res, 404, "app.file_info.get.app_error", "Unable to get the file info.");
      if (fileHold) {
        fileHold.arrived++;
        await fileHold.released;
      }
      res.writeHead(200, { "content-type": file.info.mime_type, "content-length": String(file.data.length) });
      res.end(file.data);
      return;
    }

    m = on("POST", /^\/users\/([a-z0-9]+|me)\/typing$/);
    if (m) {
      const input = parseJson(body);
      if (typeof input?.channel_id !== "string")
        return appError(res, 400, "api.context.invalid_body_param.app_error", "Invalid or missing channel_id in request body.");
      typing.push({ channel_id: input.channel_id, parent_id: typeof input.parent_id === "string" ? input.parent_id : "" });
      return json(res, 200, { status: "OK" });
    }

    return appError(res, 404, "api.context.404.app_error", "Sorry, we could not find the page.");
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => appError(res, 500, "fake.error", String(error)));
  });

  // ---- WebSocket -------------------------------------------------------------

  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (new URL(req.url ?? "/", "http://127.0.0.1").pathname !== "/api/v4/websocket") {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws, req));
  });

  function onSocket(ws: WebSocket, req: IncomingMessage): void {
    const query = new URL(req.url ?? "/", "http://127.0.0.1").searchParams;
    ws.on("message", (raw: RawData) => {
      let frame: { seq?: unknown; action?: unknown; data?: { token?: unknown } };
      try {
        frame = JSON.parse(raw.toString()) as typeof frame;
      } catch {
        return;
      }
      const seqReply = typeof frame.seq === "number" ? frame.seq : 0;
      if (frame.action === "authentication_challenge") {
        if (frame.data?.token !== options.token) {
          ws.send(
            JSON.stringify({
              status: "FAIL",
              seq_reply: seqReply,
              error: { id: "api.web_socket_router.not_authenticated.app_error", message: "Invalid or expired session" },
            }),
          );
          ws.close();
          return;
        }
        ws.send(JSON.stringify({ status: "OK", seq_reply: seqReply }));
        attach(ws, query.get("connection_id") ?? "", Number(query.get("sequence_number") ?? "0"));
        return;
      }
      if (frame.action === "ping" && deafToPings) return;
      if (frame.action === "ping") ws.send(JSON.stringify({ status: "OK", seq_reply: seqReply, data: { text: "pong", version: "11.0.0", node_id: "" } }));
      else if (frame.action === "user_typing") ws.send(JSON.stringify({ status: "OK", seq_reply: seqReply }));
    });
  }

  function attach(ws: WebSocket, connectionId: string, sequence: number): void {
    const known = connections.get(connectionId);
    const from = known?.queue.findIndex((e) => e.seq === sequence) ?? -1;
    const resumable = known && (from >= 0 || sequence === known.nextSeq);
    socketLog.push({ connection_id: connectionId, sequence_number: String(sequence), resumed: Boolean(resumable) });
    if (known && resumable) {
      known.socket?.terminate();
      known.socket = ws;
      for (const event of from >= 0 ? known.queue.slice(from) : []) ws.send(event.frame);
      trim(known);
      ws.on("close", () => {
        if (known.socket === ws) known.socket = null;
      });
      return;
    }
    const conn: ServerConnection = { id: newId(), nextSeq: 1, queue: [], socket: ws };
    connections.set(conn.id, conn);
    ws.on("close", () => {
      if (conn.socket === ws) conn.socket = null;
    });
    ws.send(JSON.stringify({ event: "hello", data: { connection_id: conn.id, server_version: "11.0.0", server_hostname: "fake" }, broadcast: {}, seq: 0 }));
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    bot: options.bot,
    /** A person posts (with files uploaded first by `upload`); the server broadcasts `posted`. */
    post(input: { channelId: string; userId: string; message: string; rootId?: string; fileIds?: string[] }): FakePost {
      return createPost(input);
    },
    /** A post the bot's connections never hear of (it was made while the server had no live connection for the bot). */
    postUnannounced(input: { channelId: string; userId: string; message: string; rootId?: string }): FakePost {
      return createPost(input, false);
    },
    /**
     * A person opens a direct channel with the bot (their client's `POST /channels/direct`): a new "D" channel
     * named `<id>__<id>` (the two ids sorted), no team; the server tells the bot's connections `direct_added`.
     */
    openDirect(userId: string): string {
      const id = newId();
      const name = [userId, options.bot.id].sort().join("__");
      channels.set(id, { id, type: "D", team_id: "", name, create_at: now(), last_post_at: 0, total_msg_count: 0 });
      broadcast("direct_added", { creator_id: userId, teammate_id: userId }, id);
      return id;
    },
    /** A person uploads a file to a channel: its FileInfo, for `post`'s `fileIds`. */
    upload(channelId: string, name: string, data: Buffer, mimeType?: string): FakeFileInfo {
      const info: FakeFileInfo = { id: newId(), name, size: data.length, mime_type: mimeType ?? mimeOf(name), extension: name.split(".").pop() ?? "" };
      files.set(info.id, { info, data, channelId });
      return info;
    },
    /** The bot's posts in a channel (top level and threads, or one thread), oldest first, as shown now. */
    botPosts(channelId: string, rootId?: string): FakePost[] {
      return [...posts.values()]
        .filter((p) => p.channel_id === channelId && p.user_id === options.bot.id && (rootId === undefined || p.root_id === rootId))
        .sort((a, b) => a.create_at - b.create_at);
    },
    fileNamesOf(post: FakePost): string[] {
      return post.file_ids.flatMap((id) => files.get(id)?.info.name ?? []);
    },
    fileData(id: string): Buffer | undefined {
      return files.get(id)?.data;
    },
    reactionsOn(postId: string): string[] {
      return reactions.filter((r) => r.post_id === postId).map((r) => r.emoji_name);
    },
    typing: () => [...typing],
    editsOf: (postId: string) => edits.filter((e) => e.postId === postId),
    calls: () => [...calls],
    socketLog: () => [...socketLog],
    /** Sockets open now. */
    liveSockets: () => [...connections.values()].filter((c) => c.socket?.readyState === WebSocket.OPEN).length,
    /** Cuts every socket without a close frame (a network drop); the server connections stay, so a reconnect resumes. */
    dropSockets(): void {
      for (const conn of connections.values()) conn.socket?.terminate();
    },
    /** The server forgets its connections (a restart, or a reconnect after too long): the next reconnect gets a new hello. */
    forgetConnections(): void {
      for (const conn of connections.values()) conn.socket?.terminate();
      connections.clear();
    },
    /** The next `n` events are numbered and queued but never written to the socket (lost in flight). */
    loseNextEvents(n: number): void {
      loseEvents += n;
    },
    /** Pings go unanswered (true) or answered again (false). */
    ignorePings(on: boolean): void {
      deafToPings = on;
    },
    /** File downloads wait until `release` (each one counted in `arrived` as it comes). */
    holdFiles(): { arrived(): number; release(): void } {
      let release = () => {};
      const hold = { arrived: 0, released: new Promise<void>((resolve) => (release = resolve)) };
      fileHold = hold;
      return {
        arrived: () => hold.arrived,
        release() {
          if (fileHold === hold) fileHold = null;
          release();
        },
      };
    },
    /**
     * Turns rate limiting on: the next `refuse` requests get 429 with `Retry-After: resetSeconds`;
     * with `only` ("POST /api/v4/posts"), the next `refuse` of those, so a background call of the
     * adapter (a catch-up, typing) cannot take the refusal a test aims at one call.
     */
    limitRequests(refuse: number, resetSeconds = 1, limit = 10, only?: string): void {
      rate = { limit, remaining: limit, resetSeconds, refuse, ...(only === undefined ? {} : { only }) };
    },
    async close(): Promise<void> {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeMattermost = Awaited<ReturnType<typeof createFakeMattermost>>;

function tokenOf(header: string | undefined): string | undefined {
  const found = header?.match(/^(bearer|token) (.+)$/i);
  return found?.[2];
}

function mimeOf(name: string): string {
  const ext = name.split(".").pop()?.toLowerCase() ?? "";
  const types: Record<string, string> = {
    png: "image/png",
    jpg: "image/jpeg",
    txt: "text/plain",
    pdf: "application/pdf",
    ogg: "audio/ogg",
    m4a: "audio/mp4",
    mp3: "audio/mpeg",
  };
  return types[ext] ?? "application/octet-stream";
}
