/**
 * How updates come in webhook mode: an HTTP server Telegram posts updates
 * to. A post is checked (path, secret header, size), its update handed over
 * in its chat's order, and answered 200 only once the core accepted it: anything else makes
 * Telegram deliver it again.
 */
import { timingSafeEqual } from "node:crypto";
import type { Update } from "grammy/types";
import type { Logger } from "pino";
import { createSerialQueue } from "../../helpers/retry.js";
import { listenWebhook as listenEndpoint, parseJsonBody, textAnswer, type WebhookAnswer, type WebhookRequest } from "../webhook.js";
import type { TelegramWebhookConfig } from "./config.js";
import { describe, type Scrub } from "./errors.js";
import { chatIdOfUpdate } from "./inbound.js";

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
  const endpoint = await listenEndpoint({
    host: deps.hook.host,
    port: deps.hook.port,
    path: deps.hook.path,
    // Telegram's updates are small; a larger body is refused unread (the endpoint's default, 1 MiB).
    name: "telegram webhook",
    log: deps.log,
    // The secret header is checked before the body is read: a forged post costs nothing.
    checkHeaders: (header) => (sameSecret(header("x-telegram-bot-api-secret-token"), deps.hook.secretToken) ? undefined : textAnswer(401)),
    handle: (request) => onUpdate(deps, enqueue, request),
  });
  return {
    async close() {
      await endpoint.close();
      await chains.idle();
    },
  };
}

async function onUpdate(deps: WebhookDeps, enqueue: (update: Update) => Promise<void>, request: WebhookRequest): Promise<WebhookAnswer> {
  // Trusted as Telegram's shape (the secret header says Telegram sent it), as grammY's own webhook adapters do; polling gets the same objects through grammY.
  const update = parseJsonBody(request.body) as Update | undefined;
  if (!update || typeof update !== "object") return textAnswer(400);
  // Answer only once accepted: anything but 2xx makes Telegram deliver the update again.
  try {
    await enqueue(update);
    return textAnswer(200);
  } catch (error) {
    deps.log.warn({ updateId: update.update_id, err: describe(error, deps.scrub) }, "telegram update not accepted; Telegram will retry");
    return textAnswer(503);
  }
}

/** Compares the secret header in constant time, so its value cannot be guessed byte by byte. */
function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
