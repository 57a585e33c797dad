/**
 * A local stand-in for Telegram's Bot API, over real HTTP, for grammY's real
 * client (`apiRoot`). It keeps Telegram's `getUpdates` semantics (updates
 * below the offset are confirmed and gone; a long poll wakes on a new update;
 * an overlapping second poll ends the held one with 409, an active webhook
 * gets 409), logs every call with its connection, checks HTML entities as
 * Telegram does, serves files, and lets tests inject 429s.
 *
 * `editMessageText` edits the bot's own messages as Telegram does: the same
 * content again is a 400 "message is not modified", an unknown id a 400
 * "message to edit not found", someone else's message a 400 "message can't be
 * edited", and (with `editIntervalMs`) edits in one chat closer together than
 * that get a 429 with `retry_after`. Every message's history (send, then each
 * edit, with times) is kept for tests.
 *
 * `sendPhoto`, `sendDocument` and `sendVoice` take multipart uploads (grammY's
 * `attach://` fields) within the Bot API's limits (photos 10 MB and only
 * images, other files 50 MB) and keep what was sent.
 *
 * `setMessageReaction` keeps Telegram's rules for bots: one reaction per
 * message (setting one replaces the last, an empty list removes it), only
 * emoji from the Bot API's list (anything else is a 400 REACTION_INVALID), on
 * a message that exists. The bot's current reaction per message is kept, and
 * every change in order.
 *
 * Forum supergroups (`createTopic` makes a group one, `is_forum` on its chat)
 * keep the Bot API's topic rules: a topic's id is the id of the service
 * message that opened it; a message in a topic carries `message_thread_id`
 * and `is_topic_message`, and, when it quotes nothing, that service message
 * as its `reply_to_message`; a message in General carries neither. A send
 * (sendMessage, sendPhoto/Document/Voice, sendChatAction) naming
 * `message_thread_id` 1 (General) or a topic the chat does not have is a 400
 * "message thread not found"; one naming no thread lands in the topic of the
 * message it quotes, else in General (tdlib/telegram-bot-api#798, #356).
 */
/*
 * Inline keyboards and callback queries, as the Bot API documents them: each
 * button's `callback_data` is 1-64 bytes (else 400 BUTTON_DATA_INVALID); a
 * tap (`tap`) is a `callback_query` update, delivered only when the bot's
 * `allowed_updates` includes it (the list given to getUpdates or setWebhook
 * persists until changed); each query is answered once with
 * `answerCallbackQuery` (a second answer, or an unknown id, is a 400 "query is
 * too old"); an `editMessageText` without `reply_markup` removes the
 * keyboard; a tap on a keyboard already removed still arrives.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { multipartParts } from "../helpers/multipart.js";
import { waitUntil } from "../helpers/wait.js";
import { CallLog, type PlatformCall } from "./call-log.js";

/** The Bot API's list of reactions a bot may set (ReactionTypeEmoji), copied here so the fake does not trust the adapter's own list. */
const TELEGRAM_BOT_REACTIONS = new Set(
  "👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 ❤‍🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨‍💻 👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾 🤷‍♂ 🤷 🤷‍♀ 😡".split(
    " ",
  ),
);

export interface FakeBotUser {
  id: number;
  username: string;
  first_name: string;
}

export interface SentMessage {
  chat_id: string;
  text: string;
  /** The inline keyboard sent with it (`reply_markup.inline_keyboard`). */
  keyboard?: { text: string; callback_data: string }[][];
  parse_mode?: string;
  message_id: number;
  reply_to?: number;
  /** Sent with `disable_notification` (silently). */
  silent?: boolean;
  /** The forum topic it landed in (undefined: General, or a chat without topics). */
  thread?: number;
  /** The `message_thread_id` the bot named (it may land in a topic without: by quoting a message there). */
  message_thread_id?: number;
}

/** A file the bot sent, as the chat shows it. */
export interface SentFile {
  chat_id: string;
  method: "sendPhoto" | "sendDocument" | "sendVoice";
  message_id: number;
  file_name: string;
  data: Buffer;
  reply_to?: number;
  caption?: string;
  /** The forum topic it landed in (undefined: General, or a chat without topics). */
  thread?: number;
  /** The `message_thread_id` the bot named (it may land in a topic without: by quoting a message there). */
  message_thread_id?: number;
}

export interface FakeUser {
  id: number;
  username?: string;
}

/** One version of a bot message: as sent, then after each edit. */
export interface MessageVersion {
  text: string;
  parse_mode?: string;
  /** The fake's clock (`now`) when it was accepted. */
  at: number;
}

/** A bot message as the chat shows it now. */
export interface ShownMessage {
  chat_id: string;
  message_id: number;
  text: string;
  /** The inline keyboard it shows now (absent: none, or removed by an edit). */
  keyboard?: { text: string; callback_data: string }[][];
  parse_mode?: string;
  /** Send first, then every accepted edit. */
  versions: MessageVersion[];
}

type Json = Record<string, unknown>;

export interface FakeTelegram {
  /** Use as grammY's `apiRoot`. */
  url: string;
  bot: FakeBotUser;
  /** Queues an update (its id is assigned); returns the id. */
  pushUpdate(update: Json): number;
  privateText(user: FakeUser, text: string): number;
  /**
   * A supergroup (or basic group) message. `mention` prefixes `@bot` with a
   * mention entity; `textMention` marks the first word as a text mention of the
   * bot (people without usernames are mentioned so); `replyToBot` replies to one
   * of the bot's messages.
   */
  groupText(
    chatId: number,
    user: FakeUser,
    text: string,
    extra?: { mention?: boolean; textMention?: boolean; replyToBot?: boolean; basicGroup?: boolean; topic?: number },
  ): number;
  /**
   * Opens a forum topic in a supergroup (making it a forum, `is_forum`), as
   * `by` (default the bot); returns its id, the id of the service message
   * that opened it. `groupText(..., { topic })` then writes in it.
   */
  createTopic(chatId: number, name: string, by?: FakeUser): number;
  /** A private voice note (Bot API `Voice`: Ogg/Opus, its length in seconds); its bytes are served through getFile and /file/. */
  voice(user: FakeUser, content: Buffer, duration: number): number;
  /** A private document; its bytes are served through getFile and /file/. */
  document(user: FakeUser, fileName: string, content: Buffer, caption?: string): number;
  /** A private photo in several sizes, smallest first as Telegram lists them; `sizes[i]` is each size's bytes. */
  photo(user: FakeUser, sizes: Buffer[], caption?: string): number;
  /** A channel post (bots must ignore these). */
  channelPost(chatId: number, text: string): number;
  /** The next `times` calls of `method` answer 429 with `retry_after`. */
  inject429(method: string, retryAfterSeconds: number, times: number): void;
  /** The next `times` HTML sends are refused as Telegram refuses bad entities. */
  rejectHtml(times: number): void;
  /**
   * The next `times` calls of `method` answer `status` with this body as is
   * (a Telegram error object, or what a proxy in front says: HTML, other JSON).
   */
  injectError(method: string, status: number, body: string | Json, times: number): void;
  /** A tap by `user` on a button of the bot's message (its `callback_data`); returns the callback query's id. */
  tap(chatId: string | number, messageId: number, user: FakeUser, data: string, extra?: { group?: boolean }): string;
  /** Every accepted `answerCallbackQuery`, in order. */
  callbackAnswers: { id: string; text?: string }[];
  /** The update types the bot asked for (getUpdates / setWebhook `allowed_updates`); undefined: never said. */
  allowedUpdates: string[] | undefined;
  /** Answer getUpdates at once even when empty, as some Bot API servers do (never hold a long poll). */
  holdPolls: boolean;
  /** Every Bot API call with its time and HTTP connection (`tcp-N`), oldest first. */
  platformCalls(): PlatformCall[];
  /** Called on every Bot API call as it arrives (method name). */
  onCall?: (method: string) => void;
  /** Called with every message the bot sends, once it is recorded. */
  onSent?: (message: SentMessage) => void;
  sentMessages(chatId?: string | number): SentMessage[];
  chatActions: { chat_id: string; action: string; thread?: number }[];
  commands: unknown[];
  /** What setWebhook was last told, until deleteWebhook. */
  webhook: { url: string; secret_token?: string } | undefined;
  /** Offsets grammY asked getUpdates for, in order. */
  offsets: (number | undefined)[];
  /** How often each method was called (429s included); `downloads` counts /file/ fetches. */
  calls(method: string): number;
  downloads: number;
  /** Updates still held (not confirmed by an offset). */
  pending(): number;
  /** Long polls currently held open. */
  openPolls(): number;
  /** The bot's messages in a chat as they look now (after edits), oldest first. */
  shownMessages(chatId: string | number): ShownMessage[];
  /** Every accepted edit, in order. */
  edits: { chat_id: string; message_id: number; text: string; parse_mode?: string; at: number }[];
  /** The next `times` calls of `method` are taken in and never answered nor recorded; `arrived()` counts them. */
  stall(method: string, times: number): { arrived(): number };
  /** Files the bot sent (sendPhoto, sendDocument, sendVoice), in order. */
  sentFiles(chatId?: string | number): SentFile[];
  /** The bot's reaction on a message now (undefined: none). */
  reactionOn(chatId: string | number, messageId: number): string | undefined;
  /** Every accepted reaction change, in order ("" = removed). */
  reactionLog: { chat_id: string; message_id: number; emoji: string }[];
  /** Edits in one chat closer together than this answer 429 with `retry_after` (0: no limit). */
  setEditInterval(ms: number): void;
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

export async function createFakeTelegram(options: {
  token: string;
  botUser?: FakeBotUser;
  bot?: FakeBotUser;
  port?: number;
  /** Edits in one chat closer together than this get 429 (default 0: no limit; Telegram allows about one a second). */
  editIntervalMs?: number;
  /** Clock for edit timing and history (default `Date.now`). */
  now?: () => number;
}): Promise<FakeTelegram> {
  const now = options.now ?? (() => Date.now());
  let editIntervalMs = options.editIntervalMs ?? 0;
  /** `${chat}:${message}` -> the bot's message. */
  const shown = new Map<string, ShownMessage>();
  const lastEditAt = new Map<string, number>();
  /** Telegram compares the resulting content: tag aliases and entity spellings do not count as changes. */
  const contentKey = (text: string, parseMode: string | undefined): string =>
    parseMode === "HTML"
      ? text
          .replace(/<(\/?)(strong)\b/gi, "<$1b")
          .replace(/<(\/?)(em)\b/gi, "<$1i")
          .replace(/<(\/?)(ins)\b/gi, "<$1u")
          .replace(/<(\/?)(strike|del)\b/gi, "<$1s")
          .replace(/&quot;/g, '"')
          .replace(/&#39;/g, "'")
      : `${parseMode ?? ""}\u0000${text}`;
  const bot = options.botUser ?? options.bot ?? { id: 999000, username: "agent_bridge_bot", first_name: "Agent" };
  const updates: Json[] = [];
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  const reactions = new Map<string, string>();
  const sentFiles: SentFile[] = [];
  const stalls = new Map<string, { times: number; arrived: number }>();
  let nextFileId = 1;
  const sent: SentMessage[] = [];
  const chatTypes = new Map<string, string>();
  const callCounts = new Map<string, number>();
  const files = new Map<string, { path: string; content: Buffer }>();
  const faults = new Map<string, { retryAfter: number; times: number }>();
  const rawFaults = new Map<string, { status: number; body: string | Json; times: number }>();
  let wake: (() => void)[] = [];
  /** The long poll being held, if any: a newer one ends it with 409 as Telegram does. */
  let heldPoll: { conflict: () => void } | undefined;
  let htmlRejections = 0;
  const callLog = new CallLog(now);
  /** Forum supergroups -> their topics: topic id -> the service message that opened it. */
  const forums = new Map<string, Map<number, Json>>();
  /** `${chat}:${message}` -> the forum topic the message is in (absent: General or no topics). */
  const threadOfMessage = new Map<string, number>();
  const GENERAL_TOPIC = 1;
  const groupChat = (chatId: number, basic = false) => ({
    id: chatId,
    type: basic ? "group" : "supergroup",
    title: "group",
    ...(forums.has(String(chatId)) ? { is_forum: true } : {}),
  });
  /**
   * Where a send lands, or the Bot API's refusal: a named thread must be a
   * topic of this forum (never General's 1); no thread follows the quoted message.
   */
  const landing = (chatId: string, params: Record<string, unknown>): { thread?: number } | { refused: string } => {
    const named = params.message_thread_id === undefined ? undefined : Number(params.message_thread_id);
    if (named !== undefined) {
      if (named === GENERAL_TOPIC || !forums.get(chatId)?.has(named)) return { refused: "Bad Request: message thread not found" };
      return { thread: named };
    }
    const quoted = (params.reply_parameters as Json | undefined)?.message_id;
    const thread = quoted === undefined ? undefined : threadOfMessage.get(`${chatId}:${Number(quoted)}`);
    return thread === undefined ? {} : { thread };
  };

  const message = (chat: Json, from: FakeUser, text: string, extra: Json = {}) => {
    chatTypes.set(String(chat.id), String(chat.type));
    // Telegram marks a leading command (`/new` or `/new@bot`) with a bot_command entity.
    const command = /^\/\w+(@\w+)?/.exec(text);
    return {
      message_id: nextMessageId++,
      date: Math.floor(Date.now() / 1000),
      chat,
      from: { is_bot: false, first_name: from.username ?? "user", ...from },
      text,
      ...(command ? { entities: [{ type: "bot_command", offset: 0, length: command[0].length }] } : {}),
      ...extra,
    };
  };
  const addFile = (name: string, content: Buffer) => {
    const fileId = `file_${nextFileId++}`;
    files.set(fileId, { path: `documents/${fileId}_${name}`, content });
    return fileId;
  };
  const privateChat = (user: FakeUser) => ({ id: user.id, type: "private", first_name: user.username ?? "user" });
  /** A media message carries a caption, not text. */
  const media = (user: FakeUser, caption: string | undefined, extra: Json) => {
    const { text: _text, ...rest } = message(privateChat(user), user, "");
    return { ...rest, ...(caption !== undefined ? { caption } : {}), ...extra };
  };

  /** Callback queries by id: answered or not. */
  const queries = new Map<string, { answered: boolean }>();
  let nextQueryId = 5_000_000;
  /** Telegram's default when a bot never said: every update type but chat_member and reactions. */
  const delivered = (u: Json): boolean => {
    const type = Object.keys(u).find((k) => k !== "update_id");
    const allowed = fake.allowedUpdates;
    return allowed === undefined || allowed.length === 0 ? true : type !== undefined && allowed.includes(type);
  };
  const keyboardOf = (markup: unknown): { keyboard?: { text: string; callback_data: string }[][]; refused?: string } => {
    const parsed = typeof markup === "string" ? safeJson(markup) : markup;
    const rows = (parsed as Json | undefined)?.inline_keyboard;
    if (!Array.isArray(rows)) return {};
    const keyboard: { text: string; callback_data: string }[][] = [];
    for (const row of rows) {
      if (!Array.isArray(row)) return { refused: 'Bad Request: field "inline_keyboard" must be an Array of Array' };
      const out: { text: string; callback_data: string }[] = [];
      for (const b of row as Json[]) {
        const data = String(b.callback_data ?? "");
        if (!String(b.text ?? "").trim()) return { refused: "Bad Request: text buttons are unallowed in the inline keyboard" };
        if (Buffer.byteLength(data) < 1 || Buffer.byteLength(data) > 64) return { refused: "Bad Request: BUTTON_DATA_INVALID" };
        out.push({ text: String(b.text), callback_data: data });
      }
      keyboard.push(out);
    }
    return { keyboard };
  };

  const fake: FakeTelegram = {
    url: "",
    bot,
    tap(chatId, messageId, user, data, extra = {}) {
      const id = String(nextQueryId++);
      queries.set(id, { answered: false });
      const shownNow = shown.get(`${chatId}:${messageId}`);
      const chat = extra.group ? groupChat(Number(chatId)) : privateChat(user);
      const from = { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username };
      fake.pushUpdate({
        callback_query: {
          id,
          from: { is_bot: false, first_name: user.username ?? "user", ...user },
          message: {
            message_id: messageId,
            date: Math.floor(Date.now() / 1000),
            chat,
            from,
            text: shownNow?.text ?? "",
            ...(shownNow?.keyboard ? { reply_markup: { inline_keyboard: shownNow.keyboard } } : {}),
          },
          chat_instance: `ci${chatId}`,
          data,
        },
      });
      return id;
    },
    callbackAnswers: [],
    allowedUpdates: undefined,
    pushUpdate(update) {
      const id = nextUpdateId++;
      updates.push({ update_id: id, ...update });
      for (const w of wake.splice(0)) w();
      return id;
    },
    privateText(user, text) {
      return fake.pushUpdate({ message: message(privateChat(user), user, text) });
    },
    createTopic(chatId, name, by) {
      const key = String(chatId);
      if (!forums.has(key)) forums.set(key, new Map());
      const opener = by
        ? { is_bot: false, first_name: by.username ?? "user", ...by }
        : { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username };
      // In a forum the General topic holds id 1 from the start: a topic opened later has a higher one.
      nextMessageId = Math.max(nextMessageId, GENERAL_TOPIC + 1);
      const id = nextMessageId++;
      const opened: Json = {
        message_id: id,
        message_thread_id: id,
        date: Math.floor(Date.now() / 1000),
        chat: groupChat(chatId),
        from: opener,
        forum_topic_created: { name, icon_color: 0x6fb9f0 },
        is_topic_message: true,
      };
      forums.get(key)!.set(id, opened);
      threadOfMessage.set(`${key}:${id}`, id);
      chatTypes.set(key, "supergroup");
      return id;
    },
    groupText(chatId, user, text, extra = {}) {
      let body = text;
      const msgExtra: Json = {};
      const chat = groupChat(chatId, extra.basicGroup);
      if (extra.topic !== undefined) {
        const opened = forums.get(String(chatId))?.get(extra.topic);
        if (!opened) throw new Error(`the fake has no topic ${extra.topic} in ${chatId}: createTopic first`);
        // A message that quotes nothing carries the topic's opening as its reply_to_message.
        Object.assign(msgExtra, { message_thread_id: extra.topic, is_topic_message: true, reply_to_message: opened });
      }
      if (extra.mention) {
        body = `@${bot.username} ${text}`;
        msgExtra.entities = [{ type: "mention", offset: 0, length: bot.username.length + 1 }];
      } else if (extra.textMention) {
        const word = /^\S+/.exec(text)?.[0] ?? text;
        msgExtra.entities = [{ type: "text_mention", offset: 0, length: word.length, user: { id: bot.id, is_bot: true, first_name: bot.first_name } }];
      }
      if (extra.replyToBot) {
        msgExtra.reply_to_message = {
          ...(extra.topic !== undefined ? { message_thread_id: extra.topic, is_topic_message: true } : {}),
          message_id: 1,
          date: 0,
          chat,
          from: { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username },
          text: "earlier",
        };
      }
      const sentIn = message(chat, user, body, msgExtra);
      if (extra.topic !== undefined) threadOfMessage.set(`${chatId}:${sentIn.message_id}`, extra.topic);
      return fake.pushUpdate({ message: sentIn });
    },
    voice(user, content, duration) {
      const fileId = addFile("voice.oga", content);
      return fake.pushUpdate({
        message: media(user, undefined, {
          voice: { file_id: fileId, file_unique_id: `u${fileId}`, duration, mime_type: "audio/ogg", file_size: content.length },
        }),
      });
    },
    document(user, fileName, content, caption) {
      const fileId = addFile(fileName, content);
      return fake.pushUpdate({
        message: media(user, caption, {
          document: { file_id: fileId, file_unique_id: `u${fileId}`, file_name: fileName, file_size: content.length, mime_type: "text/plain" },
        }),
      });
    },
    photo(user, sizes, caption) {
      const photo = sizes.map((content, i) => {
        const fileId = addFile(`photo_${i}.jpg`, content);
        const side = 90 * 2 ** i;
        return { file_id: fileId, file_unique_id: `u${fileId}`, width: side, height: side, file_size: content.length };
      });
      return fake.pushUpdate({ message: media(user, caption, { photo }) });
    },
    channelPost(chatId, text) {
      return fake.pushUpdate({
        channel_post: { message_id: nextMessageId++, date: Math.floor(Date.now() / 1000), chat: { id: chatId, type: "channel", title: "news" }, text },
      });
    },
    inject429(method, retryAfter, times) {
      faults.set(method, { retryAfter, times });
    },
    rejectHtml(times) {
      htmlRejections = times;
    },
    injectError(method, status, body, times) {
      rawFaults.set(method, { status, body, times });
    },
    holdPolls: true,
    platformCalls: () => callLog.list(),
    sentMessages: (chatId) => (chatId === undefined ? [...sent] : sent.filter((m) => m.chat_id === String(chatId))),
    chatActions: [],
    stall(method, times) {
      const stall = { times, arrived: 0 };
      stalls.set(method, stall);
      return { arrived: () => stall.arrived };
    },
    sentFiles: (chatId) => (chatId === undefined ? [...sentFiles] : sentFiles.filter((f) => f.chat_id === String(chatId))),
    reactionOn: (chatId, messageId) => reactions.get(`${chatId}:${messageId}`),
    reactionLog: [],
    commands: [],
    webhook: undefined,
    offsets: [],
    calls: (method) => callCounts.get(method) ?? 0,
    downloads: 0,
    pending: () => updates.length,
    openPolls: () => (heldPoll ? 1 : 0),
    shownMessages: (chatId) => [...shown.values()].filter((m) => m.chat_id === String(chatId)).map((m) => ({ ...m, versions: [...m.versions] })),
    edits: [],
    setEditInterval(ms) {
      editIntervalMs = ms;
    },
    waitFor: (probe, timeoutMs = 10_000) => waitUntil(probe, "the fake Telegram condition", timeoutMs),
    close: async () => {},
  };

  const ok = (res: ServerResponse, result: unknown) => json(res, 200, { ok: true, result });
  const fail = (res: ServerResponse, code: number, description: string, parameters?: Json) =>
    json(res, code, { ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) });

  /** Holds a getUpdates until an update arrives, the timeout passes, the client goes away or a newer poll takes over. */
  function holdPoll(res: ServerResponse, timeoutSeconds: number): Promise<"ready" | "conflict"> {
    return new Promise((resolve) => {
      const finish = (why: "ready" | "conflict") => {
        clearTimeout(timer);
        wake = wake.filter((w) => w !== onWake);
        if (heldPoll === me) heldPoll = undefined;
        resolve(why);
      };
      const onWake = () => finish("ready");
      const me = { conflict: () => finish("conflict") };
      heldPoll = me;
      const timer = setTimeout(() => finish("ready"), timeoutSeconds * 1000);
      wake.push(onWake);
      res.once("close", () => finish("ready"));
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (fileMatch) {
      fake.downloads++;
      const path = decodeURIComponent(fileMatch[2]!);
      const file = [...files.values()].find((f) => f.path === path);
      if (fileMatch[1] !== options.token) return fail(res, 401, "Unauthorized");
      if (!file) return fail(res, 404, "Not Found");
      res.writeHead(200, { "content-length": file.content.length, "content-type": "application/octet-stream" });
      return void res.end(file.content);
    }
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!match) return fail(res, 404, "Not Found");
    if (match[1] !== options.token) return fail(res, 401, "Unauthorized");
    const method = match[2]!;
    callCounts.set(method, (callCounts.get(method) ?? 0) + 1);
    callLog.record(callLog.name(req.socket, "tcp"), method);
    fake.onCall?.(method);
    const params = await readParams(req);
    const stall = stalls.get(method);
    if (stall && stall.times > 0) {
      // Taken in, never answered nor recorded: Telegram did not get to it (the bot dies waiting, in kill tests).
      stall.times--;
      stall.arrived++;
      return;
    }
    const raw = rawFaults.get(method);
    if (raw && raw.times > 0) {
      raw.times--;
      if (typeof raw.body === "string") {
        res.writeHead(raw.status, { "content-type": "text/html" });
        return void res.end(raw.body);
      }
      return json(res, raw.status, raw.body);
    }
    const fault = faults.get(method);
    if (fault && fault.times > 0) {
      fault.times--;
      return fail(res, 429, `Too Many Requests: retry after ${fault.retryAfter}`, { retry_after: fault.retryAfter });
    }
    switch (method) {
      case "getMe":
        return ok(res, { ...bot, is_bot: true, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false });
      case "setWebhook":
        if (Array.isArray(params.allowed_updates)) fake.allowedUpdates = params.allowed_updates.map(String);
        fake.webhook = { url: String(params.url), ...(params.secret_token ? { secret_token: String(params.secret_token) } : {}) };
        return ok(res, true);
      case "deleteWebhook":
        fake.webhook = undefined;
        return ok(res, true);
      case "close":
        return ok(res, true);
      case "setMyCommands":
        fake.commands.push(params.commands);
        return ok(res, true);
      case "getUpdates": {
        if (fake.webhook) return fail(res, 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
        // Telegram's one-poller rule: a getUpdates ends the one still held (from this or another
        // process) with 409 "terminated by other getUpdates request"; grammY's bot.start() rethrows
        // that 409 and stops polling (grammy out/bot.js, "rethrow upon unauthorized or conflict").
        heldPoll?.conflict();
        if (Array.isArray(params.allowed_updates)) fake.allowedUpdates = params.allowed_updates.map(String);
        const offset = params.offset === undefined ? undefined : Number(params.offset);
        fake.offsets.push(offset);
        // Update types the bot did not ask for are never delivered.
        for (let i = updates.length - 1; i >= 0; i--) if (!delivered(updates[i]!)) updates.splice(i, 1);
        if (offset !== undefined) while (updates.length && Number(updates[0]!.update_id) < offset) updates.shift();
        const timeout = Number(params.timeout ?? 0);
        if (!updates.length && timeout > 0 && fake.holdPolls && (await holdPoll(res, timeout)) === "conflict") {
          return fail(res, 409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running");
        }
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
        if (visible.length > 4096) return fail(res, 400, "Bad Request: message is too long");
        const chatId = String(params.chat_id);
        const reply = (params.reply_parameters as Json | undefined)?.message_id;
        const landed = landing(chatId, params);
        if ("refused" in landed) return fail(res, 400, landed.refused);
        const markup = keyboardOf(params.reply_markup);
        if (markup.refused) return fail(res, 400, markup.refused);
        const record: SentMessage = {
          chat_id: chatId,
          text,
          ...(markup.keyboard ? { keyboard: markup.keyboard } : {}),
          message_id: nextMessageId++,
          ...(typeof params.parse_mode === "string" ? { parse_mode: params.parse_mode } : {}),
          ...(reply !== undefined ? { reply_to: Number(reply) } : {}),
          ...(params.disable_notification === true ? { silent: true } : {}),
          ...landed,
          ...(params.message_thread_id !== undefined ? { message_thread_id: Number(params.message_thread_id) } : {}),
        };
        if (landed.thread !== undefined) threadOfMessage.set(`${chatId}:${record.message_id}`, landed.thread);
        sent.push(record);
        fake.onSent?.(record);
        shown.set(`${chatId}:${record.message_id}`, {
          chat_id: chatId,
          message_id: record.message_id,
          text,
          ...(record.parse_mode ? { parse_mode: record.parse_mode } : {}),
          ...(markup.keyboard ? { keyboard: markup.keyboard } : {}),
          versions: [{ text, ...(record.parse_mode ? { parse_mode: record.parse_mode } : {}), at: now() }],
        });
        const from = { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username };
        return ok(res, {
          message_id: record.message_id,
          date: Math.floor(Date.now() / 1000),
          from,
          chat: { id: Number(chatId), type: chatTypes.get(chatId) ?? "private" },
          ...(landed.thread !== undefined ? { message_thread_id: landed.thread, is_topic_message: true } : {}),
          text: visible,
        });
      }
      case "editMessageText": {
        const chatId = String(params.chat_id ?? "");
        const messageId = Number(params.message_id);
        const text = String(params.text ?? "");
        const parseMode = typeof params.parse_mode === "string" ? params.parse_mode : undefined;
        if (!chatId || !Number.isInteger(messageId)) return fail(res, 400, "Bad Request: message identifier is not specified");
        let visible = text;
        if (parseMode === "HTML") {
          try {
            visible = parseTelegramHtml(text);
          } catch (error) {
            return fail(res, 400, `Bad Request: can't parse entities: ${(error as Error).message}`);
          }
        }
        if (!visible.trim()) return fail(res, 400, "Bad Request: message text is empty");
        if (visible.length > 4096) return fail(res, 400, "Bad Request: message is too long");
        const target = shown.get(`${chatId}:${messageId}`);
        if (!target) {
          // A message id that exists but is not the bot's (a user's message) cannot be edited.
          return fail(res, 400, messageId > 0 && messageId < nextMessageId ? "Bad Request: message can't be edited" : "Bad Request: message to edit not found");
        }
        const newMarkup = keyboardOf(params.reply_markup);
        if (newMarkup.refused) return fail(res, 400, newMarkup.refused);
        const sameMarkup = JSON.stringify(newMarkup.keyboard) === JSON.stringify(target.keyboard);
        if (contentKey(text, parseMode) === contentKey(target.text, target.parse_mode) && sameMarkup) {
          return fail(
            res,
            400,
            "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
          );
        }
        const at = now();
        const last = lastEditAt.get(chatId);
        if (editIntervalMs > 0 && last !== undefined && at - last < editIntervalMs) {
          const retryAfter = Math.max(1, Math.ceil((last + editIntervalMs - at) / 1000));
          return fail(res, 429, `Too Many Requests: retry after ${retryAfter}`, { retry_after: retryAfter });
        }
        lastEditAt.set(chatId, at);
        target.text = text;
        // An edit that does not repeat the keyboard removes it.
        if (newMarkup.keyboard) target.keyboard = newMarkup.keyboard;
        else delete target.keyboard;
        if (parseMode) target.parse_mode = parseMode;
        else delete target.parse_mode;
        target.versions.push({ text, ...(parseMode ? { parse_mode: parseMode } : {}), at });
        fake.edits.push({ chat_id: chatId, message_id: messageId, text, ...(parseMode ? { parse_mode: parseMode } : {}), at });
        const from = { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username };
        return ok(res, {
          message_id: messageId,
          date: Math.floor(target.versions[0]!.at / 1000),
          edit_date: Math.floor(at / 1000),
          from,
          chat: { id: Number(chatId), type: chatTypes.get(chatId) ?? "private" },
          text: visible,
        });
      }
      case "sendPhoto":
      case "sendDocument":
      case "sendVoice": {
        const field = { sendPhoto: "photo", sendDocument: "document", sendVoice: "voice" }[method];
        const file = params[field] as UploadedFile | undefined;
        if (!file || typeof file !== "object" || !Buffer.isBuffer(file.data)) return fail(res, 400, `Bad Request: there is no ${field} in the request`);
        // The Bot API's upload limits: photos 10 MB, other files 50 MB.
        if (file.size > 50_000_000) return fail(res, 413, "Request Entity Too Large");
        if (method === "sendPhoto" && file.size > 10_000_000) return fail(res, 400, "Bad Request: PHOTO_INVALID_DIMENSIONS");
        if (method === "sendPhoto" && !isImage(file.data)) return fail(res, 400, "Bad Request: IMAGE_PROCESS_FAILED");
        const chatId = String(params.chat_id);
        const reply = (params.reply_parameters as Json | undefined)?.message_id;
        const landed = landing(chatId, params);
        if ("refused" in landed) return fail(res, 400, landed.refused);
        const record: SentFile = {
          chat_id: chatId,
          method: method as SentFile["method"],
          message_id: nextMessageId++,
          file_name: file.name,
          data: file.data,
          ...(reply !== undefined ? { reply_to: Number(reply) } : {}),
          ...(typeof params.caption === "string" ? { caption: params.caption } : {}),
          ...landed,
          ...(params.message_thread_id !== undefined ? { message_thread_id: Number(params.message_thread_id) } : {}),
        };
        if (landed.thread !== undefined) threadOfMessage.set(`${chatId}:${record.message_id}`, landed.thread);
        sentFiles.push(record);
        const from = { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username };
        return ok(res, {
          message_id: record.message_id,
          date: Math.floor(Date.now() / 1000),
          from,
          chat: { id: Number(chatId), type: chatTypes.get(chatId) ?? "private" },
        });
      }
      case "answerCallbackQuery": {
        const id = String(params.callback_query_id ?? "");
        const query = queries.get(id);
        if (!query || query.answered) return fail(res, 400, "Bad Request: query is too old and response timeout expired or query ID is invalid");
        query.answered = true;
        fake.callbackAnswers.push({ id, ...(typeof params.text === "string" ? { text: params.text } : {}) });
        return ok(res, true);
      }
      case "setMessageReaction": {
        const chatId = String(params.chat_id ?? "");
        const messageId = Number(params.message_id);
        if (!chatId || !Number.isInteger(messageId) || messageId <= 0 || messageId >= nextMessageId)
          return fail(res, 400, "Bad Request: message to react not found");
        const list = Array.isArray(params.reaction) ? (params.reaction as Json[]) : [];
        if (list.length > 1) return fail(res, 400, "Bad Request: REACTIONS_TOO_MANY");
        const emoji = list[0] === undefined ? "" : String(list[0].emoji ?? "");
        if (list[0] !== undefined && (list[0].type !== "emoji" || !TELEGRAM_BOT_REACTIONS.has(emoji))) return fail(res, 400, "Bad Request: REACTION_INVALID");
        if (emoji) reactions.set(`${chatId}:${messageId}`, emoji);
        else reactions.delete(`${chatId}:${messageId}`);
        fake.reactionLog.push({ chat_id: chatId, message_id: messageId, emoji });
        return ok(res, true);
      }
      case "sendChatAction": {
        // An action quotes nothing: without a thread id it shows in General.
        const landed = landing(String(params.chat_id), { message_thread_id: params.message_thread_id });
        if ("refused" in landed) return fail(res, 400, landed.refused);
        fake.chatActions.push({ chat_id: String(params.chat_id), action: String(params.action), ...landed });
        return ok(res, true);
      }
      case "getFile": {
        const file = files.get(String(params.file_id));
        if (!file) return fail(res, 400, "Bad Request: invalid file_id");
        return ok(res, { file_id: params.file_id, file_unique_id: `u${String(params.file_id)}`, file_size: file.content.length, file_path: file.path });
      }
      default:
        return fail(res, 404, "Not Found");
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => fail(res, 500, String(error)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", resolve);
  });
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
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** grammY sends JSON, or multipart when uploading; form bodies and query strings are read too. */
/** A file uploaded in a multipart request. */
export interface UploadedFile {
  name: string;
  size: number;
  data: Buffer;
}

async function readParams(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  const type = req.headers["content-type"] ?? "";
  const fromQuery = Object.fromEntries(new URL(req.url ?? "/", "http://x").searchParams);
  if (!text) return fromQuery;
  if (type.includes("application/json")) return { ...fromQuery, ...(JSON.parse(text) as Record<string, unknown>) };
  if (type.includes("multipart/form-data")) {
    // grammY uploads files as multipart, each named by an `attach://<field>` value.
    const fields: Record<string, unknown> = {};
    const uploads = new Map<string, UploadedFile>();
    for (const part of multipartParts(Buffer.concat(chunks), type)) {
      if (part.fileName === undefined) fields[part.name] = /^[[{]/.test(part.data.toString()) ? safeJson(part.data.toString()) : part.data.toString();
      else uploads.set(part.name, { name: part.fileName, size: part.data.length, data: part.data });
    }
    for (const [k, v] of Object.entries(fields)) {
      const ref = typeof v === "string" ? /^attach:\/\/(.+)$/.exec(v)?.[1] : undefined;
      if (ref !== undefined && uploads.has(ref)) fields[k] = uploads.get(ref);
    }
    return { ...fromQuery, ...fields };
  }
  if (type.includes("x-www-form-urlencoded")) {
    // Telegram accepts JSON-serialised values for object parameters in forms.
    const form: Record<string, unknown> = {};
    for (const [k, v] of new URLSearchParams(text)) form[k] = /^[[{]/.test(v) ? safeJson(v) : v;
    return { ...fromQuery, ...form };
  }
  return fromQuery;
}

/** PNG, JPEG, GIF or WebP by their first bytes: Telegram refuses a photo it cannot read as an image. */
function isImage(data: Buffer): boolean {
  const hex = data.subarray(0, 12).toString("hex");
  return hex.startsWith("89504e47") || hex.startsWith("ffd8ff") || hex.startsWith("47494638") || (hex.startsWith("52494646") && hex.endsWith("57454250"));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
