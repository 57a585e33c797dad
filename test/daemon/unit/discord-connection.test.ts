/**
 * The Discord connection's pure decisions: which gateway closes and login
 * errors end the adapter for good (the same token would be refused again).
 * How far into its backoff a client rebuild starts is the one reconnect
 * loop's rule (./reconnect.test.ts: healthyAfterMs, retryHealthyAtOnce). The
 * connection itself runs against the fake gateway in ../discord-adapter.test.ts.
 */
import { describe, expect, it } from "vitest";
import { closeFailure, ConnectFailure, connectFailureOf } from "../../../daemon/adapters/discord/connect-failure.js";

const TOKEN = "MTA0.secret-token";
const redact = (text: string) => text.split(TOKEN).join("[redacted]");

describe("closeFailure", () => {
  it("gives up on a refused token or refused intents, and says what to do about the intents", () => {
    for (const code of [4004, 4013, 4014]) expect(closeFailure(code).permanent, String(code)).toBe(true);
    expect(closeFailure(4014).message).toMatch(/enable the Message Content intent/);
  });

  it("rebuilds after any other close", () => {
    for (const code of [1000, 1006, 4000, 4007, 4009, 4900]) {
      expect(closeFailure(code)).toMatchObject({ permanent: false, message: `gateway closed with code ${code}` });
    }
  });
});

describe("connectFailureOf", () => {
  it("treats discord.js's TokenInvalid as permanent, without repeating the token", () => {
    const refused = Object.assign(new Error(`An invalid token was provided: ${TOKEN}`), { code: "TokenInvalid" });
    const failure = connectFailureOf(refused, redact);
    expect(failure).toMatchObject({ name: "ConnectFailure", permanent: true, message: "Discord refused the bot token (401)" });
  });

  it("keeps other errors retryable, with the token scrubbed from their text", () => {
    const failure = connectFailureOf(new Error(`connect ECONNREFUSED while sending ${TOKEN}`), redact);
    expect(failure).toMatchObject({ permanent: false, message: "connect ECONNREFUSED while sending [redacted]" });
    expect(connectFailureOf("socket hang up", redact)).toMatchObject({ permanent: false, message: "socket hang up" });
  });

  it("passes a ConnectFailure through as it is", () => {
    const own = new ConnectFailure("gateway not ready within 45000 ms", false);
    expect(connectFailureOf(own, redact)).toBe(own);
  });
});
