/**
 * A local stand-in for Telegram's Bot API, over real HTTP, for grammY's real
 * client (`apiRoot`). It keeps Telegram's `getUpdates` offset semantics
 * (updates below the offset are confirmed and gone; long polls wake on a new
 * update), checks HTML entities as Telegram does, and lets tests inject 429s.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeBotUser {
  id: number;
  username: string;
  first_name: string;
}

export interface SentMessage {
  chat_id: string;
  text: string;
  parse_mode?: string;
  message_id: number;
  reply_to?: number;
}

type Json = Record<string, unknown>;

export interface FakeTelegram {
  /** Use as grammY's `apiRoot`. */
  url: string;
  bot: FakeBotUser;
  /** Queues an update (its id is assigned); returns the id. */
  pushUpdate(update: Json): number;
  privateText(user: { id: number; username?: string }, text: string): number;
  groupText(chatId: number, user: { id: number; username?: string }, text: string, extra?: { mention?: boolean; replyToBot?: boolean }): number;
  document(user: { id: number }, fileName: string, content: Buffer, caption?: string): number;
  inject429(method: string, retryAfterSeconds: number, times: number): void;
  /** The next `times` HTML sends are refused as Telegram refuses bad entities. */
  rejectHtml(times: number): void;
  sentMessages(chatId?: string | number): SentMessage[];
  chatActions: { chat_id: string; action: string }[];
  commands: unknown[];
  /** What setWebhook was last told, if anything. */
  webhook: { url: string; secret_token?: string } | undefined;
  /** Offsets grammY asked getUpdates for, in order. */
  offsets: (number | undefined)[];
  /** Updates still held (not confirmed by an offset). */
  pending(): number;
  waitFor<T>(probe: () => T | undefined | false, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

const ALLOWED_TAGS = new Set(["b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "code", "pre", "a", "blockquote", "tg-spoiler", "span"]);

/** Telegram's HTML check, in the small: known tags, balanced, entities well formed. Returns the visible text. */
export function parseTelegramHtml(html: string): string {
  const stack: string[] = [];
  let visible = "";
  const re = /<\/?([a-zA-Z-]+)(\s[^>]*)?>|&(#?\w+);|[<>&]|[^<>&]+/g;
  for (const m of html.matchAll(re)) {
    const token = m[0];
    if (m[1]) {
      const tag = m[1].toLowerCase();
      if (!ALLOWED_TAGS.has(tag)) throw new Error(`Unsupported start tag "${tag}"`);
      if (token.startsWith("</")) {
        if (stack.pop() !== tag) throw new Error(`Unmatched end tag "${tag}"`);
      } else stack.push(tag);
    } else if (m[3]) {
      if (!/^(lt|gt|amp|quot|#\d+|#x[0-9a-f]+)$/i.test(m[3])) throw new Error(`Unsupported entity "${m[3]}"`);
      visible += "x";
    } else if (token === "<" || token === ">" || token === "&") {
      throw new Error(`Unexpected "${token}"`);
    } else visible += token;
  }
  if (stack.length) throw new Error(`Unclosed tag "${stack[stack.length - 1]}"`);
  return visible;
}

export async function createFakeTelegram(options: { token: string; bot?: FakeBotUser }): Promise<FakeTelegram> {
  const bot = options.bot ?? { id: 999000, username: "agent_bridge_bot", first_name: "Agent" };
  const updates: Json[] = [];
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  const sent: SentMessage[] = [];
  const chatActions: { chat_id: string; action: string }[] = [];
  const commands: unknown[] = [];
  const offsets: (number | undefined)[] = [];
  const files = new Map<string, { path: string; content: Buffer }>();
  const faults = new Map<string, { retryAfter: number; times: number }>();
  let wake: (() => void)[] = [];
  let htmlRejections = 0;

  const message = (chat: Json, from: Json, text: string, extra: Json = {}) => {
    // Telegram marks a leading command (`/new` or `/new@bot`) with a bot_command entity.
    const command = /^\/\w+(@\w+)?/.exec(text);
    return {
      message_id: nextMessageId++,
      date: Math.floor(Date.now() / 1000),
      chat,
      from: { is_bot: false, first_name: String(from.username ?? "user"), ...from },
      text,
      ...(command ? { entities: [{ type: "bot_command", offset: 0, length: command[0].length }] } : {}),
      ...extra,
    };
  };

  const fake: FakeTelegram = {
    url: "",
    bot,
    pushUpdate(update) {
      const id = nextUpdateId++;
      updates.push({ update_id: id, ...update });
      for (const w of wake.splice(0)) w();
      return id;
    },
    privateText(user, text) {
      return fake.pushUpdate({ message: message({ id: user.id, type: "private" }, user, text) });
    },
    groupText(chatId, user, text, extra = {}) {
      let body = text;
      const msgExtra: Json = {};
      if (extra.mention) {
        body = `@${bot.username} ${text}`;
        msgExtra.entities = [{ type: "mention", offset: 0, length: bot.username.length + 1 }];
      }
      if (extra.replyToBot) msgExtra.reply_to_message = { message_id: 1, date: 0, chat: { id: chatId, type: "supergroup" }, from: { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username }, text: "earlier" };
      return fake.pushUpdate({ message: message({ id: chatId, type: "supergroup", title: "group" }, user, body, msgExtra) });
    },
    document(user, fileName, content, caption) {
      const fileId = `file_${files.size + 1}`;
      files.set(fileId, { path: `documents/${fileId}_${fileName}`, content });
      return fake.pushUpdate({
        message: {
          ...message({ id: user.id, type: "private" }, user, ""),
          text: undefined,
          caption,
          document: { file_id: fileId, file_unique_id: `u${fileId}`, file_name: fileName, file_size: content.length, mime_type: "text/plain" },
        },
      });
    },
    inject429(method, retryAfter, times) {
      faults.set(method, { retryAfter, times });
    },
    rejectHtml(times) {
      htmlRejections = times;
    },
    sentMessages: (chatId) => (chatId === undefined ? [...sent] : sent.filter((m) => m.chat_id === String(chatId))),
    chatActions,
    commands,
    webhook: undefined,
    offsets,
    pending: () => updates.length,
    async waitFor(probe, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = probe();
        if (value !== undefined && value !== false) return value as never;
        if (Date.now() > deadline) throw new Error("waitFor: timed out");
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    close: async () => {},
  };

  const ok = (res: ServerResponse, result: unknown) => json(res, 200, { ok: true, result });
  const fail = (res: ServerResponse, code: number, description: string, parameters?: Json) =>
    json(res, code, { ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (fileMatch) {
      const file = [...files.values()].find((f) => f.path === decodeURIComponent(fileMatch[2]!));
      if (fileMatch[1] !== options.token || !file) return void res.writeHead(404).end();
      res.writeHead(200, { "content-length": file.content.length });
      return void res.end(file.content);
    }
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!match) return fail(res, 404, "Not Found");
    if (match[1] !== options.token) return fail(res, 401, "Unauthorized");
    const method = match[2]!;
    const params = await readParams(req);
    const fault = faults.get(method);
    if (fault && fault.times > 0) {
      fault.times--;
      return fail(res, 429, `Too Many Requests: retry after ${fault.retryAfter}`, { retry_after: fault.retryAfter });
    }
    switch (method) {
      case "getMe":
        return ok(res, { ...bot, is_bot: true, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false });
      case "setWebhook":
        fake.webhook = { url: String(params.url), ...(params.secret_token ? { secret_token: String(params.secret_token) } : {}) };
        return ok(res, true);
      case "deleteWebhook":
      case "close":
        return ok(res, true);
      case "setMyCommands":
        commands.push(params.commands);
        return ok(res, true);
      case "getUpdates": {
        const offset = params.offset === undefined ? undefined : Number(params.offset);
        offsets.push(offset);
        if (offset !== undefined) while (updates.length && Number(updates[0]!.update_id) < offset) updates.shift();
        const timeout = Number(params.timeout ?? 0);
        if (!updates.length && timeout > 0) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, timeout * 1000);
            wake.push(() => {
              clearTimeout(timer);
              resolve();
            });
            req.socket.once("close", () => {
              clearTimeout(timer);
              resolve();
            });
          });
        }
        if (res.destroyed) return;
        return ok(res, updates.slice(0, Number(params.limit ?? 100)));
      }
      case "sendMessage": {
        const text = String(params.text ?? "");
        let visible = text;
        if (params.parse_mode === "HTML") {
          if (htmlRejections > 0) {
            htmlRejections--;
            return fail(res, 400, "Bad Request: can't parse entities: unsupported start tag at byte offset 0");
          }
          try {
            visible = parseTelegramHtml(text);
          } catch (error) {
            return fail(res, 400, `Bad Request: can't parse entities: ${(error as Error).message}`);
          }
        }
        if (!visible.trim()) return fail(res, 400, "Bad Request: message text is empty");
        if ([...visible].length > 4096) return fail(res, 400, "Bad Request: message is too long");
        const reply = (params.reply_parameters as Json | undefined)?.message_id;
        const record: SentMessage = {
          chat_id: String(params.chat_id),
          text,
          message_id: nextMessageId++,
          ...(typeof params.parse_mode === "string" ? { parse_mode: params.parse_mode } : {}),
          ...(reply !== undefined ? { reply_to: Number(reply) } : {}),
        };
        sent.push(record);
        return ok(res, { message_id: record.message_id, date: Math.floor(Date.now() / 1000), chat: { id: Number(params.chat_id), type: "private" }, text });
      }
      case "sendChatAction":
        chatActions.push({ chat_id: String(params.chat_id), action: String(params.action) });
        return ok(res, true);
      case "getFile": {
        const file = files.get(String(params.file_id));
        if (!file) return fail(res, 400, "Bad Request: invalid file_id");
        return ok(res, { file_id: params.file_id, file_unique_id: `u${String(params.file_id)}`, file_size: file.content.length, file_path: file.path });
      }
      default:
        return fail(res, 404, `Not Found: method ${method}`);
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => fail(res, 500, String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      for (const w of wake.splice(0)) w();
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return fake;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function readParams(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  const type = req.headers["content-type"] ?? "";
  const fromQuery = Object.fromEntries(new URL(req.url ?? "/", "http://x").searchParams);
  if (!text) return fromQuery;
  if (type.includes("application/json")) return { ...fromQuery, ...(JSON.parse(text) as Record<string, unknown>) };
  if (type.includes("x-www-form-urlencoded")) return { ...fromQuery, ...Object.fromEntries(new URLSearchParams(text)) };
  return fromQuery;
}
