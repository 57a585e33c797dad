/**
 * The reconnect loop's memory, without HTTP: each failure in a row backs off
 * one step further, a poll that answers starts over, and "connected" is said
 * again only after polls failed on a live connection.
 */
import { describe, expect, it } from "vitest";
import { LinkHealth } from "../../../daemon/adapters/telegram/link-health.js";

describe("LinkHealth", () => {
  it("counts failures in a row as backoff attempts, and starts over once a poll answers", () => {
    const health = new LinkHealth(0);
    expect([health.failed(true), health.failed(true), health.failed(false)]).toEqual([1, 2, 3]);
    health.answered();
    expect(health.failed(true)).toBe(1);
  });

  it("continues from the first attempt when the loop starts without a connection (start could not connect)", () => {
    const health = new LinkHealth(1);
    expect(health.failed(false)).toBe(2);
  });

  it('asks for "connected" to be said again only after a poll failed on a live connection', () => {
    const health = new LinkHealth(0);
    expect(health.answered()).toBe(false);
    health.failed(true);
    health.failed(true);
    expect(health.answered()).toBe(true);
    expect(health.answered()).toBe(false);
  });

  it("does not ask for it after failed connects alone (a successful connect says it)", () => {
    const health = new LinkHealth(1);
    health.failed(false);
    expect(health.answered()).toBe(false);
  });
});
