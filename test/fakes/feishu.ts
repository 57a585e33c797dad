/**
 * A fake Feishu/Lark open platform for the bridge's tests, following what
 * Feishu documents (open.feishu.cn / open.larksuite.com), driven from the
 * platform's side the way Feishu drives a bot:
 *
 * - auth/v3/tenant_access_token/internal: a token for the right App ID and
 *   Secret, `expire` 7200 s, refused (99991663) once expired on the fake's clock;
 * - bot/v3/info; im/v1/messages (create, reply with `reply_in_thread`, patch),
 *   im/v1/images, im/v1/files, im/v1/messages/:id/resources/:key,
 *   im/v1/messages/:id/reactions (create, delete);
 * - patch ("Update a message card"): only an `interactive` message the app
 *   sent, with `config.update_multi: true` before and after (230099 else),
 *   a card body at most 30 KB (230025), 5 updates a second per message (230020);
 * - CardKit ("Streaming card updates"): card entities (`cardkit/v1/cards`,
 *   JSON 2.0 only), sent as a message `{"type": "card", "data": {"card_id"}}`;
 *   an element's text pushed (`elements/:id/content`) only while the card's
 *   `streaming_mode` is on, which Feishu turns off by itself after 10
 *   minutes; every operation's `sequence` strictly greater than the card's
 *   last; at most 10 operations a second per card; the whole card replaced
 *   (`PUT cards/:id`); a message's card id (`cards/id_convert`);
 * - rate limits ("Rate limits"): HTTP 429, code 99991400, `x-ogw-ratelimit-reset`
 *   seconds, when a test says so (`limitNext`);
 * - events to the app's Request URL (mode "http", "Receive events"): the v2
 *   schema, encrypted with the Encrypt Key (AES-256-CBC, key SHA-256(key),
 *   random IV before the ciphertext, base64) and signed (`X-Lark-Signature` =
 *   sha256(timestamp + nonce + key + body)), the Verification Token in
 *   `header.token`; the URL verification challenge; an event not answered
 *   200 within 3 s is delivered again with the same `event_id` (Feishu's
 *   schedule 15 s, 5 min, 1 h, 6 h: scaled by `retryDelaysMs` in tests);
 * - the long connection (mode "websocket"): `POST /callback/ws/endpoint` with
 *   the App ID and Secret hands out a `ws://` URL with a ticket and the
 *   client's config; events go down as data frames (feishu-frames.ts,
 *   `type: event`, the plain v2 event as payload, split into `sum` parts when
 *   large) and are answered with the same frame carrying `{"code": 200}`; an
 *   event not answered 200 in 3 s is delivered again; pings are answered with
 *   pongs; `dropConnections` cuts every connection (the client reconnects).
 */
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { multipartParts } from "../helpers/multipart.js";
import { decodeFrame, encodeFrame, headerOf, type Frame } from "./feishu-frames.js";

export interface FakeFeishuOptions {
  appId: string;
  appSecret: string;
  encryptKey?: string;
  verificationToken?: string;
  /** The fake's clock (token lifetimes), ms. Default Date.now. */
  now?: () => number;
  /** Delays before each redelivery of an event not answered 200 in time. Default Feishu's: 15 s, 5 min, 1 h, 6 h. */
  retryDelaysMs?: readonly number[];
  /** How long Feishu waits for the answer. Default 3000 ("respond within 3 seconds"). */
  answerWithinMs?: number;
  /** How events reach the bot: posted to the Request URL, or down the long connection. Default "http". */
  mode?: "http" | "websocket";
  /** Long connection: the largest payload of one frame; a larger event is split into parts. Default 1 MiB. */
  framePartBytes?: number;
  /** Whether the app has the scope `cardkit:card:write` (CardKit). Default true. */
  cardKitScope?: boolean;
}

export interface FakeMessage {
  id: string;
  chatId: string;
  threadId?: string;
  rootId?: string;
  parentId?: string;
  /** "bot", or the person's open id. */
  sender: string;
  msgType: string;
  content: string;
  createTime: number;
}

export interface Delivery {
  eventId: string;
  attempt: number;
  status: number | "no answer";
  body: string;
}

const BOT_OPEN_ID = "ou_fakebot0000000000000000000001";
const SERVICE_ID = 33;
const CARD_MAX_BYTES = 30 * 1024;

export interface FakeFeishu {
  readonly apiBase: string;
  readonly botOpenId: string;
  /** Where events go (mode "http"): the bot's endpoint URL. */
  setRequestUrl(url: string): void;
  /** The URL verification as the console sends it when the Request URL is saved: the bot's answer. */
  verifyUrl(): Promise<{ status: number; body: string }>;
  /** A person writes in a chat: the message, and its event delivered (and redelivered until answered 200). */
  say(input: {
    user: string;
    chatId: string;
    chatType: "p2p" | "group";
    text?: string;
    mentionBot?: boolean;
    threadOf?: string;
    file?: { kind: "image" | "file" | "audio"; name: string; data: Buffer; durationMs?: number };
  }): { message: FakeMessage; eventId: string; delivered: Promise<Delivery> };
  /** A person taps button `index` of the bot's card `messageId`. */
  tap(input: { user: string; messageId: string; index: number }): { eventId: string; delivered: Promise<Delivery> };
  /** Posts raw bytes to the Request URL with these headers (forgeries). */
  post(body: string, headers: Record<string, string>): Promise<{ status: number; body: string }>;
  /** Encrypts and signs `plain` as Feishu would. */
  seal(plain: string): { body: string; headers: Record<string, string> };
  messages(chatId: string): FakeMessage[];
  /** Text a message shows (a card's text elements, a text message's text). */
  textOf(message: FakeMessage): string;
  buttonsOf(messageId: string): string[];
  filesOf(chatId: string): string[];
  fileData(name: string): Buffer | undefined;
  reactions(messageId: string): string[];
  deliveries(): Delivery[];
  tokensIssued(): number;
  /** The next `count` API calls are refused as rate limited (429, 99991400), asking for `resetSeconds`. */
  limitNext(count: number, resetSeconds: number): void;
  calls(): { method: string; path: string; status: number }[];
  /** Long connection: how many are open now, and how many were ever opened. */
  openConnections(): number;
  connectionsOpened(): number;
  /** Long connection: cuts every open connection (a network drop). */
  dropConnections(): void;
  /** CardKit: whether the card entity message `messageId` shows is still in streaming mode (undefined: no entity). */
  streamingOf(messageId: string): boolean | undefined;
  /** Long connection: the most connections that were open at once. */
  mostOpenAtOnce(): number;
  /** Delivers event `eventId` once more, as Feishu does when it missed the answer: the status it got. */
  resend(eventId: string): Promise<number | "no answer">;
  close(): Promise<void>;
}

export async function createFakeFeishu(options: FakeFeishuOptions): Promise<FakeFeishu> {
  const now = options.now ?? Date.now;
  const retryDelays = options.retryDelaysMs ?? [15_000, 300_000, 3_600_000, 21_600_000];
  const answerWithin = options.answerWithinMs ?? 3000;
  const tokens = new Map<string, number>();
  let tokensIssued = 0;
  let seq = 0;
  const id = (prefix: string) => `${prefix}_${(++seq).toString(16).padStart(8, "0")}${randomBytes(4).toString("hex")}`;
  const messages: FakeMessage[] = [];
  const byId = new Map<string, FakeMessage>();
  const uploads = new Map<string, { name: string; data: Buffer }>();
  const reactions = new Map<string, { id: string; type: string; by: string }[]>();
  const patchTimes = new Map<string, number[]>();
  const deliveries: Delivery[] = [];
  const calls: { method: string; path: string; status: number }[] = [];
  let limited = { count: 0, reset: 1 };
  let requestUrl: string | undefined;
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  const tickets = new Set<string>();
  const sockets = new Set<WebSocket>();
  let connectionsOpened = 0;
  let mostOpenAtOnce = 0;
  /** Every event sent, by id (to send again). */
  const sentEvents = new Map<string, string>();
  /** Long connection: answers awaited, by the frame's message_id. */
  /** Per event pushed down the long connection: told the client's answer (its code, and the body its `data` carried). */
  const awaiting = new Map<string, (code: number, body: string) => void>();

  const add = (m: FakeMessage) => {
    messages.push(m);
    byId.set(m.id, m);
    return m;
  };

  /** CardKit card entities by id: the JSON 2.0 card, its last sequence, when streaming mode was turned on. */
  const entities = new Map<string, { card: Record<string, unknown>; sequence: number; streamingSince: number | undefined; ops: number[] }>();
  /** CardKit: "streaming mode closes by itself after 10 minutes". */
  const STREAMING_LIFE_MS = 10 * 60 * 1000;

  function entityTexts(card: Record<string, unknown>): string[] {
    const body = card.body as { elements?: unknown } | undefined;
    const elements = Array.isArray(body?.elements) ? (body.elements as Record<string, unknown>[]) : [];
    return elements.flatMap((el) => (el.tag === "markdown" && typeof el.content === "string" ? [el.content] : []));
  }

  /** A card entity's id a message refers to (`{"type": "card", "data": {"card_id"}}`), or undefined. */
  function entityOf(content: string): string | undefined {
    try {
      const c = JSON.parse(content) as { type?: unknown; data?: { card_id?: unknown } };
      return c.type === "card" && typeof c.data?.card_id === "string" ? c.data.card_id : undefined;
    } catch {
      return undefined;
    }
  }

  const streamingOn = (e: { streamingSince: number | undefined }) => e.streamingSince !== undefined && now() - e.streamingSince < STREAMING_LIFE_MS;

  function cardOf(content: string): { update_multi: boolean; texts: string[]; buttons: string[]; values: unknown[] } | undefined {
    let card: unknown;
    try {
      card = JSON.parse(content);
    } catch {
      return undefined;
    }
    if (!card || typeof card !== "object") return undefined;
    const entityId = entityOf(content);
    if (entityId !== undefined) {
      const entity = entities.get(entityId);
      return entity ? { update_multi: true, texts: entityTexts(entity.card), buttons: [], values: [] } : undefined;
    }
    const c = card as { config?: { update_multi?: unknown }; elements?: unknown };
    if (!Array.isArray(c.elements)) return undefined;
    const texts: string[] = [];
    const buttons: string[] = [];
    const values: unknown[] = [];
    for (const el of c.elements as Record<string, unknown>[]) {
      if (el.tag === "markdown" && typeof el.content === "string") texts.push(el.content);
      if (el.tag === "div") texts.push(String((el.text as { content?: unknown } | undefined)?.content ?? ""));
      if (el.tag === "action" && Array.isArray(el.actions))
        for (const a of el.actions as Record<string, unknown>[]) {
          buttons.push(String((a.text as { content?: unknown } | undefined)?.content ?? ""));
          values.push(a.value);
        }
    }
    return { update_multi: c.config?.update_multi === true, texts, buttons, values };
  }

  // --- the open API -------------------------------------------------------
  const server: Server = createServer((req, res) => {
    void serve(req, res).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, { code: 1, msg: String(error) });
    });
  });

  function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers }).end(JSON.stringify(body));
  }

  async function readAll(req: IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const path = url.pathname;
    const method = req.method ?? "GET";
    const raw = await readAll(req);
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      calls.push({ method, path, status });
      json(res, status, body, headers);
    };
    const body = (): Record<string, unknown> => {
      try {
        const parsed: unknown = JSON.parse(raw.toString("utf8") || "{}");
        return parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
      } catch {
        return {};
      }
    };
    if (path === "/open-apis/auth/v3/tenant_access_token/internal" && method === "POST") {
      const b = body();
      if (b.app_id !== options.appId || b.app_secret !== options.appSecret) return answer(400, { code: 10014, msg: "app secret invalid" });
      const token = `t-${randomBytes(16).toString("hex")}`;
      tokens.set(token, now() + 7200 * 1000);
      tokensIssued++;
      return answer(200, { code: 0, msg: "ok", tenant_access_token: token, expire: 7200 });
    }
    if (path === "/callback/ws/endpoint" && method === "POST") {
      const b = body();
      if (b.AppID !== options.appId || b.AppSecret !== options.appSecret)
        return answer(200, { code: 1000040343, msg: "app id or secret is invalid", data: {} });
      const ticket = randomBytes(12).toString("hex");
      tickets.add(ticket);
      const port = (server.address() as AddressInfo).port;
      return answer(200, {
        code: 0,
        msg: "ok",
        data: {
          URL: `ws://127.0.0.1:${port}/callback/ws?device_id=dev_${ticket.slice(0, 6)}&service_id=${SERVICE_ID}&ticket=${ticket}`,
          // Feishu's are minutes; a test reconnects at once.
          ClientConfig: { PingInterval: 120, ReconnectCount: -1, ReconnectInterval: 0, ReconnectNonce: 0 },
        },
      });
    }
    // Every other call needs a live tenant token.
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    const until = bearer ? tokens.get(bearer) : undefined;
    if (until === undefined || now() >= until)
      return answer(400, { code: 99991663, msg: "Invalid access token for authorization. Please make a request with token attached." });
    if (limited.count > 0) {
      limited.count--;
      return answer(
        429,
        { code: 99991400, msg: "request trigger frequency limit" },
        { "x-ogw-ratelimit-limit": "50", "x-ogw-ratelimit-reset": String(limited.reset) },
      );
    }
    if (path === "/open-apis/bot/v3/info" && method === "GET")
      return answer(200, { code: 0, msg: "ok", bot: { open_id: BOT_OPEN_ID, app_name: "Fake Bot", activate_status: 2 } });
    if (path === "/open-apis/im/v1/messages" && method === "POST") {
      if (url.searchParams.get("receive_id_type") !== "chat_id") return answer(400, { code: 230001, msg: "invalid receive_id_type" });
      const b = body();
      const refused = checkContent(String(b.msg_type), String(b.content));
      if (refused) return answer(400, refused);
      const m = add({ id: id("om"), chatId: String(b.receive_id), sender: "bot", msgType: String(b.msg_type), content: String(b.content), createTime: now() });
      return answer(200, { code: 0, msg: "success", data: { message_id: m.id, chat_id: m.chatId, msg_type: m.msgType } });
    }
    const reply = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reply$/.exec(path);
    if (reply && method === "POST") {
      const parent = byId.get(reply[1]!);
      if (!parent) return answer(400, { code: 230011, msg: "The message was withdrawn or does not exist." });
      const b = body();
      const refused = checkContent(String(b.msg_type), String(b.content));
      if (refused) return answer(400, refused);
      const root = parent.rootId ? (byId.get(parent.rootId) ?? parent) : parent;
      let threadId = parent.threadId;
      // reply_in_thread: the reply goes into the parent's thread, which it starts when there is none.
      if (b.reply_in_thread === true && !threadId) {
        threadId = id("omt");
        root.threadId = threadId;
      }
      const m = add({
        id: id("om"),
        chatId: parent.chatId,
        ...(threadId ? { threadId } : {}),
        rootId: root.id,
        parentId: parent.id,
        sender: "bot",
        msgType: String(b.msg_type),
        content: String(b.content),
        createTime: now(),
      });
      return answer(200, { code: 0, msg: "success", data: { message_id: m.id, chat_id: m.chatId, thread_id: m.threadId } });
    }
    const one = /^\/open-apis\/im\/v1\/messages\/([^/]+)$/.exec(path);
    if (one && method === "PATCH") {
      const m = byId.get(one[1]!);
      if (m?.sender !== "bot") return answer(400, { code: 230001, msg: "invalid message_id" });
      if (m.msgType !== "interactive") return answer(400, { code: 230001, msg: "only interactive messages can be patched" });
      if (entityOf(m.content) !== undefined) return answer(400, { code: 230001, msg: "a card entity is updated through CardKit" });
      const content = String(body().content);
      if (Buffer.byteLength(content) > CARD_MAX_BYTES) return answer(400, { code: 230025, msg: "card content exceeds 30KB" });
      const before = cardOf(m.content);
      const after = cardOf(content);
      if (!after) return answer(400, { code: 230001, msg: "invalid card" });
      if (!before?.update_multi || !after.update_multi) return answer(400, { code: 230099, msg: "update_multi must be true before and after" });
      const times = (patchTimes.get(m.id) ?? []).filter((t) => now() - t < 1000);
      if (times.length >= 5) return answer(400, { code: 230020, msg: "This message is updated too frequently." });
      patchTimes.set(m.id, [...times, now()]);
      m.content = content;
      return answer(200, { code: 0, msg: "success", data: {} });
    }
    if (path.startsWith("/open-apis/cardkit/") && options.cardKitScope === false)
      return answer(400, { code: 99991672, msg: "Access denied. One of the following scopes is required: [cardkit:card:write]." });
    if (path === "/open-apis/cardkit/v1/cards" && method === "POST") {
      const b = body();
      let card: unknown;
      try {
        card = JSON.parse(String(b.data));
      } catch {
        card = undefined;
      }
      if (b.type !== "card_json" || !card || typeof card !== "object" || (card as { schema?: unknown }).schema !== "2.0")
        return answer(400, { code: 300301, msg: "invalid card json (CardKit takes JSON 2.0)" });
      const id = String(7_300_000_000_000_000_000n + BigInt(++seq));
      const streaming = (card as { config?: { streaming_mode?: unknown } }).config?.streaming_mode === true;
      entities.set(id, { card: card as Record<string, unknown>, sequence: 0, streamingSince: streaming ? now() : undefined, ops: [] });
      return answer(200, { code: 0, msg: "success", data: { card_id: id } });
    }
    if (path === "/open-apis/cardkit/v1/cards/id_convert" && method === "POST") {
      const m = byId.get(String(body().message_id));
      const id = m ? entityOf(m.content) : undefined;
      if (!id) return answer(400, { code: 300302, msg: "the message holds no card entity" });
      return answer(200, { code: 0, msg: "success", data: { card_id: id } });
    }
    const entityPath = /^\/open-apis\/cardkit\/v1\/cards\/(\d+)(\/elements\/([A-Za-z][A-Za-z0-9_]{0,19})\/content)?$/.exec(path);
    if (entityPath && method === "PUT") {
      const entity = entities.get(entityPath[1]!);
      if (!entity) return answer(400, { code: 300303, msg: "card not found" });
      const b = body();
      const sequence = Number(b.sequence);
      if (!Number.isInteger(sequence) || sequence <= entity.sequence)
        return answer(400, { code: 300317, msg: "sequence must be greater than the card's last" });
      entity.ops = entity.ops.filter((t) => now() - t < 1000);
      if (entity.ops.length >= 10) return answer(400, { code: 300311, msg: "card operated too frequently (10 a second)" });
      if (entityPath[2]) {
        if (!streamingOn(entity)) return answer(400, { code: 300309, msg: "streaming mode is closed" });
        const elements = ((entity.card.body as { elements?: Record<string, unknown>[] } | undefined)?.elements ?? []).filter(
          (el) => el.element_id === entityPath[3],
        );
        if (elements.length !== 1) return answer(400, { code: 300304, msg: "element not found" });
        elements[0]!.content = String(b.content);
      } else {
        const replacement = b.card as { type?: unknown; data?: unknown } | undefined;
        let card: unknown;
        try {
          card = JSON.parse(String(replacement?.data));
        } catch {
          card = undefined;
        }
        if (replacement?.type !== "card_json" || !card || (card as { schema?: unknown }).schema !== "2.0")
          return answer(400, { code: 300301, msg: "invalid card json" });
        entity.card = card as Record<string, unknown>;
        const streaming = (card as { config?: { streaming_mode?: unknown } }).config?.streaming_mode === true;
        entity.streamingSince = streaming ? (streamingOn(entity) ? entity.streamingSince : now()) : undefined;
      }
      entity.sequence = sequence;
      entity.ops.push(now());
      return answer(200, { code: 0, msg: "success", data: {} });
    }
    if (path === "/open-apis/im/v1/images" && method === "POST") {
      const parts = multipartParts(raw, req.headers["content-type"] ?? "");
      const image = parts.find((p) => p.name === "image");
      if (parts.find((p) => p.name === "image_type")?.data.toString() !== "message" || !image) return answer(400, { code: 234001, msg: "invalid image" });
      if (image.data.length > 10 * 1024 * 1024) return answer(400, { code: 234006, msg: "image too large" });
      const key = id("img_v3");
      uploads.set(key, { name: image.fileName ?? "image", data: image.data });
      return answer(200, { code: 0, msg: "success", data: { image_key: key } });
    }
    if (path === "/open-apis/im/v1/files" && method === "POST") {
      const parts = multipartParts(raw, req.headers["content-type"] ?? "");
      const file = parts.find((p) => p.name === "file");
      const type = parts.find((p) => p.name === "file_type")?.data.toString();
      const name = parts.find((p) => p.name === "file_name")?.data.toString();
      if (!file || !name || !["opus", "mp4", "pdf", "doc", "xls", "ppt", "stream"].includes(type ?? ""))
        return answer(400, { code: 234001, msg: "invalid file" });
      if (file.data.length > 30 * 1024 * 1024) return answer(400, { code: 234006, msg: "file too large" });
      const key = id("file_v3");
      uploads.set(key, { name, data: file.data });
      return answer(200, { code: 0, msg: "success", data: { file_key: key } });
    }
    const resource = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/resources\/([^/]+)$/.exec(path);
    if (resource && method === "GET") {
      const m = byId.get(resource[1]!);
      const upload = uploads.get(resource[2]!);
      // The key must belong to the message named (a key alone is not enough).
      if (!m || !upload || !m.content.includes(resource[2]!)) return answer(400, { code: 234003, msg: "File not in msg." });
      calls.push({ method, path, status: 200 });
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(upload.data.length) }).end(upload.data);
      return;
    }
    const react = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reactions(?:\/([^/]+))?$/.exec(path);
    if (react) {
      const m = byId.get(react[1]!);
      if (!m) return answer(400, { code: 231003, msg: "The message is not found" });
      const list = reactions.get(m.id) ?? [];
      if (method === "POST" && !react[2]) {
        const type = (body().reaction_type as { emoji_type?: unknown } | undefined)?.emoji_type;
        if (typeof type !== "string" || !/^[A-Za-z]+$/.test(type)) return answer(400, { code: 231001, msg: "reaction type is invalid." });
        const r = { id: id("rc"), type, by: "bot" };
        reactions.set(m.id, [...list, r]);
        return answer(200, { code: 0, msg: "success", data: { reaction_id: r.id, reaction_type: { emoji_type: type } } });
      }
      if (method === "DELETE" && react[2]) {
        const r = list.find((x) => x.id === react[2]);
        if (!r) return answer(400, { code: 231002, msg: "The reaction does not exist" });
        reactions.set(
          m.id,
          list.filter((x) => x !== r),
        );
        return answer(200, { code: 0, msg: "success", data: { reaction_id: r.id } });
      }
    }
    return answer(404, { code: 404, msg: `no such route ${method} ${path}` });
  }

  /** Content rules of "Send message": JSON content, a card within 30 KB. */
  function checkContent(msgType: string, content: string): { code: number; msg: string } | undefined {
    try {
      JSON.parse(content);
    } catch {
      return { code: 230001, msg: "content is not JSON" };
    }
    if (msgType === "interactive" && entityOf(content) !== undefined) {
      return entities.has(entityOf(content) ?? "") ? undefined : { code: 230001, msg: "card entity not found" };
    }
    if (msgType === "interactive") {
      if (Buffer.byteLength(content) > CARD_MAX_BYTES) return { code: 230025, msg: "card content exceeds 30KB" };
      if (!cardOf(content)) return { code: 230001, msg: "invalid card" };
    }
    if ((msgType === "image" || msgType === "file" || msgType === "audio") && ![...uploads.keys()].some((k) => content.includes(k)))
      return { code: 230001, msg: "unknown key" };
    return undefined;
  }

  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req, socket, head) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const ticket = url.searchParams.get("ticket") ?? "";
    // A ticket is good for one connection.
    if (url.pathname !== "/callback/ws" || !tickets.delete(ticket)) {
      socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      connectionsOpened++;
      mostOpenAtOnce = Math.max(mostOpenAtOnce, [...sockets].filter((w) => w.readyState === w.OPEN).length);
      ws.on("close", () => sockets.delete(ws));
      ws.on("message", (raw: Buffer) => onFrame(ws, decodeFrame(Buffer.from(raw))));
    });
  });

  function onFrame(ws: WebSocket, frame: Frame): void {
    const type = headerOf(frame, "type");
    if (frame.method === 0 && type === "ping") {
      const pong = { PingInterval: 120, ReconnectCount: -1, ReconnectInterval: 0, ReconnectNonce: 0 };
      ws.send(encodeFrame({ ...frame, headers: [{ key: "type", value: "pong" }], payload: Buffer.from(JSON.stringify(pong)) }));
      return;
    }
    if (frame.method === 1) {
      const id = headerOf(frame, "message_id") ?? "";
      // The SDK answers {"code": 200, "data": base64(JSON of what the handler returned)} (a card callback's toast or card).
      let code = 0;
      let body = "{}";
      try {
        const answer = JSON.parse(frame.payload?.toString("utf8") ?? "{}") as { code?: unknown; data?: unknown };
        code = Number(answer.code);
        if (typeof answer.data === "string") body = Buffer.from(answer.data, "base64").toString("utf8");
      } catch {
        code = 0;
      }
      awaiting.get(id)?.(code, body);
    }
  }

  /** One attempt down the long connection: the code the client answered, or "no answer". */
  async function sendDown(plain: string): Promise<{ status: number | "no answer"; body: string }> {
    const ws = [...sockets].filter((w) => w.readyState === w.OPEN).at(-1);
    // No connection up: nobody to push to; the event waits for the next attempt.
    if (!ws) return { status: "no answer", body: "" };
    const messageId = randomBytes(8).toString("hex");
    const data = Buffer.from(plain, "utf8");
    const partBytes = options.framePartBytes ?? 1024 * 1024;
    const sum = Math.max(1, Math.ceil(data.length / partBytes));
    const answered = new Promise<{ status: number | "no answer"; body: string }>((resolve) => {
      const timer = setTimeout(() => {
        awaiting.delete(messageId);
        resolve({ status: "no answer", body: "" });
      }, answerWithin);
      awaiting.set(messageId, (code, body) => {
        clearTimeout(timer);
        awaiting.delete(messageId);
        resolve({ status: code, body });
      });
    });
    for (let seq = 0; seq < sum; seq++) {
      const frame: Frame = {
        SeqID: 0,
        LogID: 0,
        service: SERVICE_ID,
        method: 1,
        headers: [
          { key: "type", value: "event" },
          { key: "message_id", value: messageId },
          { key: "sum", value: String(sum) },
          { key: "seq", value: String(seq) },
          { key: "trace_id", value: randomBytes(4).toString("hex") },
        ],
        payload: data.subarray(seq * partBytes, (seq + 1) * partBytes),
      };
      ws.send(encodeFrame(frame));
    }
    return answered;
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // --- driving the bot ----------------------------------------------------
  function seal(plain: string): { body: string; headers: Record<string, string> } {
    let body = plain;
    if (options.encryptKey !== undefined) {
      const key = createHash("sha256").update(options.encryptKey).digest();
      const iv = randomBytes(16);
      const cipher = createCipheriv("aes-256-cbc", key, iv);
      body = JSON.stringify({ encrypt: Buffer.concat([iv, cipher.update(plain, "utf8"), cipher.final()]).toString("base64") });
    }
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (options.encryptKey !== undefined) {
      const timestamp = String(Math.floor(now() / 1000));
      const nonce = randomBytes(8).toString("hex");
      headers["x-lark-request-timestamp"] = timestamp;
      headers["x-lark-request-nonce"] = nonce;
      headers["x-lark-signature"] = createHash("sha256").update(`${timestamp}${nonce}${options.encryptKey}${body}`).digest("hex");
    }
    return { body, headers };
  }

  async function post(body: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
    if (!requestUrl) throw new Error("the fake has no Request URL (setRequestUrl)");
    const res = await fetch(requestUrl, { method: "POST", headers, body, signal: AbortSignal.timeout(answerWithin) });
    return { status: res.status, body: await res.text() };
  }

  /** Delivers an event; again after each delay until answered 200 in time, each attempt with a fresh signature. */
  function deliver(eventId: string, plain: string): Promise<Delivery> {
    sentEvents.set(eventId, plain);
    return new Promise<Delivery>((resolve) => {
      const attempt = async (n: number): Promise<void> => {
        if (closed) return;
        let delivery: Delivery;
        if (options.mode === "websocket") {
          const got = await sendDown(plain);
          delivery = { eventId, attempt: n, status: got.status, body: got.body };
        } else {
          const sealed = seal(plain);
          try {
            const got = await post(sealed.body, sealed.headers);
            delivery = { eventId, attempt: n, status: got.status, body: got.body };
          } catch {
            delivery = { eventId, attempt: n, status: "no answer", body: "" };
          }
        }
        deliveries.push(delivery);
        if (delivery.status === 200 || n > retryDelays.length) return resolve(delivery);
        const timer = setTimeout(
          () => {
            timers.delete(timer);
            void attempt(n + 1);
          },
          retryDelays[n - 1],
        );
        timers.add(timer);
      };
      void attempt(1);
    });
  }

  const envelope = (eventType: string, event: unknown) => {
    const eventId = randomBytes(16).toString("hex");
    const header = {
      event_id: eventId,
      event_type: eventType,
      create_time: String(now()),
      token: options.verificationToken ?? "",
      app_id: options.appId,
      tenant_key: "tenant_fake",
    };
    return { eventId, plain: JSON.stringify({ schema: "2.0", header, event }) };
  };

  return {
    apiBase,
    botOpenId: BOT_OPEN_ID,
    setRequestUrl(url) {
      requestUrl = url;
    },
    async verifyUrl() {
      const sealed = seal(JSON.stringify({ challenge: randomBytes(8).toString("hex"), token: options.verificationToken ?? "", type: "url_verification" }));
      // The URL verification is not signed (only events are).
      return post(sealed.body, { "content-type": "application/json" });
    },
    say(input) {
      let content: string;
      let msgType = "text";
      const mentions: unknown[] = [];
      if (input.file) {
        const key = id(input.file.kind === "image" ? "img_v3" : "file_v3");
        uploads.set(key, { name: input.file.name, data: input.file.data });
        msgType = input.file.kind;
        content = JSON.stringify(
          input.file.kind === "image"
            ? { image_key: key }
            : input.file.kind === "audio"
              ? { file_key: key, duration: input.file.durationMs ?? 1000 }
              : { file_key: key, file_name: input.file.name },
        );
      } else {
        const text = input.mentionBot ? `@_user_1 ${input.text ?? ""}` : (input.text ?? "");
        if (input.mentionBot)
          mentions.push({ key: "@_user_1", id: { open_id: BOT_OPEN_ID, union_id: "on_fakebot", user_id: null }, name: "Fake Bot", tenant_key: "tenant_fake" });
        content = JSON.stringify({ text });
      }
      const parent = input.threadOf ? byId.get(input.threadOf) : undefined;
      let threadId = parent?.threadId;
      if (parent && !threadId) {
        threadId = id("omt");
        parent.threadId = threadId;
      }
      const message = add({
        id: id("om"),
        chatId: input.chatId,
        ...(threadId ? { threadId } : {}),
        ...(parent ? { rootId: parent.rootId ?? parent.id, parentId: parent.id } : {}),
        sender: input.user,
        msgType,
        content,
        createTime: now(),
      });
      const { eventId, plain } = envelope("im.message.receive_v1", {
        sender: { sender_id: { open_id: input.user, union_id: `on_${input.user}`, user_id: null }, sender_type: "user", tenant_key: "tenant_fake" },
        message: {
          message_id: message.id,
          ...(message.rootId ? { root_id: message.rootId, parent_id: message.parentId } : {}),
          ...(threadId ? { thread_id: threadId } : {}),
          create_time: String(message.createTime),
          update_time: String(message.createTime),
          chat_id: input.chatId,
          chat_type: input.chatType,
          message_type: msgType,
          content,
          ...(mentions.length > 0 ? { mentions } : {}),
        },
      });
      return { message, eventId, delivered: deliver(eventId, plain) };
    },
    tap({ user, messageId, index }) {
      const m = byId.get(messageId);
      const card = m ? cardOf(m.content) : undefined;
      if (!m || !card || index >= card.values.length) throw new Error(`no button ${index} on ${messageId}`);
      const { eventId, plain } = envelope("card.action.trigger", {
        operator: { open_id: user, union_id: `on_${user}`, tenant_key: "tenant_fake" },
        token: randomBytes(8).toString("hex"),
        action: { value: card.values[index], tag: "button" },
        host: "im_message",
        context: { open_message_id: m.id, open_chat_id: m.chatId },
      });
      return { eventId, delivered: deliver(eventId, plain) };
    },
    post,
    seal,
    messages: (chatId) => messages.filter((m) => m.chatId === chatId),
    textOf(message) {
      if (message.msgType === "interactive") return cardOf(message.content)?.texts.join("\n") ?? "";
      if (message.msgType === "text") return String((JSON.parse(message.content) as { text?: unknown }).text ?? "");
      return "";
    },
    buttonsOf: (messageId) => {
      const m = byId.get(messageId);
      return m ? (cardOf(m.content)?.buttons ?? []) : [];
    },
    filesOf: (chatId) =>
      messages
        .filter((m) => m.chatId === chatId && m.sender === "bot" && ["image", "file", "audio"].includes(m.msgType))
        .map((m) => {
          const key = [...uploads.keys()].find((k) => m.content.includes(k));
          return key ? (uploads.get(key)?.name ?? "") : "";
        }),
    fileData: (name) => [...uploads.values()].find((u) => u.name === name)?.data,
    reactions: (messageId) => (reactions.get(messageId) ?? []).map((r) => r.type),
    deliveries: () => [...deliveries],
    tokensIssued: () => tokensIssued,
    limitNext(count, resetSeconds) {
      limited = { count, reset: resetSeconds };
    },
    calls: () => [...calls],
    openConnections: () => [...sockets].filter((w) => w.readyState === w.OPEN).length,
    connectionsOpened: () => connectionsOpened,
    dropConnections() {
      for (const ws of sockets) ws.terminate();
    },
    mostOpenAtOnce: () => mostOpenAtOnce,
    streamingOf(messageId) {
      const m = byId.get(messageId);
      const entity = m ? entities.get(entityOf(m.content) ?? "") : undefined;
      return entity ? streamingOn(entity) : undefined;
    },
    async resend(eventId) {
      const plain = sentEvents.get(eventId);
      if (plain === undefined) throw new Error(`no event ${eventId}`);
      if (options.mode === "websocket") return (await sendDown(plain)).status;
      const sealed = seal(plain);
      return (await post(sealed.body, sealed.headers)).status;
    },
    async close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      for (const ws of sockets) ws.terminate();
      wss.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
