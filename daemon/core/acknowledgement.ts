/**
 * Acknowledgement reactions: a sign of life (default 👀) on a message the
 * bridge took, removed (or replaced by `done`) once its turn is over. Best
 * effort throughout: a reaction that fails is logged at debug and forgotten,
 * never retried, and never holds up intake or the reply (nothing here is
 * awaited by the turn).
 *
 * Stateless across restarts on purpose: clearing is idempotent on every
 * platform (Telegram sets the list, Discord deletes the bot's own reaction),
 * so a turn resumed after a restart clears the reaction the last run set.
 */
import type { Logger } from "pino";
import { BoundedMap } from "../../shared/util/bounded-map.js";
import type { AckReactionConfig } from "../vocabulary/config-fields.js";
import type { ChannelConfig } from "../config/schema.js";
import type { ChatAdapter, ChatType } from "../vocabulary/adapter.js";
import { errorSummary } from "./relay-types.js";
import { dedupeKeyOf, type DedupeKey } from "../vocabulary/keys.js";

/** A channel's acknowledgement settings; undefined on a platform without reactions (no `ackReaction` key). */
export const ackConfigOf = (channel: ChannelConfig | undefined): AckReactionConfig | undefined =>
  channel && "ackReaction" in channel ? channel.ackReaction : undefined;

/** What the rule reads of a message. */
export interface AckFacts {
  chatType: ChatType;
  /** Whether a group message addresses the bot (undefined: the platform has no such notion, treated as addressed). */
  mentioned?: boolean | undefined;
}

/** The reaction `config` puts on a message like `facts`, or undefined for none. Pure. */
export function ackEmojiFor(config: AckReactionConfig, facts: AckFacts): string | undefined {
  if (!config.emoji) return undefined;
  const group = facts.chatType === "group";
  const applies: Record<AckReactionConfig["scope"], boolean> = {
    "group-mentions": group && facts.mentioned !== false,
    "group-all": group,
    direct: !group,
    all: true,
    off: false,
  };
  return applies[config.scope] ? config.emoji : undefined;
}

/** A message as the reactions need it: where it is and what the rule reads. */
export interface AckMessage extends AckFacts {
  platform: string;
  accountId: string;
  chatId: string;
  /** The forum topic it is in, if any. */
  threadId?: string | undefined;
  messageId: string;
}

export interface AcknowledgementsDeps {
  channelFor(accountId: string): ChannelConfig | undefined;
  adapterFor(platform: string, accountId: string): ChatAdapter | undefined;
  logger: Logger;
}

/** The reactions of one daemon; the pending map only orders a clear after its own set. */
export class Acknowledgements {
  readonly #deps: AcknowledgementsDeps;
  /** Reactions being set, by message: a clear waits for its set, so a fast answer cannot leave 👀 behind. Bounded: an entry is dropped once cleared. */
  readonly #setting = new BoundedMap<DedupeKey, Promise<void>>(10_000);

  constructor(deps: AcknowledgementsDeps) {
    this.#deps = deps;
  }

  /** The message was taken for a turn: react, without waiting. */
  taken(message: AckMessage): void {
    const found = this.#reactionFor(message);
    if (!found) return;
    const setting = this.#react(found.adapter, message, found.emoji, false);
    this.#setting.set(dedupeKeyOf(message), setting);
  }

  /** The messages' turn is over (answered, failed or dropped): clear each reaction, or replace it with `done`; without waiting. */
  answered(messages: readonly AckMessage[]): void {
    for (const message of messages) {
      const found = this.#reactionFor(message);
      if (!found) continue;
      const key = dedupeKeyOf(message);
      const before = this.#setting.get(key) ?? Promise.resolve();
      this.#setting.delete(key);
      const done = ackConfigOf(this.#deps.channelFor(message.accountId))?.done;
      void before
        .then(() => this.#react(found.adapter, message, found.emoji, true))
        .then(() => (done ? this.#react(found.adapter, message, done, false) : undefined));
    }
  }

  #reactionFor(message: AckMessage): { adapter: ChatAdapter; emoji: string } | undefined {
    const config = ackConfigOf(this.#deps.channelFor(message.accountId));
    const emoji = config && ackEmojiFor(config, message);
    const adapter = emoji ? this.#deps.adapterFor(message.platform, message.accountId) : undefined;
    return adapter?.reactions && emoji ? { adapter, emoji } : undefined;
  }

  /** One reaction call; never rejects. */
  async #react(adapter: ChatAdapter, message: AckMessage, emoji: string, remove: boolean): Promise<void> {
    try {
      const target = {
        platform: message.platform,
        accountId: message.accountId,
        chatId: message.chatId,
        chatType: message.chatType,
        ...(message.threadId !== undefined ? { threadId: message.threadId } : {}),
      };
      await adapter.reactions?.react(target, message.messageId, emoji, { remove });
    } catch (error) {
      this.#deps.logger.debug(
        { platform: message.platform, accountId: message.accountId, chatId: message.chatId, remove, err: errorSummary(error) },
        "acknowledgement reaction failed (ignored)",
      );
    }
  }
}
