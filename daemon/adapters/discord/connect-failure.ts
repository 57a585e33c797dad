/**
 * Why a gateway connection ended, in words without the token, and whether
 * trying again with the same settings could help. Pure: the connection
 * decides between rebuilding and giving up on `permanent` alone.
 */

/** A reason a connection attempt ended, without the token in it. */
export class ConnectFailure extends Error {
  override readonly name = "ConnectFailure";
  constructor(
    message: string,
    /** True when the same token and intents would be refused again: report "failed", do not retry. */
    readonly permanent: boolean,
  ) {
    super(message);
  }
}

/** Close codes after which re-identifying with the same settings is pointless. */
const PERMANENT_CLOSE: Record<number, string> = {
  4004: "authentication failed: the bot token is invalid or was reset",
  4013: "the gateway refused the requested intents as invalid",
  4014: "disallowed intents: enable the Message Content intent for this bot in the Discord developer portal",
};

/** A gateway close code as a failure: permanent for a refused token or intents, otherwise worth a new client. */
export function closeFailure(code: number): ConnectFailure {
  const permanent = PERMANENT_CLOSE[code];
  return permanent ? new ConnectFailure(permanent, true) : new ConnectFailure(`gateway closed with code ${code}`, false);
}

/** Any error a login or connect threw, as a failure; `redact` removes the token from its text. */
export function connectFailureOf(error: unknown, redact: (text: string) => string): ConnectFailure {
  if (error instanceof ConnectFailure) return error;
  if (error && typeof error === "object" && "code" in error && error.code === "TokenInvalid") {
    return new ConnectFailure("Discord refused the bot token (401)", true);
  }
  return new ConnectFailure(redact(error instanceof Error ? error.message : String(error)), false);
}
