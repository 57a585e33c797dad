/**
 * A local stand-in for LINE's Messaging API and its webhook, on one HTTP
 * server bound to 127.0.0.1, port 0 (it serves both `api.line.me` and
 * `api-data.line.me` paths), obeying the rules in LINE's docs
 * (developers.line.biz/en/reference/messaging-api), not the bridge's code:
 *
 * - Every call carries `Authorization: Bearer <channel access token>`, else
 *   401 `{"message":"Authentication failed..."}`.
 * - Reply (`POST /v2/bot/message/reply`): the reply token of a webhook event,
 *   usable once, and only within its life ("may be invalid after a minute":
 *   `replyTokenLifeMs`, default 60 s); else 400 `{"message":"Invalid reply token"}`.
 *   Reply and push take 1 to 5 message objects; a text object holds at most
 *   5,000 characters; quick reply at most 13 items, a label at most 20
 *   characters (else 400 with `details`).
 * - Push (`POST /v2/bot/message/push`): counts against the month's quota
 *   (`quota`, one per push to a user, one per member to a group or room); over
 *   it, 429 `{"message":"You have reached your monthly limit."}`. An
 *   `X-Line-Retry-Key` must be a UUID (else 400); a key LINE accepted before
 *   is answered 409 with `x-line-accepted-request-id` and nothing sent.
 * - Rate limits: `rateLimit(n)` answers the next n send calls 429
 *   `{"message":"The API rate limit has been exceeded. Try again later."}`
 *   (LINE sends no Retry-After), nothing done.
 * - `dropNext()`: the next send call is carried out, then its connection is
 *   destroyed without an answer (a dropped connection: the client cannot know).
 * - `POST /v2/bot/chat/loading/start`: `chatId` a user's id only (one-to-one
 *   chats), `loadingSeconds` 5-60 in steps of 5, else 400.
 * - Quota: `GET /v2/bot/message/quota` and `/quota/consumption`; bot info
 *   `GET /v2/bot/info`; `GET /v2/bot/channel/webhook/endpoint`.
 * - Content people send: `GET /v2/bot/message/{id}/content`.
 * - Webhook: each event posted to the webhook URL signed
 *   (`X-Line-Signature`: base64 HMAC-SHA256 of the body with the channel
 *   secret), with a fresh `webhookEventId`; answered non-2xx (or not at all)
 *   and `redelivery` on, it is posted again with `deliveryContext.isRedelivery`
 *   true and the same `webhookEventId`.
 * - Quick reply buttons show only on the chat's last message (they go once
 *   another message is in the chat); a tap posts a `postback` event.
 * - Media the bot sends (image, video, audio) only by HTTPS URL of at most
 *   2,000 characters, image and video with an HTTPS `previewImageUrl`, audio
 *   with a whole positive `duration` (ms); else 400 with `details`.
 *   `fetchMedia` fetches such a URL as LINE's servers do: https only, the
 *   certificate verified (against `trustedCa`, a test's TLS proxy's).
 */
import { createHmac, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, type Response as UndiciResponse, fetch as undiciFetch } from "undici";

const TEXT_MAX = 5000;
const URL_MAX = 2000;
const MESSAGES_MAX = 5;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface FakeLineOptions {
  channelAccessToken: string;
  channelSecret: string;
  /** Where events are posted; set later with `setWebhookUrl`. */
  webhookUrl?: string;
  /** "Webhook redelivery" on. Default false. */
  redelivery?: boolean;
  /** Deliveries of one event at most (first included). Default 4. */
  maxDeliveries?: number;
  /** The month's push quota; undefined: "none" (no limit). */
  quota?: number;
  /** The fake's clock (reply-token life). Default Date.now. */
  now?: () => number;
  replyTokenLifeMs?: number;
  /** Members of a group or room (what a push there costs). Default 3. */
  groupMembers?: number;
  /** The certificate (PEM) LINE's media fetcher trusts: a test's TLS proxy's, in place of the public CAs. */
  trustedCa?: string;
}

export interface SentMessage {
  id: string;
  /** How it came: reply (free) or push (quota). */
  via: "reply" | "push";
  type: string;
  text: string | undefined;
  quoteToken: string | undefined;
  quickReply: string[];
  /** Image/audio/video: the URL LINE would fetch. */
  url: string | undefined;
  raw: Record<string, unknown>;
}

export interface Person {
  userId: string;
  /** Absent: a one-to-one chat. */
  group?: string;
  room?: string;
}

interface ReplyToken {
  chatId: string;
  issuedAt: number;
  used: boolean;
}

export interface FakeLine {
  readonly apiBase: string;
  readonly bot: { userId: string; displayName: string };
  setWebhookUrl(url: string): void;
  /** A person writes; resolves with the event's ids once LINE stopped delivering it (answered 2xx or out of tries). */
  say(person: Person, text: string, options?: { mentionBot?: boolean }): Promise<DeliveredEvent>;
  /** A person sends content (image, audio, file). */
  send(person: Person, kind: "image" | "audio" | "file" | "video", data: Buffer, options?: { fileName?: string; durationMs?: number }): Promise<DeliveredEvent>;
  /** Posts a raw body, signed with `secret` (default the channel's), once; resolves with the status. */
  post(body: unknown, options?: { secret?: string; signature?: string | null }): Promise<number>;
  /** Posts the same event again as a redelivery (`isRedelivery`), once. */
  redeliver(event: DeliveredEvent): Promise<number>;
  /** The bot's messages in a chat (user, group or room id), oldest first. */
  messages(chatId: string): SentMessage[];
  /** Quick reply labels the message shows now ([] once another message followed). */
  quickReply(chatId: string, messageId: string): string[];
  tap(chatId: string, messageId: string, index: number, userId?: string): Promise<DeliveredEvent>;
  /**
   * Fetches a media URL the bot sent as LINE's servers do: an https URL only (else it throws),
   * over TLS verified against `trustedCa` (the test's reverse proxy in front of the bridge).
   * `headers`: e.g. a Range.
   */
  fetchMedia(url: string, init?: { method?: string; headers?: Record<string, string> }): Promise<UndiciResponse>;
  /** Ages every outstanding reply token by `ms`. */
  age(ms: number): void;
  rateLimit(calls: number): void;
  dropNext(): void;
  readonly loading: { chatId: string; loadingSeconds: number }[];
  /** Pushes counted against the quota, and replies sent. */
  readonly usage: { push: number; reply: number; refused409: number };
  /** Webhook deliveries and their statuses. */
  readonly deliveries: { webhookEventId: string; redelivery: boolean; status: number }[];
  close(): Promise<void>;
}

export interface DeliveredEvent {
  webhookEventId: string;
  messageId: string;
  replyToken: string;
  chatId: string;
  /** The last status the webhook answered (0: no answer). */
  status: number;
  event: Record<string, unknown>;
}

export async function createFakeLine(options: FakeLineOptions): Promise<FakeLine> {
  const now = options.now ?? (() => Date.now());
  const lifeMs = options.replyTokenLifeMs ?? 60_000;
  const members = options.groupMembers ?? 3;
  // LINE's servers verify the bridge's certificate; here against the test's CA (TLS 1.2 or later, as LINE asks).
  const mediaFetcher = new Agent({ connect: { ...(options.trustedCa ? { ca: options.trustedCa } : {}), minVersion: "TLSv1.2" } });
  const bot = { userId: `U${randomBytes(16).toString("hex")}`, displayName: "Bridge Bot" };
  const chats = new Map<string, SentMessage[]>();
  const tokens = new Map<string, ReplyToken>();
  const retryKeys = new Map<string, string>();
  const contents = new Map<string, { data: Buffer; type: string }>();
  const loading: FakeLine["loading"] = [];
  const usage = { push: 0, reply: 0, refused409: 0 };
  const deliveries: FakeLine["deliveries"] = [];
  let webhookUrl = options.webhookUrl;
  let limited = 0;
  let drop = false;
  let nextId = 100_000_000_000_000;
  const id = () => String(nextId++);

  const server = createServer((req, res) => {
    void serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    void res.writeHead(status, { "content-type": "application/json", "x-line-request-id": randomUUID(), ...headers }).end(JSON.stringify(body));
  const bad = (res: ServerResponse, message: string, details?: { message: string; property: string }[]) =>
    json(res, 400, { message, ...(details ? { details } : {}) });

  async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    try {
      const parsed: unknown = JSON.parse(Buffer.concat(parts).toString("utf8"));
      return parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  }

  /** Why the message objects would be refused, or undefined. */
  function invalid(messages: unknown): { message: string; property: string }[] | string | undefined {
    if (!Array.isArray(messages) || messages.length < 1 || messages.length > MESSAGES_MAX) return "Size must be between 1 and 5";
    const details: { message: string; property: string }[] = [];
    messages.forEach((m: Record<string, unknown>, i) => {
      if (m.type === "text") {
        if (typeof m.text !== "string" || m.text.length === 0) details.push({ message: "Must not be empty", property: `messages[${i}].text` });
        else if (m.text.length > TEXT_MAX) details.push({ message: "Length must be between 0 and 5000", property: `messages[${i}].text` });
      } else if (m.type === "image" || m.type === "audio" || m.type === "video") {
        // Media only by HTTPS URL of at most 2,000 characters; image and video with a preview image; audio with its duration (ms).
        const urls = m.type === "audio" ? ["originalContentUrl"] : ["originalContentUrl", "previewImageUrl"];
        for (const key of urls) {
          const url = m[key];
          if (typeof url !== "string" || !url.startsWith("https://") || !URL.canParse(url))
            details.push({ message: "Must be an HTTPS URL", property: `messages[${i}].${key}` });
          else if (url.length > URL_MAX) details.push({ message: "Length must be between 0 and 2000", property: `messages[${i}].${key}` });
        }
        if (m.type === "audio" && (typeof m.duration !== "number" || !Number.isInteger(m.duration) || m.duration < 1))
          details.push({ message: "Must be a positive integer", property: `messages[${i}].duration` });
      } else details.push({ message: "Unknown or unsupported type", property: `messages[${i}].type` });
      const items = (m.quickReply as { items?: { action?: { label?: string } }[] } | undefined)?.items;
      if (items) {
        if (items.length > 13) details.push({ message: "Size must be between 1 and 13", property: `messages[${i}].quickReply.items` });
        items.forEach((item, j) => {
          if ((item.action?.label ?? "").length > 20)
            details.push({ message: "Length must be between 0 and 20", property: `messages[${i}].quickReply.items[${j}].action.label` });
        });
      }
    });
    return details.length > 0 ? details : undefined;
  }

  function deliver(chatId: string, messages: Record<string, unknown>[], via: SentMessage["via"]): { id: string; quoteToken: string }[] {
    const chat = chats.get(chatId) ?? [];
    chats.set(chatId, chat);
    return messages.map((m) => {
      const sent: SentMessage = {
        id: id(),
        via,
        type: String(m.type),
        text: typeof m.text === "string" ? m.text : undefined,
        quoteToken: typeof m.quoteToken === "string" ? m.quoteToken : undefined,
        quickReply: ((m.quickReply as { items?: { action?: { label?: string } }[] } | undefined)?.items ?? []).map((i) => i.action?.label ?? ""),
        url: typeof m.originalContentUrl === "string" ? m.originalContentUrl : undefined,
        raw: m,
      };
      chat.push(sent);
      return { id: sent.id, quoteToken: randomBytes(8).toString("hex") };
    });
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", apiBase);
    if (req.headers.authorization !== `Bearer ${options.channelAccessToken}`) {
      return json(res, 401, { message: "Authentication failed. Confirm that the access token in the authorization header is valid." });
    }
    const route = `${req.method} ${url.pathname}`;
    const content = /^GET \/v2\/bot\/message\/([^/]+)\/content$/.exec(route);
    if (content) {
      const found = contents.get(decodeURIComponent(content[1]!));
      if (!found) return json(res, 404, { message: "Not found" });
      return void res.writeHead(200, { "content-type": found.type, "content-length": String(found.data.length) }).end(found.data);
    }
    switch (route) {
      case "GET /v2/bot/info":
        return json(res, 200, { userId: bot.userId, basicId: "@123abcde", displayName: bot.displayName, chatMode: "bot", markAsReadMode: "auto" });
      case "GET /v2/bot/channel/webhook/endpoint":
        return json(res, 200, { endpoint: webhookUrl ?? "", active: webhookUrl !== undefined });
      case "GET /v2/bot/message/quota":
        return json(res, 200, options.quota === undefined ? { type: "none" } : { type: "limited", value: options.quota });
      case "GET /v2/bot/message/quota/consumption":
        return json(res, 200, { totalUsage: usage.push });
      case "POST /v2/bot/chat/loading/start": {
        const body = await readJson(req);
        const seconds = body.loadingSeconds ?? 20;
        if (typeof body.chatId !== "string" || !body.chatId.startsWith("U")) return bad(res, "The property, 'chatId', in the request body is invalid");
        if (typeof seconds !== "number" || seconds < 5 || seconds > 60 || seconds % 5 !== 0)
          return bad(res, "The value for the 'loadingSeconds' property is invalid");
        loading.push({ chatId: body.chatId, loadingSeconds: seconds });
        return json(res, 202, {});
      }
      case "POST /v2/bot/message/reply":
      case "POST /v2/bot/message/push":
        return send(req, res, route.endsWith("reply") ? "reply" : "push");
      default:
        return json(res, 404, { message: "Not found" });
    }
  }

  async function send(req: IncomingMessage, res: ServerResponse, via: "reply" | "push"): Promise<void> {
    const body = await readJson(req);
    if (limited > 0) {
      limited -= 1;
      return json(res, 429, { message: "The API rate limit has been exceeded. Try again later." });
    }
    const problem = invalid(body.messages);
    if (problem) return typeof problem === "string" ? bad(res, problem) : bad(res, "The request body has 1 error(s)", problem);
    const messages = body.messages as Record<string, unknown>[];
    let chatId: string;
    if (via === "reply") {
      const token = typeof body.replyToken === "string" ? tokens.get(body.replyToken) : undefined;
      if (!token || token.used || now() - token.issuedAt > lifeMs) return bad(res, "Invalid reply token");
      token.used = true;
      chatId = token.chatId;
      usage.reply += 1;
    } else {
      const key = req.headers["x-line-retry-key"];
      if (key !== undefined && (typeof key !== "string" || !UUID.test(key))) return bad(res, "The retry key is invalid");
      if (typeof key === "string" && retryKeys.has(key)) {
        usage.refused409 += 1;
        return json(res, 409, { message: "The retry key is already accepted" }, { "x-line-accepted-request-id": retryKeys.get(key)! });
      }
      if (typeof body.to !== "string") return bad(res, "The property, 'to', in the request body is invalid");
      chatId = body.to;
      const cost = chatId.startsWith("U") ? 1 : members;
      if (options.quota !== undefined && usage.push + cost > options.quota) return json(res, 429, { message: "You have reached your monthly limit." });
      usage.push += cost;
      if (typeof key === "string") retryKeys.set(key, randomUUID());
    }
    const sentMessages = deliver(chatId, messages, via);
    if (drop) {
      drop = false;
      return void res.socket?.destroy();
    }
    return json(res, 200, { sentMessages });
  }

  function sourceOf(person: Person): Record<string, unknown> {
    if (person.group) return { type: "group", groupId: person.group, userId: person.userId };
    if (person.room) return { type: "room", roomId: person.room, userId: person.userId };
    return { type: "user", userId: person.userId };
  }
  const chatOf = (person: Person) => person.group ?? person.room ?? person.userId;

  function signed(raw: string, secret = options.channelSecret): string {
    return createHmac("sha256", secret).update(raw).digest("base64");
  }

  async function postRaw(raw: string, signature: string | null): Promise<number> {
    if (!webhookUrl) throw new Error("the fake LINE has no webhook URL");
    try {
      const res = await fetch(webhookUrl, {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": "LineBotWebhook/2.0", ...(signature === null ? {} : { "x-line-signature": signature }) },
        body: raw,
      });
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 0;
    }
  }

  async function emit(event: Record<string, unknown>, chatId: string, messageId: string, replyToken: string): Promise<DeliveredEvent> {
    const webhookEventId = String(event.webhookEventId);
    const max = options.redelivery ? (options.maxDeliveries ?? 4) : 1;
    let status = 0;
    for (let attempt = 0; attempt < max; attempt++) {
      const redelivery = attempt > 0;
      const raw = JSON.stringify({ destination: bot.userId, events: [{ ...event, deliveryContext: { isRedelivery: redelivery } }] });
      status = await postRaw(raw, signed(raw));
      deliveries.push({ webhookEventId, redelivery, status });
      if (status >= 200 && status < 300) break;
    }
    return { webhookEventId, messageId, replyToken, chatId, status, event };
  }

  function baseEvent(person: Person, type: string): { event: Record<string, unknown>; replyToken: string } {
    const replyToken = randomBytes(16).toString("hex");
    tokens.set(replyToken, { chatId: chatOf(person), issuedAt: now(), used: false });
    return {
      replyToken,
      event: {
        type,
        mode: "active",
        timestamp: Date.now(),
        source: sourceOf(person),
        webhookEventId: `01${randomBytes(12).toString("hex").toUpperCase()}`,
        replyToken,
      },
    };
  }

  return {
    apiBase,
    bot,
    setWebhookUrl(url) {
      webhookUrl = url;
    },
    say(person, text, sayOptions = {}) {
      const { event, replyToken } = baseEvent(person, "message");
      const messageId = id();
      const mention = `@${bot.displayName}`;
      const full = sayOptions.mentionBot ? `${mention} ${text}` : text;
      event.message = {
        type: "text",
        id: messageId,
        text: full,
        quoteToken: randomBytes(8).toString("hex"),
        ...(sayOptions.mentionBot ? { mention: { mentionees: [{ index: 0, length: mention.length, type: "user", userId: bot.userId, isSelf: true }] } } : {}),
      };
      return emit(event, chatOf(person), messageId, replyToken);
    },
    send(person, kind, data, sendOptions = {}) {
      const { event, replyToken } = baseEvent(person, "message");
      const messageId = id();
      const type = { image: "image/jpeg", audio: "audio/x-m4a", video: "video/mp4", file: "application/octet-stream" }[kind];
      contents.set(messageId, { data, type });
      event.message =
        kind === "file"
          ? { type: "file", id: messageId, fileName: sendOptions.fileName ?? "file.bin", fileSize: data.length }
          : { type: kind, id: messageId, contentProvider: { type: "line" }, ...(kind !== "image" ? { duration: sendOptions.durationMs ?? 1000 } : {}) };
      return emit(event, chatOf(person), messageId, replyToken);
    },
    post(body, postOptions = {}) {
      const raw = JSON.stringify(body);
      return postRaw(raw, postOptions.signature === undefined ? signed(raw, postOptions.secret) : postOptions.signature);
    },
    async redeliver(delivered) {
      const raw = JSON.stringify({ destination: bot.userId, events: [{ ...delivered.event, deliveryContext: { isRedelivery: true } }] });
      const status = await postRaw(raw, signed(raw));
      deliveries.push({ webhookEventId: delivered.webhookEventId, redelivery: true, status });
      return status;
    },
    messages: (chatId) => [...(chats.get(chatId) ?? [])],
    fetchMedia(url, init = {}) {
      if (!url.startsWith("https://")) throw new Error(`LINE fetches media over HTTPS only: ${url}`);
      return undiciFetch(url, { method: init.method ?? "GET", headers: init.headers ?? {}, dispatcher: mediaFetcher });
    },
    quickReply(chatId, messageId) {
      const chat = chats.get(chatId) ?? [];
      const last = chat.at(-1);
      return last && last.id === messageId ? last.quickReply : [];
    },
    tap(chatId, messageId, index, userId) {
      const message = (chats.get(chatId) ?? []).find((m) => m.id === messageId);
      if (!message || chats.get(chatId)?.at(-1) !== message) throw new Error("no quick reply shows on that message");
      const items = (message.raw.quickReply as { items: { action: { data: string } }[] }).items;
      const data = items[index]?.action.data;
      if (data === undefined) throw new Error(`no button ${index}`);
      const person: Person = chatId.startsWith("C")
        ? { userId: userId ?? "U0", group: chatId }
        : chatId.startsWith("R")
          ? { userId: userId ?? "U0", room: chatId }
          : { userId: chatId };
      const { event, replyToken } = baseEvent(person, "postback");
      event.postback = { data };
      return emit(event, chatId, `postback-${String(event.webhookEventId)}`, replyToken);
    },
    age(ms) {
      for (const token of tokens.values()) token.issuedAt -= ms;
    },
    rateLimit(calls) {
      limited = calls;
    },
    dropNext() {
      drop = true;
    },
    loading,
    usage,
    deliveries,
    close: async () => {
      await mediaFetcher.close();
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}
