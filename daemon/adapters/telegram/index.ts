/**
 * The Telegram adapter: grammY's `Api` (with `apiRoot`, so a local Bot API
 * server can stand in) behind the `ChatAdapter` interface.
 *
 * Intake is long polling by default: updates are handed to the core
 * concurrently across chats and in order within one chat, and the offset
 * (the last handled update id) is persisted only after the core accepted
 * them, so a restart neither replays nor skips. Webhook mode is optional.
 */
import { createServer, type Server } from "node:http";
import { autoRetry } from "@grammyjs/auto-retry";
import { Api, GrammyError, HttpError } from "grammy";
import type { Message, Update, UserFromGetMe } from "grammy/types";
import type { TelegramChannelConfig } from "../../config/schema.js";
import type { AdapterDeps, ChatAdapter, ChatTarget, InboundAttachment, InboundMessage, InboundSink, SendOptions } from "../../core/adapter.js";
import { groupRequiresMention } from "../../core/access.js";
import { redactSecrets } from "../../ops/logger.js";
import { telegramMarkdownToHtml } from "./markdown.js";

export { telegramMarkdownToHtml } from "./markdown.js";

export const TELEGRAM_LIMITS = { maxMessageLength: 4096, typingRefreshMs: 4500 } as const;
const OFFSET_KEY = "lastUpdateId";
const COMMANDS = [
  { command: "new", description: "Start a fresh conversation" },
  { command: "reset", description: "Forget this conversation" },
  { command: "status", description: "Instance and queue status" },
  { command: "help", description: "What I can do" },
  { command: "whoami", description: "Your ids and session" },
];

export interface TelegramAdapterOptions {
  /** Long-poll timeout in seconds (Telegram's `timeout`); tests use small ones. */
  pollTimeoutSeconds?: number;
  /** Flood control: retries of a 429 and the longest `retry_after` honoured. */
  maxRetryAttempts?: number;
  maxRetryDelaySeconds?: number;
  /** Pause after a failed poll or refused accept, ms. */
  retryPauseMs?: number;
}

export function createTelegramAdapter(config: TelegramChannelConfig, deps: AdapterDeps, options: TelegramAdapterOptions = {}): ChatAdapter {
  const log = deps.logger;
  const scrub = (text: string) => redactSecrets(text, [config.token]);
  const api = new Api(config.token, { apiRoot: config.apiRoot });
  // Flood limits only: network failures surface at once (the poll loop and the core's turn retries own those).
  api.config.use(autoRetry({ maxRetryAttempts: options.maxRetryAttempts ?? 5, maxDelaySeconds: options.maxRetryDelaySeconds ?? 60, rethrowHttpErrors: true }));

  let me: UserFromGetMe | undefined;
  let sink: InboundSink | undefined;
  let running = false;
  let poll: AbortController | undefined;
  let loop: Promise<void> | undefined;
  let webhook: Server | undefined;
  const chatChains = new Map<string, Promise<unknown>>();

  /** Update -> InboundMessage, or undefined when it is not for us. */
  async function translate(update: Update): Promise<InboundMessage | undefined> {
    const message = update.message;
    if (!message || !message.from || message.from.is_bot || !me) return undefined;
    const chatType = message.chat.type === "private" ? "direct" : message.chat.type === "group" || message.chat.type === "supergroup" ? "group" : undefined;
    if (!chatType) return undefined;
    const chatId = String(message.chat.id);
    let text = message.text ?? message.caption ?? "";
    if (chatType === "group" && groupRequiresMention(config, chatId)) {
      if (!addressesBot(message, me)) return undefined;
    }
    if (chatType === "group") text = stripMention(text, me.username);
    const attachments = await downloadAttachments(message);
    if (!text.trim() && !attachments.length) return undefined;
    return {
      platform: "telegram",
      accountId: config.id,
      chatId,
      chatType,
      userId: String(message.from.id),
      userName: message.from.username ?? [message.from.first_name, message.from.last_name].filter(Boolean).join(" "),
      messageId: String(message.message_id),
      text,
      sentAt: message.date * 1000,
      ...(attachments.length ? { attachments } : {}),
    };
  }

  async function downloadAttachments(message: Message): Promise<InboundAttachment[]> {
    const wanted: { fileId: string; size?: number; name: string; kind: InboundAttachment["kind"]; mime?: string }[] = [];
    if (message.document) {
      wanted.push({ fileId: message.document.file_id, size: message.document.file_size, name: message.document.file_name ?? `document-${message.message_id}`, kind: "document", mime: message.document.mime_type });
    }
    if (message.photo?.length) {
      const largest = message.photo[message.photo.length - 1]!;
      wanted.push({ fileId: largest.file_id, size: largest.file_size, name: `photo-${message.message_id}.jpg`, kind: "photo", mime: "image/jpeg" });
    }
    const out: InboundAttachment[] = [];
    for (const item of wanted) {
      if (item.size !== undefined && item.size > deps.maxAttachmentBytes) {
        log.info({ size: item.size }, "telegram attachment over the size limit: skipped");
        continue;
      }
      try {
        const file = await api.getFile(item.fileId);
        if (!file.file_path) continue;
        const res = await fetch(`${config.apiRoot}/file/bot${config.token}/${file.file_path}`);
        if (!res.ok || !res.body) throw new Error(`download answered HTTP ${res.status}`);
        const chunks: Buffer[] = [];
        let total = 0;
        for await (const chunk of res.body) {
          total += (chunk as Uint8Array).length;
          if (total > deps.maxAttachmentBytes) throw new Error("attachment over the size limit");
          chunks.push(Buffer.from(chunk as Uint8Array));
        }
        out.push({ kind: item.kind, fileName: safeName(item.name), ...(item.mime ? { mimeType: item.mime } : {}), data: Buffer.concat(chunks) });
      } catch (error) {
        log.warn({ err: scrub(String(error)) }, "telegram attachment download failed");
      }
    }
    return out;
  }

  /** Hands one chat's updates to the core strictly in order. */
  function enqueueForChat(chatKey: string, update: Update): Promise<void> {
    const previous = chatChains.get(chatKey) ?? Promise.resolve();
    const next = previous.then(async () => {
      const message = await translate(update);
      if (message) await sink!.accept(message);
    });
    // A failure must not poison later updates of the chat: they resolve on their own.
    chatChains.set(chatKey, next.catch(() => {}));
    return next;
  }

  async function handleBatch(updates: Update[]): Promise<number | undefined> {
    const results = await Promise.allSettled(updates.map((u) => enqueueForChat(String(u.message?.chat.id ?? "other"), u)));
    // Advance only through the longest prefix that was accepted; the rest comes again (the core drops duplicates).
    let last: number | undefined;
    for (let i = 0; i < updates.length; i++) {
      if (results[i]!.status === "rejected") {
        log.warn({ err: scrub(String((results[i] as PromiseRejectedResult).reason)) }, "telegram update not accepted; will retry");
        break;
      }
      last = updates[i]!.update_id;
    }
    return last;
  }

  async function pollLoop(): Promise<void> {
    let offset = deps.state.get<number>(OFFSET_KEY);
    while (running) {
      poll = new AbortController();
      let updates: Update[];
      try {
        updates = await api.getUpdates(
          { offset: offset === undefined ? undefined : offset + 1, timeout: options.pollTimeoutSeconds ?? 25, allowed_updates: ["message"] },
          // grammY types its signal with the abort-controller polyfill's type; the runtime takes the standard one.
          poll.signal as unknown as Parameters<typeof api.getUpdates>[1],
        );
      } catch (error) {
        if (!running) return;
        if (error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404)) {
          sink?.status({ state: "failed", detail: "Telegram refused the bot token" });
          log.error("telegram refused the bot token; the channel stops");
          running = false;
          return;
        }
        if (error instanceof GrammyError && error.error_code === 409) {
          log.error("another client is polling this bot (or a webhook is set); retrying");
        } else {
          log.warn({ err: scrub(error instanceof Error ? error.message : String(error)) }, "telegram poll failed; retrying");
        }
        sink?.status({ state: "reconnecting", detail: "poll failed" });
        await deps.clock.sleep(options.retryPauseMs ?? 1000);
        continue;
      }
      if (!updates.length) continue;
      const last = await handleBatch(updates);
      if (last !== undefined) {
        offset = last;
        await deps.state.set(OFFSET_KEY, last);
      }
      if (last !== updates[updates.length - 1]!.update_id) await deps.clock.sleep(options.retryPauseMs ?? 1000);
    }
  }

  async function startWebhook(): Promise<void> {
    const hook = config.webhook!;
    webhook = createServer((req, res) => {
      if (req.method !== "POST" || req.url !== hook.path) return void res.writeHead(404).end();
      if (req.headers["x-telegram-bot-api-secret-token"] !== hook.secretToken) return void res.writeHead(401).end();
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        let update: Update;
        try {
          update = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Update;
        } catch {
          return void res.writeHead(400).end();
        }
        // Answer only once accepted: a non-2xx makes Telegram deliver the update again.
        enqueueForChat(String(update.message?.chat.id ?? "other"), update).then(
          () => res.writeHead(200).end(),
          () => res.writeHead(503).end(),
        );
      });
    });
    await new Promise<void>((resolve) => webhook!.listen(hook.port, hook.host, resolve));
    await api.setWebhook(hook.url, { secret_token: hook.secretToken, allowed_updates: ["message"] });
  }

  return {
    platform: "telegram",
    accountId: config.id,
    limits: TELEGRAM_LIMITS,

    async start(s) {
      if (running) return;
      sink = s;
      s.status({ state: "starting" });
      try {
        me = await api.getMe();
      } catch (error) {
        const detail = scrub(error instanceof Error ? error.message : String(error));
        s.status({ state: "failed", detail });
        throw new Error(`telegram: cannot reach the Bot API or the token was refused: ${detail}`);
      }
      running = true;
      if (config.setCommands) {
        await api.setMyCommands(COMMANDS).catch((error: unknown) => log.warn({ err: scrub(String(error)) }, "telegram setMyCommands failed"));
      }
      if (config.mode === "webhook") {
        await startWebhook();
      } else {
        await api.deleteWebhook().catch(() => {});
        loop = pollLoop().catch((error: unknown) => log.error({ err: scrub(String(error)) }, "telegram poll loop ended"));
      }
      log.info({ bot: me.username }, "telegram connected");
      s.status({ state: "connected", detail: `@${me.username}` });
    },

    async stop() {
      if (!running && !webhook && !loop) return;
      running = false;
      poll?.abort();
      await loop;
      loop = undefined;
      if (webhook) {
        const server = webhook;
        webhook = undefined;
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      await Promise.allSettled(chatChains.values());
      sink?.status({ state: "stopped" });
    },

    async send(target: ChatTarget, text: string, options: SendOptions) {
      const chatId = target.chatId;
      const reply = target.chatType === "group" && target.replyToMessageId
        ? { reply_parameters: { message_id: Number(target.replyToMessageId), allow_sending_without_reply: true } }
        : {};
      if (options.format === "markdown") {
        const html = telegramMarkdownToHtml(text);
        if (html.length <= TELEGRAM_LIMITS.maxMessageLength) {
          try {
            await api.sendMessage(chatId, html, { parse_mode: "HTML", ...reply });
            return;
          } catch (error) {
            if (!(error instanceof GrammyError && error.error_code === 400 && /parse entities|can't parse|unsupported start tag/i.test(error.description))) {
              throw new Error(`telegram sendMessage failed: ${scrub(describe(error))}`);
            }
            log.debug("telegram rejected the HTML entities; sending plain text");
          }
        }
      }
      try {
        await api.sendMessage(chatId, text, reply);
      } catch (error) {
        throw new Error(`telegram sendMessage failed: ${scrub(describe(error))}`);
      }
    },

    async sendTyping(target) {
      try {
        await api.sendChatAction(target.chatId, "typing");
      } catch (error) {
        log.debug({ err: scrub(describe(error)) }, "telegram typing failed (ignored)");
      }
    },
  };
}

function describe(error: unknown): string {
  if (error instanceof GrammyError) return `${error.error_code}: ${error.description}`;
  if (error instanceof HttpError) return `network: ${String(error.error)}`;
  return error instanceof Error ? error.message : String(error);
}

/** Mentioned by @username or a text mention, a command addressed to the bot, or a reply to one of its messages. */
export function addressesBot(message: Message, me: UserFromGetMe): boolean {
  if (message.reply_to_message?.from?.id === me.id) return true;
  const text = message.text ?? message.caption ?? "";
  const entities = message.entities ?? message.caption_entities ?? [];
  const name = `@${me.username}`.toLowerCase();
  for (const entity of entities) {
    const part = text.slice(entity.offset, entity.offset + entity.length).toLowerCase();
    if (entity.type === "mention" && part === name) return true;
    if (entity.type === "text_mention" && entity.user?.id === me.id) return true;
    if (entity.type === "bot_command" && part.endsWith(name)) return true;
  }
  return false;
}

/** Removes a leading `@bot` and the `@bot` suffix of a command, so `/new@bot` reads `/new`. */
export function stripMention(text: string, username: string): string {
  const escaped = username.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return text
    .replace(new RegExp(`^\\s*@${escaped}\\b[\\s,:]*`, "i"), "")
    .replace(new RegExp(`^(/\\w+)@${escaped}\\b`, "i"), "$1")
    .trim();
}

const safeName = (name: string): string => name.replace(/[/\\\0]/g, "_").replace(/^\.+/, "_").slice(0, 200) || "file";
