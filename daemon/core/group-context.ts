/**
 * Group context: in a group that requires a mention, the messages the bot
 * was not addressed in are kept (bounded per group in count, age and
 * characters) and sent with the next message that addresses it, as a clearly
 * marked block naming the speakers, so "@bot what do you think of what Alice
 * said?" can work.
 *
 * Only for groups the bridge serves and senders it would answer (the access
 * rules decide); a refused or unlisted group leaves nothing here. Kept in
 * memory only (a restart forgets it), never logged, and swept on every use
 * so nothing outlives its age bound by more than the time to the next
 * message. The block is part of the journaled turn text, like the message.
 */
import type { Clock } from "../../shared/clock.js";
import { BoundedMap } from "../../shared/util/bounded-map.js";
import type { GroupContextConfig } from "../vocabulary/config-fields.js";
import type { ChannelConfig } from "../config/schema.js";
import { checkAccess } from "./access.js";
import type { AcceptOutcome, InboundMessage } from "../vocabulary/adapter.js";
import { parseCommand } from "./commands.js";
import type { ChatKey } from "../vocabulary/keys.js";
import { contextKeyOf, listedSettingsId } from "../vocabulary/conversation.js";

/** One kept message. */
export interface ContextLine {
  /** Clock time it was kept. */
  at: number;
  speaker: string;
  text: string;
}

/** How much a group keeps: the channel's `groupContext`, with the group's own `context` switch. */
export type ContextBounds = Pick<GroupContextConfig, "maxMessages" | "maxAgeMs" | "maxChars">;

export const CONTEXT_HEADER = "Recent messages in this group (context, not addressed to you):";

/** The characters a line takes in the block. */
const lineLength = (line: ContextLine): number => line.speaker.length + line.text.length + 3;

/** The lines within the bounds at `now`: none older than maxAgeMs, the newest maxMessages, the newest within maxChars. Pure. */
export function withinBounds(lines: readonly ContextLine[], now: number, bounds: ContextBounds): ContextLine[] {
  const fresh = lines.filter((l) => now - l.at <= bounds.maxAgeMs).slice(-bounds.maxMessages);
  let total = 0;
  let first = fresh.length;
  while (first > 0 && total + lineLength(fresh[first - 1]!) <= bounds.maxChars) total += lineLength(fresh[--first]!);
  return fresh.slice(first);
}

/** A speaker's name as the block shows it: no brackets or line breaks, so no one can forge another speaker's line. */
export const speakerName = (message: Pick<InboundMessage, "userName" | "userId">): string =>
  (message.userName?.trim() || message.userId).replace(/[[\]\r\n]+/g, " ").slice(0, 64);

/** A kept text as one block entry: continuation lines indented, so a line cannot pass for a new speaker. */
const entryText = (text: string): string => text.trim().replace(/\r?\n/g, "\n  ");

/** The message's text with the kept lines before it, marked as context. Pure. */
export function withContext(lines: readonly ContextLine[], message: Pick<InboundMessage, "text" | "userName" | "userId">): string {
  if (!lines.length) return message.text;
  const block = lines.map((l) => `[${l.speaker}] ${l.text}`).join("\n");
  return `${CONTEXT_HEADER}\n${block}\n\nAddressed to you by [${speakerName(message)}]:\n${message.text}`;
}

export interface GroupContextsDeps {
  clock: Clock;
  channelFor(accountId: string): ChannelConfig | undefined;
  /** Groups tracked at once, across channels (the least recently spoken in go first). Default 1000. */
  maxGroups?: number;
}

/** The kept context of every served group of the daemon. */
export class GroupContexts {
  readonly #deps: GroupContextsDeps;
  /** Per group chat: its kept lines, oldest first, always within its bounds as of the last sweep. */
  readonly #groups: BoundedMap<ChatKey, { bounds: ContextBounds; lines: ContextLine[] }>;

  constructor(deps: GroupContextsDeps) {
    this.#deps = deps;
    this.#groups = new BoundedMap(deps.maxGroups ?? 1000);
  }

  /** The message with its group's context before its text, when it addresses the bot in a group that has some (commands pass as they are). The context is not used up until `settle`. */
  attach(message: InboundMessage): InboundMessage {
    if (message.chatType !== "group" || message.mentioned === false || parseCommand(message.text)) return message;
    this.#sweep();
    const lines = this.#groups.get(contextKeyOf(message))?.lines;
    return lines?.length ? { ...message, text: withContext(lines, message) } : message;
  }

  /** After intake: an unaddressed message of a served group is kept; an accepted one uses up its group's context. */
  settle(message: InboundMessage, outcome: AcceptOutcome): void {
    if (message.chatType !== "group") return;
    const key = contextKeyOf(message);
    if (outcome.status === "accepted" && message.mentioned !== false && !parseCommand(message.text)) this.#groups.delete(key);
    // A bridge command is not conversation (and `/approve CODE` carries a secret): never context.
    if (outcome.status === "refused" && outcome.reason === "not_mentioned" && !parseCommand(message.text)) this.#keep(key, message);
  }

  /** How many lines a group holds now (for tests and /status). */
  size(message: Pick<InboundMessage, "platform" | "accountId" | "chatId" | "threadId" | "startsThread">): number {
    this.#sweep();
    return this.#groups.get(contextKeyOf(message))?.lines.length ?? 0;
  }

  #keep(key: ChatKey, message: InboundMessage): void {
    const bounds = this.#boundsFor(message);
    const text = entryText(message.text);
    if (!bounds || !text) return;
    const line: ContextLine = { at: this.#deps.clock.now(), speaker: speakerName(message), text };
    // A single message longer than the whole budget keeps its start.
    const room = bounds.maxChars - line.speaker.length - 3;
    if (room <= 0) return;
    if (line.text.length > room) line.text = `${line.text.slice(0, Math.max(0, room - 1))}…`;
    const lines = [...(this.#groups.get(key)?.lines ?? []), line];
    this.#groups.set(key, { bounds, lines: withinBounds(lines, line.at, bounds) });
    this.#sweep();
  }

  /** The group's bounds when the bridge serves it and would answer this sender; undefined keeps nothing. */
  #boundsFor(message: InboundMessage): ContextBounds | undefined {
    const channel = this.#deps.channelFor(message.accountId);
    if (!channel || !checkAccess(channel.access, message).allowed) return undefined;
    const groupKey = listedSettingsId(message, channel.access.groups);
    const own = groupKey === undefined ? undefined : channel.access.groups[groupKey]?.context;
    // A platform without groups has no `groupContext` key: nothing is kept.
    const settings = "groupContext" in channel ? channel.groupContext : undefined;
    return settings && (own ?? settings.enabled) ? settings : undefined;
  }

  /** Drops what has aged out, in every group, so nothing is held past its bound. */
  #sweep(): void {
    const now = this.#deps.clock.now();
    for (const [key, group] of this.#groups) {
      const lines = withinBounds(group.lines, now, group.bounds);
      if (!lines.length) this.#groups.delete(key);
      else if (lines.length !== group.lines.length) group.lines = lines;
    }
  }
}
