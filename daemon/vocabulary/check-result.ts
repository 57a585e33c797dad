/**
 * One check's outcome, as a person reads it: what was checked, what was
 * found, and (on a problem) what to change. Never carries a secret.
 */
export type CheckStatus = "ok" | "warn" | "fail" | "skip";

export interface CheckResult {
  status: CheckStatus;
  /** What was checked: `service`, `instance inst_1`, `channel tg (telegram)`. */
  subject: string;
  /** What was found. */
  message: string;
  /** What to change, when something is wrong. */
  fix?: string;
}

/** The subject of a channel's check: `channel tg (telegram)`. */
export const channelSubject = (channel: { id: string; type: string }) => `channel ${channel.id} (${channel.type})`;

const MARK: Record<CheckStatus, string> = { ok: "ok  ", warn: "warn", fail: "FAIL", skip: "skip" };

/** `FAIL  instance inst_1: not found on the service. Fix: ...` */
export function formatResult(r: CheckResult): string {
  return `${MARK[r.status]}  ${r.subject}: ${r.message}${r.fix ? `. Fix: ${r.fix}` : ""}`;
}
