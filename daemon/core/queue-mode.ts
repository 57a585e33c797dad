/**
 * Which queue mode a message's session is in: the chat's own choice
 * (`/queue <mode>`, kept in the store), else its route's `queue.mode`, else
 * its channel's, else the top-level `queue.mode`. Read when the message comes
 * and when its turn starts, so a changed mode applies from the next message.
 */
import type { DaemonConfig } from "../config/schema.js";
import type { QueueMode } from "../vocabulary/config-fields.js";
import type { AdapterStateStore } from "../vocabulary/adapter.js";
import type { ChatKey } from "../vocabulary/keys.js";

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

  /** The chat's own choice, if it made one (a value that is no mode any more counts as none). */
  chosen(chat: ChatKey): QueueMode | undefined {
    const value = this.#kv.get<unknown>(chat);
    return typeof value === "string" && isQueueMode(value) ? value : undefined;
  }

  /** Sets the chat's mode; undefined goes back to the config's. */
  choose(chat: ChatKey, mode: QueueMode | undefined): Promise<void> {
    return this.#kv.set(chat, mode);
  }

  /** The mode for a message of this chat, route and channel. */
  modeOf(config: DaemonConfig, chat: ChatKey, ruleIndex: number, accountId: string): QueueMode {
    return this.chosen(chat) ?? configuredQueueMode(config, ruleIndex, accountId);
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
