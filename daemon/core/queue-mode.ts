/**
 * Which queue mode a message's session is in: the chat's own choice
 * (`/queue <mode>`, kept in the store; a thread's, else its chat's:
 * `choiceKeysOf`), else its route's `queue.mode`, else
 * its channel's, else the top-level `queue.mode`. Read when the message comes
 * and when its turn starts, so a changed mode applies from the next message.
 */
import type { DaemonConfig } from "../config/schema.js";
import type { QueueMode } from "../vocabulary/config-fields.js";
import type { AdapterStateStore } from "../vocabulary/adapter.js";
import type { ChatKey } from "../vocabulary/keys.js";
import { choiceKeysOf } from "../vocabulary/conversation.js";

export const QUEUE_MODES: readonly QueueMode[] = ["followup", "collect", "interrupt"];

export function isQueueMode(word: string): word is QueueMode {
  return (QUEUE_MODES as readonly string[]).includes(word);
}

/** The mode the config gives a message of this route and channel (no chat choice). */
export function configuredQueueMode(config: DaemonConfig, ruleIndex: number, accountId: string): QueueMode {
  return config.routes[ruleIndex]?.queue?.mode ?? config.channels.find((channel) => channel.id === accountId)?.queue?.mode ?? config.queue.mode;
}

/** Every chat's own choice (`/queue <mode>`), durable; a chat without one follows the config. */
export class ChatQueueModes {
  /** The store's namespace for the choices, by chat key. */
  readonly #kv: AdapterStateStore;

  constructor(kv: AdapterStateStore) {
    this.#kv = kv;
  }

  /** The conversation's own choice, if it or its chat made one (a value that is no mode any more counts as none). */
  chosen(conversation: Parameters<typeof choiceKeysOf>[0]): QueueMode | undefined {
    for (const chat of choiceKeysOf(conversation)) {
      const value = this.#kv.get<unknown>(chat);
      if (typeof value === "string" && isQueueMode(value)) return value;
    }
    return undefined;
  }

  /** Sets the chat's (or thread's) mode; undefined goes back to its chat's or the config's. */
  choose(chat: ChatKey, mode: QueueMode | undefined): Promise<void> {
    return this.#kv.set(chat, mode);
  }

  /** The mode for a message of this conversation, route and channel. */
  modeOf(config: DaemonConfig, conversation: Parameters<typeof choiceKeysOf>[0], ruleIndex: number): QueueMode {
    return this.chosen(conversation) ?? configuredQueueMode(config, ruleIndex, conversation.accountId);
  }
}

/**
 * A collected turn's input: the messages marked as several, in the order
 * they were sent, so the agent answers all of them rather than reading one
 * long message.
 */
export function numberedMessages(texts: readonly string[]): string {
  const head = `(${texts.length} messages, in the order they were sent:)`;
  return [head, ...texts.map((t, i) => `[${i + 1}] ${t}`)].join("\n\n");
}
