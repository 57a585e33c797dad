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

const MARK: Record<CheckStatus, string> = { ok: "ok  ", warn: "warn", fail: "FAIL", skip: "skip" };

/** `FAIL  instance inst_1: not found on the service. Fix: ...` */
export function formatResult(r: CheckResult): string {
  return `${MARK[r.status]}  ${r.subject}: ${r.message}${r.fix ? `. Fix: ${r.fix}` : ""}`;
}

/** How an HTTP probe ended: an answer, or why none came. */
export type ProbeOutcome = { kind: "answer"; status: number; body: unknown } | { kind: "unreachable"; reason: string };

export interface ProbeDeps {
  /** Defaults to the global fetch; tests may pass their own. */
  fetch: typeof fetch;
  /** Per request. */
  timeoutMs: number;
}

/** Sends one request and reads its JSON body (if any); network failures become `unreachable`. */
export async function probe(deps: ProbeDeps, url: string, init: RequestInit = {}): Promise<ProbeOutcome> {
  let res: Response;
  try {
    res = await deps.fetch(url, { ...init, signal: AbortSignal.timeout(deps.timeoutMs) });
  } catch (error) {
    return { kind: "unreachable", reason: networkReason(error, deps.timeoutMs) };
  }
  const text = await res.text().catch(() => "");
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { kind: "answer", status: res.status, body };
}

/** "connection refused", "no answer within 10000 ms": never the URL (it may hold a token). */
function networkReason(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return `no answer within ${timeoutMs} ms`;
  const cause = error instanceof Error ? (error.cause as NodeJS.ErrnoException | undefined) : undefined;
  const code = cause?.code;
  const words: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "host name lookup failed",
    ECONNRESET: "connection reset",
    ETIMEDOUT: "connection timed out",
    EHOSTUNREACH: "host unreachable",
  };
  if (code && words[code]) return words[code];
  if (code) return code;
  return "no connection";
}
