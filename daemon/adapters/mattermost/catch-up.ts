/**
 * What the WebSocket did not deliver: a reconnect the server could not
 * replay (a new `connection_id`), or the daemon being down. The adapter keeps,
 * per channel it took a post from, a time just below the newest post taken
 * (`create_at`), and at every new server connection (the first one of each
 * start included) asks `GET /channels/{id}/posts?since=` for what changed
 * after it, handing the posts created since to the core like any event; the
 * core's journal drops what it already has (by post id).
 *
 * A channel is remembered (saved at once) before its first post is handed
 * over, so a post received and then lost to a kill -9 before the journal has
 * it is fetched again by the next start. Later advances are saved at most
 * every `SAVE_EVERY_MS` and at stop: a kill -9 then only fetches more again.
 * Bounds: the 50 channels most recently active; one answer each (the server
 * caps `since` at 1000 posts).
 *
 * A channel the bot never took a post from has no mark: the adapter also
 * keeps the newest post it took anywhere (`seen`), and each catch-up looks
 * for channels with posts after it among all the bot's channels
 * (new-channels.ts). The first start of all takes the newest post on the
 * server as that mark: what was said before the bot first listened is
 * history, not a message to it.
 */
import type { Logger } from "pino";
import { z } from "zod";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { AdapterStateStore } from "../../vocabulary/adapter.js";
import { type ChannelFacts, type MattermostPost, postSchema } from "./inbound.js";
import { channelsToDiscover, listChannels, newestPostAt } from "./new-channels.js";
import type { MattermostRest } from "./rest.js";

export const CATCH_UP_CHANNELS = 50;
const SAVE_EVERY_MS = 2_000;
const STATE_KEY = "since";
const SEEN_KEY = "seen";
const Saved = z.record(z.string(), z.number());
const SavedSeen = z.number().int().min(0);
const PostList = z.object({ order: z.array(z.string()).default([]), posts: z.record(z.string(), z.unknown()).default({}) });
const Channel = z.object({ id: z.string(), type: z.string(), team_id: z.string().default("") });

export interface CatchUpDeps {
  state: AdapterStateStore;
  clock: Clock;
  log: Logger;
  rest: MattermostRest;
}

export class MattermostCatchUp {
  readonly #deps: CatchUpDeps;
  /** Channel id -> ask for posts changed after this (ms). */
  readonly #since = new Map<string, number>();
  readonly #channels = new Map<string, ChannelFacts>();
  /** The newest post taken in any channel (its `create_at`); undefined until the first catch-up of all sets it. */
  #seen: number | undefined;
  #saveTimer: Timer | null = null;

  constructor(deps: CatchUpDeps) {
    this.#deps = deps;
    const saved = Saved.safeParse(deps.state.get(STATE_KEY) ?? {});
    if (saved.success) for (const [channel, since] of Object.entries(saved.data)) this.#since.set(channel, since);
    else deps.log.warn("mattermost catch-up state unreadable: starting without it");
    const seen = SavedSeen.safeParse(deps.state.get(SEEN_KEY));
    // Kept by a version without the mark: the newest channel mark stands just below the newest post taken.
    this.#seen = seen.success ? seen.data : this.#since.size > 0 ? Math.max(...this.#since.values()) + 1 : undefined;
  }

  /** Before a post of `channelId` is handed over: a channel not yet known is remembered durably. */
  async known(channelId: string, createAt: number, facts?: ChannelFacts): Promise<void> {
    if (facts) this.#channels.set(channelId, facts);
    if (this.#since.has(channelId)) return;
    this.#since.set(channelId, createAt - 1);
    await this.save();
  }

  /** A post of `channelId` is in the journal (or deliberately refused): later catch-ups start after it. */
  taken(channelId: string, createAt: number): void {
    this.#seen = Math.max(this.#seen ?? 0, createAt);
    const since = createAt - 1;
    if ((this.#since.get(channelId) ?? -1) >= since) return;
    this.#since.delete(channelId);
    this.#since.set(channelId, since);
    this.#saveTimer ??= this.#deps.clock.setTimeout(() => {
      this.#saveTimer = null;
      void this.save();
    }, SAVE_EVERY_MS);
  }

  async save(): Promise<void> {
    this.#saveTimer?.cancel();
    this.#saveTimer = null;
    const recent = [...this.#since.entries()].slice(-CATCH_UP_CHANNELS);
    await this.#deps.state.set(STATE_KEY, Object.fromEntries(recent));
    if (this.#seen !== undefined) await this.#deps.state.set(SEEN_KEY, this.#seen);
  }

  /**
   * Fetches, per known channel, the posts created after its mark, oldest first, and hands each to
   * `take`; then the same for channels posted in since the bot's last seen post that it never knew.
   */
  async run(take: (post: MattermostPost, facts: ChannelFacts) => void): Promise<void> {
    // As it stood when the connection began: posts taken from here on must not move it past what was missed.
    const seen = this.#seen;
    const channels = [...this.#since.entries()].slice(-CATCH_UP_CHANNELS);
    for (const [channelId, since] of channels) {
      try {
        const facts = await this.#facts(channelId);
        const posts = await this.#postsSince(channelId, since);
        for (const post of posts) if (post.create_at > since) take(post, facts);
      } catch (error) {
        this.#deps.log.warn({ chatId: channelId, err: error instanceof Error ? error.message : String(error) }, "mattermost catch-up of a channel failed");
      }
    }
    await this.#discover(seen, new Set(channels.map(([id]) => id)), take);
  }

  /** Channels not caught up above with posts at or after `seen`: their posts from there (the first start only sets `seen`). */
  async #discover(seen: number | undefined, covered: ReadonlySet<string>, take: (post: MattermostPost, facts: ChannelFacts) => void): Promise<void> {
    const { log, rest } = this.#deps;
    let listed: Awaited<ReturnType<typeof listChannels>>;
    try {
      listed = await listChannels(rest);
    } catch (error) {
      log.warn(
        { err: error instanceof Error ? error.message : String(error) },
        "mattermost: the bot's channels could not be listed; new channels are not caught up",
      );
      return;
    }
    if (seen === undefined) {
      this.#seen = Math.max(this.#seen ?? 0, newestPostAt(listed));
      await this.save();
      return;
    }
    // Two posts may share a millisecond: one at `seen` in a channel the bot never knew was not taken.
    const after = seen - 1;
    for (const { id, facts } of channelsToDiscover(listed, (channelId) => covered.has(channelId), after, CATCH_UP_CHANNELS)) {
      try {
        this.#channels.set(id, facts);
        const posts = await this.#postsSince(id, after);
        for (const post of posts) if (post.create_at > after) take(post, facts);
        log.info({ chatId: id, posts: posts.length }, "mattermost: caught up a channel the bot had not seen before");
      } catch (error) {
        log.warn({ chatId: id, err: error instanceof Error ? error.message : String(error) }, "mattermost catch-up of a new channel failed");
      }
    }
  }

  async #facts(channelId: string): Promise<ChannelFacts> {
    const cached = this.#channels.get(channelId);
    if (cached) return cached;
    const result = await this.#deps.rest.call(this.#deps.rest.client.getChannelRoute(channelId), { method: "get" });
    if (!result.ok) throw new Error(`GET channel: HTTP ${result.status}`);
    const channel = Channel.parse(result.data);
    const facts = { type: channel.type, teamId: channel.team_id };
    this.#channels.set(channelId, facts);
    return facts;
  }

  async #postsSince(channelId: string, since: number): Promise<MattermostPost[]> {
    const url = `${this.#deps.rest.client.getChannelRoute(channelId)}/posts?since=${since}`;
    const result = await this.#deps.rest.call(url, { method: "get" });
    if (!result.ok) throw new Error(`GET posts since: HTTP ${result.status}`);
    const list = PostList.parse(result.data);
    const posts: MattermostPost[] = [];
    for (const raw of Object.values(list.posts)) {
      const post = postSchema.safeParse(raw);
      if (post.success && post.data.channel_id === channelId) posts.push(post.data);
    }
    return posts.sort((a, b) => a.create_at - b.create_at);
  }
}
