/**
 * What a closed WhatsApp connection means, decided from the close's status
 * code alone (pure, so every rule is unit-tested without a socket):
 *  - 401 (logged out) stops for good, forgets the link and asks for a new one;
 *  - 515 (restart required, sent right after pairing) reconnects at once;
 *  - 403 / 440 (banned, or replaced by another client) stop with "failed",
 *    because reconnecting would only fight the other client: 440 is the
 *    platform's own fencing of a second daemon on the same auth folder;
 *  - anything else reconnects after a growing delay.
 */
import { DisconnectReason } from "@whiskeysockets/baileys";
import { describeError } from "./errors.js";

export type CloseAction = { kind: "logged_out" } | { kind: "restart" } | { kind: "fail"; detail: string } | { kind: "retry"; reason: string };

/** The status code Baileys puts on a close: a Boom's `output.statusCode`. */
export function disconnectCode(error: unknown): number | undefined {
  if (!error || typeof error !== "object") return undefined;
  const output = (error as { output?: unknown }).output;
  if (output && typeof output === "object") {
    const code = (output as { statusCode?: unknown }).statusCode;
    if (typeof code === "number") return code;
  }
  return undefined;
}

/** What to do after a close with `error` (Baileys' `lastDisconnect.error`). */
export function closeAction(error: unknown): CloseAction {
  const code = disconnectCode(error);
  switch (code) {
    case DisconnectReason.loggedOut:
      return { kind: "logged_out" };
    case DisconnectReason.restartRequired:
      return { kind: "restart" };
    case DisconnectReason.connectionReplaced:
      return { kind: "fail", detail: "another client took over this WhatsApp session (a second daemon on the same auth dir?)" };
    case DisconnectReason.forbidden:
      return { kind: "fail", detail: "WhatsApp refused this account (403)" };
    default:
      return { kind: "retry", reason: `connection closed (${code ?? describeError(error)})` };
  }
}
