/**
 * A local stand-in for a signal-cli daemon started with `--http`, over real
 * HTTP, following signal-cli-jsonrpc(5) and its HTTP server
 * (src/main/java/org/asamk/signal/http/HttpServerHandler.java):
 *
 * - `GET /api/v1/check`: 200, no body. `POST /api/v1/rpc`: one JSON-RPC
 *   request, `Content-Type: application/json` or 415, POST or 405; answered
 *   200 with the response. `GET /api/v1/events[?account=]`: a
 *   `text/event-stream` of `event:receive` / `data:{"envelope":…,"account":…}`
 *   frames (no `id:`), a `:` keep-alive every 15 s; an unknown account is a
 *   400. A Host header other than localhost / 127.0.0.1 / ::1 is a 421.
 * - Multi-account mode: a call naming another `account` is a -32602
 *   "Specified account does not exist".
 * - Events are written once and never again: signal-cli confirmed the message
 *   to Signal's server before writing it to the stream
 *   (`JsonReceiveMessageHandler`), and a client that dies after the write
 *   has lost it. With `--receive-mode on-connection` (the default here) a
 *   message waits on Signal's server while no client is connected, and the
 *   next client gets it; with `on-start` it goes to nobody.
 * - `send` answers `{timestamp, results}`; a rate limit is the JSON-RPC error
 *   -5 "Failed to send message due to rate limiting" with the results
 *   (`RATE_LIMIT_FAILURE`, `retryAfterSeconds`, a proof-required `token`) in
 *   `data.response`; an unknown group or attachment is -1.
 * - Edits (`editTimestamp`) name the original message; Signal's clients show
 *   an edit only within 24 hours of the original and at most 10 edits of it
 *   (the rest are ignored by the recipients, and counted here as refused).
 * - Reactions: one per sender per message, replaced by the next; `remove`.
 *
 * Faults for tests: `rateLimit(n, …)`, `dropStreams()` (every SSE socket
 * destroyed), `silence()` (open streams stay open and get nothing, not even
 * keep-alives: the "connected but deaf" failure), `deliverAgain(ts)` (a
 * duplicate delivery).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import { listenOn } from "../helpers/emulator.js";

export interface SignalPerson {
  number: string;
  uuid: string;
  name: string;
}

export interface FakeSignalOptions {
  account: string;
  /** The bot's ACI. */
  uuid?: string;
  /** Keep-alive period, ms (signal-cli: 15 000). */
  keepAliveMs?: number;
  /** signal-cli's `--receive-mode`: what happens to a message while no client listens. Default "on-connection". */
  receiveMode?: "on-connection" | "on-start";
  /** The clock for timestamps and the 24 h edit rule. Default Date.now. */
  now?: () => number;
}

export interface SentMessage {
  chatId: string;
  timestamp: number;
  text: string;
  /** Every text the message had, the original first. */
  history: string[];
  quote?: { timestamp: number; author: string };
  attachments: { contentType: string; filename: string; data: Buffer }[];
  voiceNote: boolean;
  /** `textStyle` ranges ("start:length:STYLE"), as the last text had them. */
  styles: string[];
  /** Edits recipients ignored (past 10, or past 24 hours). */
  refusedEdits: number;
}

interface Envelope {
  source: string;
  sourceNumber: string;
  sourceUuid: string;
  sourceName: string;
  sourceDevice: number;
  timestamp: number;
  serverReceivedTimestamp: number;
  serverDeliveredTimestamp: number;
  dataMessage: Record<string, unknown>;
}

const RPC = {
  parseError: -32700,
  methodNotFound: -32601,
  invalidParams: -32602,
  userError: -1,
  rateLimit: -5,
} as const;

export type FakeSignal = Awaited<ReturnType<typeof createFakeSignal>>;

export async function createFakeSignal(options: FakeSignalOptions) {
  const account = options.account;
  const botUuid = options.uuid ?? randomUUID();
  const now = options.now ?? Date.now;
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const receiveMode = options.receiveMode ?? "on-connection";

  let lastTimestamp = 0;
  /** Signal timestamps are milliseconds; each message its own. */
  const nextTimestamp = () => {
    lastTimestamp = Math.max(lastTimestamp + 1, now());
    return lastTimestamp;
  };

  const streams = new Set<{ res: ServerResponse; deaf: boolean }>();
  /** Event streams opened so far, and the most open at one time (several machines: only one node may listen). */
  let streamsOpened = 0;
  let mostStreamsAtOnce = 0;
  /** Messages waiting on "Signal's server" for a client (on-connection mode). */
  const waiting: string[] = [];
  const written: Envelope[] = [];
  const sent: SentMessage[] = [];
  const groups = new Map<string, { name: string; members: Set<string> }>();
  const attachments = new Map<string, { data: Buffer; contentType: string }>();
  /** `${chatId}|${timestamp}:${author}` -> emoji of the bot. */
  const reactions = new Map<string, string>();
  const calls: { method: string; params: Record<string, unknown> }[] = [];
  let limited: { count: number; retryAfterSeconds: number; token?: string } | undefined;

  const frameOf = (envelope: Envelope) => `event:receive\ndata:${JSON.stringify({ envelope, account })}\n\n`;

  function deliver(envelope: Envelope): void {
    written.push(envelope);
    const frame = frameOf(envelope);
    // A destroyed socket whose close has not been seen yet is no client (its write would vanish).
    const live = [...streams].filter((s) => !s.deaf && !s.res.destroyed);
    if (live.length === 0) {
      if (receiveMode === "on-connection") waiting.push(frame);
      return;
    }
    for (const s of live) s.res.write(frame);
  }

  function envelopeOf(from: SignalPerson, dataMessage: Record<string, unknown>, timestamp: number): Envelope {
    return {
      source: from.number,
      sourceNumber: from.number,
      sourceUuid: from.uuid,
      sourceName: from.name,
      sourceDevice: 1,
      timestamp,
      serverReceivedTimestamp: timestamp + 5,
      serverDeliveredTimestamp: timestamp + 10,
      dataMessage: { timestamp, expiresInSeconds: 0, viewOnce: false, ...dataMessage },
    };
  }

  interface Incoming {
    mention?: boolean;
    quote?: { timestamp: number; author: string };
    files?: { contentType: string; filename?: string; data: Buffer }[];
  }

  function compose(from: SignalPerson, text: string, how: Incoming, group?: string): Envelope {
    const timestamp = nextTimestamp();
    let message = text;
    const mentions: unknown[] = [];
    if (how.mention) {
      // Signal puts U+FFFC where the mention is and names who in `mentions`.
      mentions.push({ name: account, number: account, uuid: botUuid, start: 0, length: 1 });
      message = `\uFFFC ${text}`;
    }
    const files = (how.files ?? []).map((f) => {
      const id = `${randomUUID().replaceAll("-", "").slice(0, 20)}.bin`;
      attachments.set(id, { data: f.data, contentType: f.contentType });
      return {
        contentType: f.contentType,
        filename: f.filename ?? null,
        id,
        size: f.data.length,
        width: null,
        height: null,
        caption: null,
        uploadTimestamp: timestamp,
      };
    });
    return envelopeOf(
      from,
      {
        message: message || null,
        ...(mentions.length ? { mentions } : {}),
        ...(files.length ? { attachments: files } : {}),
        ...(how.quote
          ? {
              quote: {
                id: how.quote.timestamp,
                author: how.quote.author,
                authorNumber: how.quote.author === account ? account : null,
                authorUuid: how.quote.author === account ? botUuid : how.quote.author,
                text: "",
                attachments: [],
              },
            }
          : {}),
        ...(group ? { groupInfo: { groupId: group, groupName: groups.get(group)?.name ?? "group", revision: 1, type: "DELIVER" } } : {}),
      },
      timestamp,
    );
  }

  function rpcError(code: number, message: string, data: unknown = null) {
    return { error: { code, message, data } };
  }

  function chatOf(params: Record<string, unknown>): { chatId: string } | { error: ReturnType<typeof rpcError> } {
    if (typeof params.groupId === "string") {
      if (!groups.has(params.groupId)) return { error: rpcError(RPC.userError, "Invalid group id: Group not found") };
      return { chatId: params.groupId };
    }
    const recipient = Array.isArray(params.recipient) ? params.recipient[0] : params.recipient;
    if (typeof recipient !== "string" || !recipient) return { error: rpcError(RPC.userError, "No recipients given") };
    return { chatId: recipient };
  }

  function parseDataUri(uri: string): { contentType: string; filename: string; data: Buffer } | undefined {
    // signal-cli: data:<MIME-TYPE>[;filename=<FILENAME>];base64,<BASE64 ENCODED DATA>
    const m = /^data:([^;,]+)((?:;[^;,=]+=[^;,]*)*);base64,(.*)$/s.exec(uri);
    if (!m) return undefined;
    const filename = /;filename=([^;,]*)/.exec(m[2] ?? "")?.[1] ?? "file";
    return { contentType: m[1] ?? "application/octet-stream", filename, data: Buffer.from(m[3] ?? "", "base64") };
  }

  function handleRpc(method: string, params: Record<string, unknown>): { result: unknown } | { error: unknown } {
    if (params.account !== undefined && params.account !== account) return rpcError(RPC.invalidParams, "Specified account does not exist");
    calls.push({ method, params });
    switch (method) {
      case "listGroups":
        return { result: [...groups.entries()].map(([id, g]) => ({ id, name: g.name, isMember: true, members: [...g.members] })) };
      case "send": {
        const chat = chatOf(params);
        if ("error" in chat) return chat.error;
        if (limited && limited.count > 0) {
          limited.count--;
          const timestamp = nextTimestamp();
          const result = {
            type: "RATE_LIMIT_FAILURE",
            recipientAddress: { uuid: chat.chatId, number: null },
            retryAfterSeconds: limited.retryAfterSeconds,
            ...(limited.token ? { token: limited.token } : {}),
          };
          return rpcError(RPC.rateLimit, "Failed to send message due to rate limiting", { response: { timestamp, results: [result] } });
        }
        const text = typeof params.message === "string" ? params.message : "";
        const styles = (Array.isArray(params.textStyle) ? params.textStyle : typeof params.textStyle === "string" ? [params.textStyle] : []).map(String);
        // signal-cli parses each as start:length:STYLE; the fake also refuses a range outside the text (Signal's clients could not show it).
        for (const style of styles) {
          const m = /^(\d+):(\d+):(NONE|BOLD|ITALIC|SPOILER|STRIKETHROUGH|MONOSPACE)$/.exec(style);
          if (!m || Number(m[1]) + Number(m[2]) > text.length) return rpcError(RPC.userError, `Invalid text style: ${style}`);
        }
        if (typeof params.editTimestamp === "number") {
          const original = sent.find((s) => s.chatId === chat.chatId && s.timestamp === params.editTimestamp);
          if (!original) return rpcError(RPC.userError, "Failed to send message");
          const timestamp = nextTimestamp();
          // Recipients ignore an edit past the 10th or after 24 hours (Signal's clients).
          if (original.history.length > 10 || now() - original.timestamp > 24 * 3600 * 1000) original.refusedEdits++;
          else {
            original.history.push(text);
            original.text = text;
            original.styles = styles;
          }
          return { result: { timestamp, results: [{ type: "SUCCESS" }] } };
        }
        const files = (Array.isArray(params.attachments) ? params.attachments : typeof params.attachment === "string" ? [params.attachment] : []).map((a) =>
          typeof a === "string" ? parseDataUri(a) : undefined,
        );
        if (files.some((f) => !f)) return rpcError(RPC.userError, "Invalid attachment");
        if (!text && files.length === 0) return rpcError(RPC.userError, "No message given");
        const timestamp = nextTimestamp();
        const quote =
          typeof params.quoteTimestamp === "number" && typeof params.quoteAuthor === "string"
            ? { timestamp: params.quoteTimestamp, author: params.quoteAuthor }
            : undefined;
        sent.push({
          chatId: chat.chatId,
          timestamp,
          text,
          history: [text],
          ...(quote ? { quote } : {}),
          attachments: files.filter((f) => f !== undefined),
          voiceNote: params.voiceNote === true,
          styles,
          refusedEdits: 0,
        });
        return { result: { timestamp, results: [{ type: "SUCCESS", recipientAddress: { uuid: chat.chatId, number: null } }] } };
      }
      case "sendTyping": {
        const chat = chatOf(params);
        return "error" in chat ? chat.error : { result: {} };
      }
      case "sendReaction": {
        const chat = chatOf(params);
        if ("error" in chat) return chat.error;
        if (typeof params.emoji !== "string" || typeof params.targetAuthor !== "string" || typeof params.targetTimestamp !== "number") {
          return rpcError(RPC.userError, "emoji, targetAuthor and targetTimestamp are required");
        }
        const key = `${chat.chatId}|${params.targetTimestamp}:${params.targetAuthor}`;
        if (params.remove === true) {
          if (reactions.get(key) === params.emoji) reactions.delete(key);
        } else reactions.set(key, params.emoji);
        return { result: { timestamp: nextTimestamp(), results: [{ type: "SUCCESS" }] } };
      }
      case "getAttachment": {
        const found = typeof params.id === "string" ? attachments.get(params.id) : undefined;
        if (!found) return rpcError(RPC.userError, "Unable to find attachment");
        return { result: { data: found.data.toString("base64") } };
      }
      default:
        return rpcError(RPC.methodNotFound, "Method not implemented");
    }
  }

  const hostAllowed = (req: IncomingMessage) => {
    const host = (req.headers.host ?? "")
      .replace(/:\d+$/, "")
      .replace(/^\[|\]$/g, "")
      .toLowerCase();
    return ["localhost", "127.0.0.1", "::1"].includes(host);
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname === "/api/v1/check") {
      res.writeHead(req.method === "GET" ? 200 : 405).end();
      return;
    }
    if (!hostAllowed(req)) {
      res.writeHead(421).end();
      return;
    }
    if (url.pathname === "/api/v1/events") {
      if (req.method !== "GET") return void res.writeHead(405).end();
      const wanted = url.searchParams.get("account");
      if (wanted && wanted !== account) return void res.writeHead(400).end();
      res.writeHead(200, { "content-type": "text/event-stream" });
      // signal-cli flushes the headers at once (SseInitialFlushTest).
      res.flushHeaders();
      const stream = { res, deaf: false };
      streams.add(stream);
      streamsOpened++;
      mostStreamsAtOnce = Math.max(mostStreamsAtOnce, [...streams].filter((s) => !s.deaf && !s.res.destroyed).length);
      if (!stream.deaf) for (const frame of waiting.splice(0)) res.write(frame);
      const keepAlive = setInterval(() => {
        if (!stream.deaf) res.write(":\n");
      }, keepAliveMs);
      const end = () => {
        clearInterval(keepAlive);
        streams.delete(stream);
      };
      res.on("close", end);
      return;
    }
    if (url.pathname !== "/api/v1/rpc") return void res.writeHead(404).end();
    if (req.method !== "POST") return void res.writeHead(405).end();
    if (!(req.headers["content-type"] ?? "").startsWith("application/json")) return void res.writeHead(415).end();
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: { id?: unknown; method?: unknown; params?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        return void reply(res, { jsonrpc: "2.0", id: null, error: { code: RPC.parseError, message: "Parse error", data: null } });
      }
      const id = body.id ?? null;
      if (typeof body.method !== "string")
        return void reply(res, { jsonrpc: "2.0", id, error: { code: -32600, message: "method field must be set", data: null } });
      const params = typeof body.params === "object" && body.params !== null ? (body.params as Record<string, unknown>) : {};
      const method = body.method;
      const answer = () => reply(res, { jsonrpc: "2.0", id, ...handleRpc(method, params) });
      const stall = stalls.get(method);
      if (stall && stall.left > 0) {
        stall.left--;
        stall.arrived++;
        stall.held.push(answer);
        return;
      }
      answer();
    });
  });
  const stalls = new Map<string, { left: number; arrived: number; held: (() => void)[] }>();
  const reply = (res: ServerResponse, body: unknown) => {
    if (res.destroyed) return;
    const text = JSON.stringify(body);
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
  };
  const listening = await listenOn(server);

  return {
    url: listening.url,
    account,
    uuid: botUuid,
    person(name: string, number: string): SignalPerson {
      return { name, number, uuid: randomUUID() };
    },
    /** A group with the bot in it; its id as signal-cli spells it (base64 of 32 bytes). */
    createGroup(name: string, members: SignalPerson[]): string {
      const id = Buffer.from(randomUUID().replaceAll("-", "") + randomUUID().replaceAll("-", "").slice(0, 32), "hex").toString("base64");
      groups.set(id, { name, members: new Set([account, ...members.map((m) => m.number)]) });
      return id;
    },
    /** A person writes to the bot directly; resolves the message's timestamp. */
    direct(from: SignalPerson, text: string, how: Incoming = {}): number {
      const envelope = compose(from, text, how);
      deliver(envelope);
      return envelope.timestamp;
    },
    group(groupId: string, from: SignalPerson, text: string, how: Incoming = {}): number {
      const envelope = compose(from, text, how, groupId);
      deliver(envelope);
      return envelope.timestamp;
    },
    /** Something that is not a message (a typing indicator, a receipt). */
    typing(from: SignalPerson): void {
      const timestamp = nextTimestamp();
      const frame = `event:receive\ndata:${JSON.stringify({ envelope: { source: from.number, sourceNumber: from.number, sourceUuid: from.uuid, sourceName: from.name, sourceDevice: 1, timestamp, serverReceivedTimestamp: timestamp, serverDeliveredTimestamp: timestamp, typingMessage: { action: "STARTED", timestamp } }, account })}\n\n`;
      for (const s of streams) if (!s.deaf) s.res.write(frame);
    },
    /** The same event written again (a duplicate delivery). */
    deliverAgain(timestamp: number): void {
      const envelope = written.find((e) => e.timestamp === timestamp);
      if (!envelope) throw new Error(`no message ${timestamp}`);
      deliver(envelope);
    },
    /** The next `count` sends fail with a rate limit (a proof-required one with `token`). */
    rateLimit(count: number, retryAfterSeconds: number, token?: string): void {
      limited = { count, retryAfterSeconds, ...(token ? { token } : {}) };
    },
    /** The next `count` calls of `method` are held unanswered until `release` (a call under way when a test kills the daemon). */
    stall(method: string, count = 1) {
      const stall = { left: count, arrived: 0, held: [] as (() => void)[] };
      stalls.set(method, stall);
      return {
        arrived: () => stall.arrived,
        release: () => {
          stall.left = 0;
          for (const answer of stall.held.splice(0)) answer();
        },
      };
    },
    /** Every open event stream is cut (what was written stays written). */
    dropStreams(): void {
      for (const s of streams) s.res.destroy();
      streams.clear();
    },
    /** Open streams stay open but get nothing more, not even keep-alives; a new stream works (messages wait for it). */
    silence(): void {
      for (const s of streams) s.deaf = true;
    },
    /** Event streams open now (not deaf). */
    liveStreams: () => [...streams].filter((s) => !s.deaf && !s.res.destroyed).length,
    /** Event streams opened so far. */
    streamsOpened: () => streamsOpened,
    /** The most event streams open at one time. */
    mostStreamsAtOnce: () => mostStreamsAtOnce,
    /** Messages waiting on the server for a client. */
    waitingCount: () => waiting.length,
    sent: (chatId?: string) => sent.filter((s) => chatId === undefined || s.chatId === chatId),
    reactionOn: (chatId: string, timestamp: number, author: string) => reactions.get(`${chatId}|${timestamp}:${author}`),
    calls: (method?: string) => calls.filter((c) => method === undefined || c.method === method),
    close: () => {
      for (const s of streams) s.res.destroy();
      return listening.close();
    },
  };
}
