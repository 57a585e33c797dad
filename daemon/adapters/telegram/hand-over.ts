/**
 * One update handed to the core, the same for polling and webhook:
 * translate (inbound.ts), then the one hand-over (../hand-over.ts) with the
 * update's files (files.ts). Resolves once the core has the message (or it is
 * not for the core); rejects when Telegram must deliver it again (the core
 * deferred it, the journal failed, the adapter is stopping mid-download).
 */
import type { Update, UserFromGetMe } from "grammy/types";
import type { InboundSink } from "../../vocabulary/adapter.js";
import { handOver } from "../hand-over.js";
import { telegramFiles, type TelegramFilesDeps } from "./files.js";
import { fileRefsOf, translateMessage } from "./inbound.js";
import { handOverTap } from "./buttons.js";

/** Where an update goes, known once the adapter started (`sink`) and Telegram said who the bot is (`bot`). */
export interface HandoverContext {
  bot: UserFromGetMe;
  sink: InboundSink;
  /** Aborted when the adapter stops: a download under way ends, and the update must come again. */
  signal: AbortSignal;
}

export interface HandoverDeps extends TelegramFilesDeps {
  /** The channel's account id, token and Bot API root (file downloads are under `${apiRoot}/file/bot${token}/`). */
  channel: { id: string; token: string; apiRoot: string };
}

/** Hands `update` to `to.sink`; rejects when it must come again (nothing is acknowledged then). */
export type HandOver = (update: Update, to: HandoverContext | undefined) => Promise<void>;

export function createHandover(deps: HandoverDeps): HandOver {
  return async function handOverUpdate(update, to) {
    if (update.callback_query) {
      if (!to) throw new Error("not connected yet");
      const tapDeps = { api: deps.api, sink: to.sink, accountId: deps.channel.id, now: Date.now(), log: deps.log, scrub: deps.scrub };
      return handOverTap(update.callback_query, tapDeps);
    }
    const message = update.message;
    if (!message) return;
    if (!to) throw new Error("not connected yet");
    const inbound = translateMessage(message, to.bot, deps.channel.id);
    if (!inbound) return;
    const outcome = await handOver(to.sink, inbound, fileRefsOf(message), telegramFiles(deps, to.signal));
    // Not acknowledged (busy, stopping): the offset stays, and Telegram hands it over again.
    if (outcome && !outcome.acknowledge) throw new Error(`not taken now (${outcome.reason}); Telegram will deliver it again`);
  };
}
