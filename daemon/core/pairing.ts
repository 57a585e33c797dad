/**
 * DM pairing: how a stranger gets in without the owner editing the config.
 * In a channel whose `access.mode` is `"pairing"`, an unknown sender in a
 * direct chat gets a one-time code and nothing they write goes further; an
 * owner approves the code (`agent-bridge pairing approve`, or `/approve CODE`
 * from an owner's chat) and from then on the sender is let in like a listed
 * user.
 *
 * What it guarantees:
 * - codes are 8 characters from an alphabet without look-alikes, drawn from
 *   the injected `Random`; they expire after an hour, and at most
 *   `MAX_PENDING` wait per channel;
 * - codes are secrets: only their SHA-256 (bound to the channel) is stored,
 *   and no log line carries one;
 * - guessing is bounded: wrong codes are counted per channel and per
 *   approver, and past the limit approvals wait until the window passes;
 * - approvals and pending requests live in the daemon's state (the store's
 *   key-value records, journaled), so they survive restarts and move with the
 *   state backend.
 */
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { z } from "zod";
import type { Clock } from "../../shared/clock.js";
import type { Random } from "../../shared/random.js";
import type { Store } from "../vocabulary/store.js";
import { normalizeUserId } from "./access.js";

/** How long a code stays valid. */
export const CODE_TTL_MS = 60 * 60 * 1000;
/** Pending requests per channel at most; a further stranger is told to try later. */
export const MAX_PENDING = 3;
/** Wrong codes allowed per channel, and per approver, within `GUESS_WINDOW_MS`. */
export const MAX_WRONG_PER_CHANNEL = 10;
export const MAX_WRONG_PER_APPROVER = 5;
export const GUESS_WINDOW_MS = 15 * 60 * 1000;

/** No 0/O or 1/I, so a code copied by hand survives; 32 symbols, so one byte picks one without bias (40 bits a code). */
const ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const CODE_LENGTH = 8;
/** The store namespace pairing keeps its requests and approvals in. */
export const PAIRING_NAMESPACE = "pairing";
const NAMESPACE = PAIRING_NAMESPACE;

const PendingSchema = z.object({
  codeHash: z.string(),
  createdAt: z.number(),
  expiresAt: z.number(),
  userId: z.string(),
  userName: z.string().optional(),
  platform: z.string(),
  chatId: z.string(),
});
const ApprovedSchema = z.object({
  userId: z.string(),
  userName: z.string().optional(),
  at: z.number(),
  /** `cli` or `chat:<owner id>`. */
  by: z.string(),
});
export type PendingPairing = z.infer<typeof PendingSchema>;
export type ApprovedUser = z.infer<typeof ApprovedSchema>;

/** `abcd-efgh`, ` ABCDEFGH ` -> `ABCDEFGH`: how people type a code they were shown. */
export const normalizeCode = (code: string): string => code.toUpperCase().replace(/[\s-]/g, "");

/** What is stored of a code: its SHA-256, bound to the channel so one code hash cannot be replayed on another. */
export const hashCode = (channelId: string, code: string): string =>
  createHash("sha256")
    .update(`agent-bridge pairing v1\u0000${channelId}\u0000${normalizeCode(code)}`)
    .digest("hex");

/** What a stranger's message came to. */
export type PairingRequest =
  | { kind: "code"; code: string; expiresAt: number }
  | { kind: "waiting"; expiresAt: number }
  | { kind: "full" }
  /** Already told recently: say nothing, so a stranger cannot make the bot talk at will. */
  | { kind: "quiet" };

/** What an approval came to. */
export type ApprovalResult =
  | { ok: true; user: ApprovedUser; pending: PendingPairing }
  | { ok: false; reason: "no_match" | "rate_limited"; retryAfterMs?: number };

export interface Pairing {
  /** Whether the sender (any of their ids) was approved on the channel. */
  isApproved(channelId: string, ids: ReadonlySet<string>): boolean;
  /** A stranger wrote in a direct chat: their pending code, a new one, or why none. */
  request(channelId: string, sender: { userId: string; userName?: string; platform: string; chatId: string }): Promise<PairingRequest>;
  /** Approves the pending request whose code hashes to `codeHash`; `approver` (`cli`, `chat:<id>`) is counted for guessing. */
  approve(channelId: string, codeHash: string, approver: string): Promise<ApprovalResult>;
  /** Removes an approval; false when the user was not approved. */
  revoke(channelId: string, userId: string): Promise<boolean>;
  /** Pending requests (never their codes) and approved users, of one channel or all. */
  list(channelId?: string): { channel: string; pending: Omit<PendingPairing, "codeHash">[]; approved: ApprovedUser[] }[];
}

const pendingKey = (channelId: string, userId: string) => `pending\u0000${channelId}\u0000${userId}`;
const approvedKey = (channelId: string, userId: string) => `approved\u0000${channelId}\u0000${userId}`;
const splitKey = (key: string): [kind: string, channelId: string, userId: string] => key.split("\u0000") as [string, string, string];

/** How often a waiting stranger is reminded that their request waits. */
const REMIND_EVERY_MS = 10 * 60 * 1000;

export function createPairing(deps: { store: Store; clock: Clock; random: Random; logger: Logger }): Pairing {
  const kv = deps.store.kv(NAMESPACE);
  const log = deps.logger;
  /** Wrong codes by channel and by approver: the times they came, within the window. */
  const wrong = new Map<string, number[]>();
  /** When each waiting stranger was last told, so repeats stay quiet. */
  const told = new Map<string, number>();

  const read = <T>(schema: z.ZodType<T>, key: string): T | undefined => {
    const parsed = schema.safeParse(kv.get(key));
    return parsed.success ? parsed.data : undefined;
  };
  const entries = (kind: "pending" | "approved", channelId?: string) =>
    kv
      .keys()
      .map(splitKey)
      .filter(([k, channel]) => k === kind && (channelId === undefined || channel === channelId));

  const newCode = (): string => {
    const bytes = deps.random.bytes(CODE_LENGTH);
    return [...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join("");
  };

  /** Drops the channel's expired requests (their codes no longer work). */
  const prune = async (channelId: string, now: number) => {
    for (const [, channel, userId] of entries("pending", channelId)) {
      const pending = read(PendingSchema, pendingKey(channel, userId));
      if (!pending || pending.expiresAt <= now) await kv.set(pendingKey(channel, userId), undefined);
    }
  };

  /** Counts a wrong code; true when the channel or the approver is past its limit (this one included). */
  const overLimit = (keys: { key: string; max: number }[], now: number): number | undefined => {
    let wait: number | undefined;
    for (const { key, max } of keys) {
      const recent = (wrong.get(key) ?? []).filter((t) => now - t < GUESS_WINDOW_MS);
      wrong.set(key, recent);
      if (recent.length >= max) wait = Math.max(wait ?? 0, recent[0]! + GUESS_WINDOW_MS - now);
    }
    return wait;
  };

  return {
    isApproved(channelId, ids) {
      for (const id of ids) if (kv.get(approvedKey(channelId, id)) !== undefined) return true;
      return false;
    },

    async request(channelId, sender) {
      const now = deps.clock.now();
      await prune(channelId, now);
      const userId = normalizeUserId(sender.userId);
      const mine = read(PendingSchema, pendingKey(channelId, userId));
      const tellKey = `${channelId}\u0000${userId}`;
      if (mine) {
        const last = told.get(tellKey);
        if (last !== undefined && now - last < REMIND_EVERY_MS) return { kind: "quiet" };
        told.set(tellKey, now);
        return { kind: "waiting", expiresAt: mine.expiresAt };
      }
      if (entries("pending", channelId).length >= MAX_PENDING) {
        const last = told.get(tellKey);
        if (last !== undefined && now - last < REMIND_EVERY_MS) return { kind: "quiet" };
        told.set(tellKey, now);
        log.info({ channel: channelId, userId }, "pairing: too many requests waiting on this channel; the sender was told to try later");
        return { kind: "full" };
      }
      const code = newCode();
      const pending: PendingPairing = {
        codeHash: hashCode(channelId, code),
        createdAt: now,
        expiresAt: now + CODE_TTL_MS,
        userId,
        ...(sender.userName ? { userName: sender.userName } : {}),
        platform: sender.platform,
        chatId: sender.chatId,
      };
      await kv.set(pendingKey(channelId, userId), pending);
      told.set(tellKey, now);
      log.info(
        { channel: channelId, userId, userName: sender.userName },
        "pairing requested: approve with `agent-bridge pairing approve` (the code is in the sender's chat, not in this log)",
      );
      return { kind: "code", code, expiresAt: pending.expiresAt };
    },

    async approve(channelId, codeHash, approver) {
      const now = deps.clock.now();
      const limits = [
        { key: `channel\u0000${channelId}`, max: MAX_WRONG_PER_CHANNEL },
        { key: `approver\u0000${approver}`, max: MAX_WRONG_PER_APPROVER },
      ];
      const blocked = overLimit(limits, now);
      if (blocked !== undefined) {
        log.warn({ channel: channelId, approver }, "pairing: too many wrong codes; approvals wait");
        return { ok: false, reason: "rate_limited", retryAfterMs: blocked };
      }
      await prune(channelId, now);
      for (const [, channel, userId] of entries("pending", channelId)) {
        const pending = read(PendingSchema, pendingKey(channel, userId));
        if (pending?.codeHash !== codeHash) continue;
        const user: ApprovedUser = { userId, ...(pending.userName ? { userName: pending.userName } : {}), at: now, by: approver };
        // Both changes apply at once (the store applies before it writes): a concurrent approval of the same code finds it used.
        await Promise.all([kv.set(pendingKey(channelId, userId), undefined), kv.set(approvedKey(channelId, userId), user)]);
        log.info({ channel: channelId, userId, approver }, "pairing approved");
        return { ok: true, user, pending };
      }
      for (const { key } of limits) wrong.get(key)!.push(now);
      log.warn({ channel: channelId, approver }, "pairing: a code that matches no waiting request (wrong or expired)");
      return { ok: false, reason: "no_match" };
    },

    async revoke(channelId, userId) {
      const key = approvedKey(channelId, normalizeUserId(userId));
      if (kv.get(key) === undefined) return false;
      await kv.set(key, undefined);
      log.info({ channel: channelId, userId }, "pairing revoked");
      return true;
    },

    list(channelId) {
      const now = deps.clock.now();
      const channels = new Set([...entries("pending", channelId), ...entries("approved", channelId)].map(([, channel]) => channel));
      return [...channels].sort().map((channel) => ({
        channel,
        pending: entries("pending", channel)
          .map(([, , userId]) => read(PendingSchema, pendingKey(channel, userId)))
          .filter((p): p is PendingPairing => !!p && p.expiresAt > now)
          .map(({ codeHash: _secret, ...shown }) => shown),
        approved: entries("approved", channel)
          .map(([, , userId]) => read(ApprovedSchema, approvedKey(channel, userId)))
          .filter((a): a is ApprovedUser => !!a),
      }));
    },
  };
}
