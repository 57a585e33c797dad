/**
 * What the shared adapter suite (../contract.test.ts) needs of each platform:
 * one file per registered platform, `harness/<type>.ts`, exporting
 * `harness`, which starts the platform's fake (test/fakes/), builds the
 * real adapter against it and acts as the people and the chat on the other
 * side. A platform in the registry without one fails the suite, naming the
 * file to write.
 */
import type { CAPABILITY_NAMES, ChatAdapter, InboundSink } from "../../../../daemon/vocabulary/adapter.js";

export interface ContractHarness {
  /** The real adapter, wired to the platform's fake; not started (the suite starts it with its sink). */
  readonly adapter: ChatAdapter;
  /** What the channel holds that must never be logged: its descriptor's `secrets(channel)`. */
  readonly secrets: readonly string[];
  /** Everything the adapter logged so far (its logger at trace). */
  logs(): string;
  /** Whatever the fake needs once the adapter started (a socket to open); default nothing. */
  connected?(): Promise<void>;
  /** A person writes `text` to the bot in a direct chat. */
  direct(text: string): void | Promise<void>;
  /** A person writes `text` in a group chat, addressing the bot. Absent: the platform has no group chats. */
  group?(text: string): void | Promise<void>;
  /**
   * Threads: a person writes `text` in a thread (a conversation of its own inside the group
   * `group` writes in), addressing the bot; `shown` is the bot's messages in that thread.
   * Absent: the platform has no threads.
   */
  readonly thread?: { say(text: string): void | Promise<void>; shown(): string[] };
  /** The bot's messages in the chat as the chat shows them now (after edits), oldest first. */
  shown(chatId: string): string[];
  /** Names of the files the bot sent to the chat, oldest first. */
  files(chatId: string): string[];
  /** The bot's reactions on a person's message as the chat shows them (none: []). Needed when the adapter has `reactions`. */
  reactions?(chatId: string, messageId: string): string[];
  /** The labels of the buttons the bot's message shows now ([]: none). Needed when the adapter has `buttons`. */
  buttons?(chatId: string, messageId: string): string[];
  /** The person taps the `index`-th button (0-based, in order) of the bot's message. Needed when the adapter has `buttons`. */
  tap?(chatId: string, messageId: string, index: number): void | Promise<void>;
  /** Stops the fake (the suite stops the adapter first). */
  close(): Promise<void>;
}

export type HarnessFactory = () => Promise<ContractHarness>;

/**
 * What a platform has, as its harness declares it beside the factory (`export const features`):
 * group chats, threads, and each capability. The suite registers a case only for what is declared
 * (nothing is skipped: under CI=true a skip fails the run), and its first case fails when the
 * adapter or the harness disagrees with the declaration.
 */
export type Feature = "group" | "thread" | (typeof CAPABILITY_NAMES)[number];

/** The sink's part of a harness: every harness logs at trace into this. */
export function logCollector(): { lines: string[]; write(line: string): void; text(): string } {
  const lines: string[] = [];
  return { lines, write: (line) => void lines.push(line), text: () => lines.join("") };
}

export type { InboundSink };
