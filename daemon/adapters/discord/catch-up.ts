/**
 * Discord dispatches a message once, to the sessions connected when it was
 * sent; a RESUME replays what a session missed, but a new session (the
 * daemon was down, or the gateway made it IDENTIFY again) starts from now.
 * What was sent in between is only in the channels' history. So the adapter
 * remembers, per channel it took a message from, the newest message id, and
 * at every new session asks `GET /channels/{id}/messages?after=` and hands
 * what it missed to the core like any message; the core's dedupe drops what
 * it already journaled.
 *
 * Bounds: the 50 channels most recently active, 100 messages each (one page);
 * a channel with more missed says so in the log. The newest ids are saved in
 * the adapter's state at most every `SAVE_EVERY_MS` and at stop, so after a
 * kill -9 a catch-up may fetch up to that much again (the dedupe drops it).
 */
import type { Client, Message } from "discord.js";
import type { Logger } from "pino";
import { z } from "zod";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { AdapterStateStore } from "../../vocabulary/adapter.js";

/** At most this many channels are caught up, the most recently active first. */
export const CATCH_UP_CHANNELS = 50;
/** At most this many missed messages per channel (one page of history). */
export const CATCH_UP_PER_CHANNEL = 100;
const SAVE_EVERY_MS = 2_000;
const STATE_KEY = "catchUp";
const Saved = z.record(z.string().regex(/^\d+$/), z.string().regex(/^\d+$/));

export interface CatchUpDeps {
  /** The adapter's own key-value state: where the newest ids are kept. */
  state: AdapterStateStore;
  clock: Clock;
  log: Logger;
  /** Removes the token from any text before it reaches a log. */
  redact(text: string): string;
}

/** Snowflakes grow with time: the larger id is the newer message. */
const newer = (a: string, b: string): boolean => BigInt(a) > BigInt(b);

export class DiscordCatchUp {
  readonly #deps: CatchUpDeps;
  /** Channel id -> the newest message id taken from it (what a catch-up asks after). */
  readonly #lastSeen = new Map<string, string>();
  #saveTimer: Timer | null = null;

  constructor(deps: CatchUpDeps) {
    this.#deps = deps;
    const saved = Saved.safeParse(deps.state.get(STATE_KEY) ?? {});
    if (saved.success) for (const [channel, id] of Object.entries(saved.data)) this.#lastSeen.set(channel, id);
    else deps.log.warn("discord catch-up state unreadable: starting without it");
  }

  /** A message of `channelId` was taken. */
  seen(channelId: string, messageId: string): void {
    const last = this.#lastSeen.get(channelId);
    if (last !== undefined && !newer(messageId, last)) return;
    this.#lastSeen.set(channelId, messageId);
    this.#saveTimer ??= this.#deps.clock.setTimeout(() => {
      this.#saveTimer = null;
      void this.save();
    }, SAVE_EVERY_MS);
  }

  /** Fetches what each remembered channel received after its last taken message, oldest first, and hands it to `deliver`. */
  async run(client: Client<true>, deliver: (message: Message) => void): Promise<void> {
    const channels = [...this.#lastSeen].sort(([, a], [, b]) => (newer(a, b) ? -1 : 1)).slice(0, CATCH_UP_CHANNELS);
    for (const [channelId, after] of channels) {
      try {
        const channel = await client.channels.fetch(channelId);
        if (!channel?.isTextBased()) continue;
        const missed = [...(await channel.messages.fetch({ after, limit: CATCH_UP_PER_CHANNEL })).values()].sort((a, b) => (newer(a.id, b.id) ? 1 : -1));
        if (!missed.length) continue;
        this.#deps.log.info({ chatId: channelId, messages: missed.length }, "discord: caught up on messages sent while no session was connected");
        if (missed.length === CATCH_UP_PER_CHANNEL)
          this.#deps.log.warn({ chatId: channelId }, `discord: ${CATCH_UP_PER_CHANNEL} or more messages were missed; older ones are not caught up`);
        for (const message of missed) deliver(message);
      } catch (error) {
        this.#deps.log.warn(
          { chatId: channelId, err: this.#deps.redact(error instanceof Error ? error.message : String(error)) },
          "discord: could not catch up on a channel",
        );
      }
    }
  }

  /** Saves the newest ids now (at stop, and on the throttle). */
  async save(): Promise<void> {
    this.#saveTimer?.cancel();
    this.#saveTimer = null;
    await this.#deps.state.set(STATE_KEY, Object.fromEntries(this.#lastSeen));
  }
}
