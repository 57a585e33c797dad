/**
 * What owners do with pairing, wherever they do it: `/approve CODE` from a
 * chat (only a channel's `access.owners`), and approve, list and revoke from
 * the command line (`agent-bridge pairing`, reaching the running daemon
 * through ops/control-requests.ts). An approval tells the approved person in
 * their chat.
 */
import type { Logger } from "pino";
import type { ChannelConfig } from "../config/schema.js";
import type { JournalEntry } from "../vocabulary/records.js";
import { isListed, senderIds } from "./access.js";
import type { Delivery } from "./delivery.js";
import { HASHED } from "./intake.js";
import { noticeText } from "./notices.js";
import { type ApprovalResult, hashCode, type Pairing } from "./pairing.js";
import { errorSummary } from "./relay-types.js";

export interface PairingOps {
  /** `/approve` from the chat of `entry`'s sender: the answer to say there. `codeArg` is as journaled (`sha256:<hash>`). */
  approveFromChat(entry: JournalEntry, codeArg: string): Promise<string>;
  /** An approval from the command line (or, `by` naming them, the operator's console), by the code's hash. */
  approve(channelId: string, codeHash: string, by?: string): Promise<ApprovalResult>;
  revoke: Pairing["revoke"];
  list: Pairing["list"];
}

export function createPairingOps(deps: {
  pairing: Pairing;
  channelFor(accountId: string): ChannelConfig | undefined;
  delivery: Pick<Delivery, "notify">;
  logger: Logger;
}): PairingOps {
  const { pairing } = deps;

  /** Approves and, when it worked, tells the person in the chat they asked from. */
  async function approve(channelId: string, codeHash: string, approver: string): Promise<ApprovalResult> {
    const result = await pairing.approve(channelId, codeHash, approver);
    if (result.ok) {
      const target = { platform: result.pending.platform, accountId: channelId, chatId: result.pending.chatId, chatType: "direct" as const };
      void deps.delivery.notify(target, noticeText.pairingApproved).catch((error: unknown) => {
        deps.logger.warn({ err: errorSummary(error), channel: channelId }, "could not tell the approved person");
      });
    }
    return result;
  }

  return {
    async approveFromChat(entry, codeArg) {
      const m = entry.message;
      const channel = deps.channelFor(m.accountId);
      if (!channel || !isListed(channel.access.owners, senderIds(m))) return "Only this channel's owners (access.owners) can approve pairing codes.";
      if (!codeArg) return "Usage: /approve CODE (the code the person was given).";
      const codeHash = codeArg.startsWith(HASHED) ? codeArg.slice(HASHED.length) : hashCode(channel.id, codeArg);
      return describeApproval(await approve(channel.id, codeHash, `chat:${m.userId}`));
    },
    approve: (channelId, codeHash, by = "cli") => approve(channelId, codeHash, by),
    revoke: (channelId, userId) => pairing.revoke(channelId, userId),
    list: (channelId) => pairing.list(channelId),
  };
}

/** An approval's outcome as one sentence (the chat's answer, the command line's output). */
export function describeApproval(result: ApprovalResult): string {
  if (result.ok)
    return `Approved ${result.user.userName ? `${result.user.userName} (${result.user.userId})` : result.user.userId}: they can talk to the agent now.`;
  if (result.reason === "rate_limited") {
    const minutes = Math.max(1, Math.ceil((result.retryAfterMs ?? 0) / 60_000));
    return `Too many wrong pairing codes: approvals on this channel wait ${minutes} more minute${minutes === 1 ? "" : "s"}.`;
  }
  return "That code matches no waiting request: it is wrong, was used already, or expired (codes last one hour).";
}
