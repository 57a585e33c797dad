/**
 * The Discord connection's pure decisions: which gateway closes and login
 * errors end the adapter for good (the same token would be refused again),
 * and how far into its backoff a client rebuild starts. The connection itself
 * runs against the fake gateway in ../discord-adapter.test.ts.
 */
import { describe, expect, it } from "vitest";
import { closeFailure, ConnectFailure, connectFailureOf } from "../../../daemon/adapters/discord/connect-failure.js";
import { RebuildStreak } from "../../../daemon/adapters/discord/rebuild-streak.js";

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

describe("RebuildStreak", () => {
  it("goes on backing off while connections keep breaking soon after they came up", () => {
    const streak = new RebuildStreak(60_000);
    // A rebuild before any connection lasted counts as unstable too.
    expect(streak.rebuild(5_000)).toBe(1);
    streak.connected(10_000);
    expect(streak.rebuild(20_000)).toBe(2);
    streak.connected(25_000);
    expect(streak.rebuild(84_999)).toBe(3);
  });

  it("starts from zero (connect at once) after a connection that lasted", () => {
    const streak = new RebuildStreak(60_000);
    expect(streak.rebuild(1_000)).toBe(1);
    streak.connected(2_000);
    expect(streak.rebuild(62_000)).toBe(0);
    streak.connected(63_000);
    expect(streak.rebuild(64_000)).toBe(1);
  });
});
