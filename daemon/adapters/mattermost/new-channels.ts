/**
 * Channels the bot never took a post from, found after a gap: a DM or group
 * message opened while the bot was offline, or a channel it was added to,
 * has no `?since=` mark, so catch-up.ts alone would never look there.
 * `GET /users/me/channels` (Mattermost 6.1+: every channel of every team the
 * bot is a member of, direct and group messages included, streamed whole)
 * names each with its `last_post_at`; one whose last post is newer than the
 * bot's last seen post (its `seen` mark) has posts the bot never had, and
 * they are fetched from that mark.
 *
 * The choice is PURE (`channelsToDiscover`); `listChannels` is the one call.
 */
import { z } from "zod";
import type { ChannelFacts } from "./inbound.js";
import type { MattermostRest } from "./rest.js";

/** What the listing says of a channel (model.Channel; other fields ignored). */
const ListedChannel = z.object({
  id: z.string().min(1),
  type: z.string(),
  team_id: z.string().default(""),
  last_post_at: z.number().default(0),
  delete_at: z.number().default(0),
});
export type ListedChannel = z.output<typeof ListedChannel>;

/** Every channel the bot is a member of; rejects when the server did not answer with the list. */
export async function listChannels(rest: MattermostRest): Promise<ListedChannel[]> {
  const result = await rest.call(`${rest.client.getUserRoute("me")}/channels`, { method: "get" });
  if (!result.ok) throw new Error(`GET /users/me/channels: ${result.message} (HTTP ${result.status})`);
  const list = z.array(z.unknown()).safeParse(result.data);
  if (!list.success) throw new Error("GET /users/me/channels did not answer a list");
  return list.data.flatMap((raw) => {
    const channel = ListedChannel.safeParse(raw);
    return channel.success ? [channel.data] : [];
  });
}

/** The newest post any listed channel has: where a bot that has seen nothing yet starts (everything before is history). */
export const newestPostAt = (channels: readonly ListedChannel[]): number => channels.reduce((newest, c) => Math.max(newest, c.last_post_at), 0);

/**
 * The channels to fetch from `seen`: not known already (`isKnown`), not archived, posted in after
 * `seen`; the most recently active first, at most `limit`.
 */
export function channelsToDiscover(
  channels: readonly ListedChannel[],
  isKnown: (channelId: string) => boolean,
  seen: number,
  limit: number,
): { id: string; facts: ChannelFacts }[] {
  return channels
    .filter((c) => !isKnown(c.id) && c.delete_at === 0 && c.last_post_at > seen)
    .sort((a, b) => b.last_post_at - a.last_post_at)
    .slice(0, limit)
    .map((c) => ({ id: c.id, facts: { type: c.type, teamId: c.team_id } }));
}
