/**
 * Who may talk to the bot. Allowlists fail closed: an empty list admits
 * nobody, an unlisted group is refused unless `allowUnlistedGroups`, and
 * "open" must be chosen explicitly. Pure functions over config + message.
 */
import type { AccessConfig, GroupAccessConfig } from "../config/schema.js";
import { normalizeUserId } from "../config/user-ids.js";
import type { InboundMessage } from "../vocabulary/adapter.js";
import { listedSettingsId } from "../vocabulary/conversation.js";

/** `pairable`: refused, but the sender may ask to pair (a direct chat on a channel in pairing mode). */
export type AccessDecision = { allowed: true } | { allowed: false; reason: string; pairable?: true };

/** Matches anyone, wherever a user list is accepted. */
export const ANY_USER = "*";

/**
 * One spelling per person: each platform's own spellings (its descriptor's
 * `users`), then phone numbers lose spaces, dashes, brackets and the leading `+`.
 */
export { normalizeUserId };

/** Whether one of `ids` is in the list (`"*"` matches anyone). */
export const isListed = (list: readonly string[], ids: Set<string>): boolean => listed(list, ids);

/** Every normalised id the sender is known by. */
export function senderIds(msg: { userId: string; userAliases?: readonly string[] | undefined }): Set<string> {
  return new Set([msg.userId, ...(msg.userAliases ?? [])].map(normalizeUserId));
}

/** A user list as `listed` reads it: whether it admits anyone, and its entries normalised. */
interface NormalisedList {
  any: boolean;
  ids: ReadonlySet<string>;
}

/**
 * Each list normalised once, not once per message: with a long allowlist the
 * per-message normalising was a measurable share of the relay's CPU. Keyed by
 * the list itself, so a reloaded config (new arrays) is normalised afresh;
 * config lists are not changed in place.
 */
const normalisedLists = new WeakMap<readonly string[], NormalisedList>();

function normalised(list: readonly string[]): NormalisedList {
  let entry = normalisedLists.get(list);
  if (entry === undefined) {
    entry = { any: list.some((id) => id.trim() === ANY_USER), ids: new Set(list.map(normalizeUserId)) };
    normalisedLists.set(list, entry);
  }
  return entry;
}

function listed(list: readonly string[], ids: Set<string>): boolean {
  const { any, ids: entries } = normalised(list);
  if (any) return true;
  for (const id of ids) if (entries.has(id)) return true;
  return false;
}

export function checkAccess(access: AccessConfig, msg: InboundMessage): AccessDecision {
  const ids = senderIds(msg);
  const open = access.mode === "open";

  if (msg.chatType === "direct") {
    if (open || listed(access.users, ids) || listed(access.owners, ids)) return { allowed: true };
    if (access.mode === "pairing") return { allowed: false, reason: "not paired", pairable: true };
    return { allowed: false, reason: "user not in allowlist" };
  }

  const key = listedSettingsId(msg, access.groups);
  const group: GroupAccessConfig | undefined = key === undefined ? undefined : access.groups[key];
  if (group?.enabled === false) return { allowed: false, reason: "group disabled" };
  if (!group && !open && !access.allowUnlistedGroups) return { allowed: false, reason: "group not in allowlist" };

  // A group's own list replaces the channel-wide one there; without one,
  // open mode admits everyone and allowlist mode the channel-wide users.
  if (group?.users) {
    return listed(group.users, ids) ? { allowed: true } : { allowed: false, reason: "user not in group allowlist" };
  }
  if (open || listed(access.users, ids)) return { allowed: true };
  return { allowed: false, reason: "user not in allowlist" };
}

/**
 * Whether the bot answers in this group only when mentioned (or replied to):
 * the group's own setting, else the channel's. Channels without the
 * setting (terminal) never require one.
 */
export function groupRequiresMention(channel: { access: AccessConfig; requireMention?: boolean }, chatId: string): boolean {
  const group = Object.hasOwn(channel.access.groups, chatId) ? channel.access.groups[chatId] : undefined;
  return group?.requireMention ?? channel.requireMention ?? false;
}
