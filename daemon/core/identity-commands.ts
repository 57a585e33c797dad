/**
 * The `/link` and `/unlink` commands: what a person is told when they link
 * their direct chats on two apps, or undo it. The links themselves are kept
 * by identity-links.ts; the command runner (command-runner.ts) calls these.
 */
import type { Logger } from "pino";
import { accountKeyOf } from "../vocabulary/keys.js";
import type { JournalEntry } from "../vocabulary/records.js";
import { hashLinkCode, type IdentityLinks } from "./identity-links.js";
import { HASHED } from "./intake.js";
import { noticeText } from "./notices.js";

export interface IdentityCommandsDeps {
  links: IdentityLinks;
  logger: Logger;
}

export interface IdentityCommands {
  /** `/link` and `/link CODE`, in a direct chat. */
  link(entry: JournalEntry, codeArg: string): Promise<string>;
  /** `/unlink`, in a direct chat. */
  unlink(entry: JournalEntry): Promise<string>;
}

const identityOf = (entry: JournalEntry) => ({ platform: entry.message.platform, accountId: entry.message.accountId, userId: entry.message.userId });

export function createIdentityCommands(deps: IdentityCommandsDeps): IdentityCommands {
  const { links } = deps;
  const log = deps.logger;

  /** `/link` and `/link CODE`, in a direct chat. */
  async function linkCommand(entry: JournalEntry, codeArg: string): Promise<string> {
    if (entry.message.chatType !== "direct") return noticeText.linkDirectOnly;
    const me = identityOf(entry);
    if (!codeArg) return noticeText.linkCode(await links.newCode(me));
    const codeHash = codeArg.startsWith(HASHED) ? codeArg.slice(HASHED.length) : hashLinkCode(codeArg);
    const result = await links.redeem(me, codeHash);
    if (!result.ok) return noticeText.linkRefused(result.reason);
    log.info({ platform: me.platform, accountId: me.accountId, with: accountKeyOf(result.other.platform, result.other.accountId) }, "identities linked");
    return noticeText.linked(`${result.other.platform} (${result.other.accountId})`);
  }

  /** `/unlink`, in a direct chat. */
  async function unlinkCommand(entry: JournalEntry): Promise<string> {
    if (entry.message.chatType !== "direct") return noticeText.linkDirectOnly;
    const result = await links.unlink(identityOf(entry));
    if (result === "configured") return noticeText.unlinkConfigured;
    if (result === "none") return noticeText.notLinked;
    log.info({ platform: entry.message.platform, accountId: entry.message.accountId, others: result.length }, "identities unlinked");
    return noticeText.unlinked(result.map((o) => `${o.platform} (${o.accountId})`));
  }

  return { link: linkCommand, unlink: unlinkCommand };
}
