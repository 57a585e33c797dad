/**
 * The WhatsApp adapter's one error class, and the short form of any error
 * that goes into its logs.
 */
import { SendError } from "../../vocabulary/adapter.js";

/** What went wrong, for callers that branch on it. */
export type WhatsAppErrorStatus = "not_connected" | "stopped" | "logged_out" | "failed" | "send_failed" | "auth_failed";

/** The fields a `WhatsAppAdapterError` is made of. */
export interface WhatsAppAdapterErrorInit {
  /** A sentence for the log and the person: what failed and what to do. */
  message: string;
  /** The error's kind; decides `permanent`. */
  reason: WhatsAppErrorStatus;
  /** The error underneath, kept for debugging; never a Baileys error object, which may carry keys. Default: none. */
  cause?: unknown;
}

/** The kinds a person has to act on (pair again, fix the account): the core does not retry them. */
const PERMANENT: ReadonlySet<WhatsAppErrorStatus> = new Set(["logged_out", "auth_failed", "failed"]);

/**
 * Errors are values with a status the core can branch on; as the core's
 * `SendError`, a logged-out or failed account is permanent (pairing again is
 * a person's job), a connection that is down for now is not.
 */
export class WhatsAppAdapterError extends SendError {
  /** The error's kind ("not_connected", "logged_out", ...). */
  readonly reason: WhatsAppErrorStatus;
  constructor(init: WhatsAppAdapterErrorInit) {
    super(init.message, { permanent: PERMANENT.has(init.reason), cause: init.cause });
    this.reason = init.reason;
  }
}

/** A short message for logs: never the error object's data, which may carry keys. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === "string" ? err : "unknown error";
}
