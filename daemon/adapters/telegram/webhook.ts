/**
 * How updates come in webhook mode: an HTTP server Telegram posts updates
 * to. A post is checked (path, secret header, size), its update handed over
 * in its chat's order, and answered 200 only once the core accepted it: anything else makes
 * Telegram deliver it again.
 */
import { readBody } from "../../../shared/http/read-body.js";
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Update } from "grammy/types";
import type { Logger } from "pino";
import { createSerialQueue } from "../../helpers/retry.js";
import type { TelegramWebhookConfig } from "./config.js";
import { describe, type Scrub } from "./errors.js";
import { chatIdOfUpdate } from "./inbound.js";

/** Telegram's updates are small; a larger body is refused unread. */
const MAX_WEBHOOK_BODY = 1024 * 1024;

export interface WebhookDeps {
  hook: TelegramWebhookConfig;
  log: Logger;
  scrub: Scrub;
  /** Resolves once the core has the update; rejects when Telegram must deliver it again. */
  handOver(update: Update): Promise<void>;
}

export interface WebhookServer {
  /** Stops listening, then waits for updates already being handed over (they still reach the core, or come again). */
  close(): Promise<void>;
}

/** Listens on `hook.host:hook.port`; rejects when the port cannot be had. */
export async function listenWebhook(deps: WebhookDeps): Promise<WebhookServer> {
  /** One chain per chat keeps a chat's updates in order; chats run side by side. */
  const chains = createSerialQueue<string>();
  const enqueue = (update: Update) => chains.run(chatIdOfUpdate(update), () => deps.handOver(update));
  const server = createServer((req, res) => onRequest(deps, enqueue, req, res));
  await listen(server, deps.hook);
  return {
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await closed;
      await chains.idle();
    },
  };
}

function listen(server: Server, hook: TelegramWebhookConfig): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(hook.port, hook.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

function onRequest(deps: WebhookDeps, enqueue: (update: Update) => Promise<void>, req: IncomingMessage, res: ServerResponse): void {
  const { hook, log, scrub } = deps;
  if (req.method !== "POST" || req.url !== hook.path) return void res.writeHead(404).end();
  if (!sameSecret(req.headers["x-telegram-bot-api-secret-token"], hook.secretToken)) return void res.writeHead(401).end();
  readWebhookBody(req, res, (body) => {
    const update = parseUpdate(body);
    if (!update) return void res.writeHead(400).end();
    // Answer only once accepted: anything but 2xx makes Telegram deliver the update again.
    enqueue(update).then(
      () => res.writeHead(200).end(),
      (error: unknown) => {
        log.warn({ updateId: update.update_id, err: describe(error, scrub) }, "telegram update not accepted; Telegram will retry");
        res.writeHead(503).end();
      },
    );
  });
}

/** Collects the body up to `MAX_WEBHOOK_BODY` (413 beyond it), then calls `done`. */
function readWebhookBody(req: IncomingMessage, res: ServerResponse, done: (body: string) => void): void {
  void readBody(req, { maxBytes: MAX_WEBHOOK_BODY }).then((read) => {
    if (read.ok) return done(read.body.toString("utf8"));
    if (read.reason === "too_large") res.writeHead(413).end();
    req.destroy();
  });
}

/**
 * The posted update, or undefined when the body is not JSON. Trusted as
 * Telegram's shape (the secret header says Telegram sent it), as grammY's own
 * webhook adapters do; polling gets the same objects through grammY.
 */
function parseUpdate(body: string): Update | undefined {
  try {
    return JSON.parse(body) as Update;
  } catch {
    return undefined;
  }
}

/** Compares the secret header in constant time, so its value cannot be guessed byte by byte. */
function sameSecret(given: string | string[] | undefined, expected: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
