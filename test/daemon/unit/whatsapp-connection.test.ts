/**
 * The WhatsApp connection's pure rules: what a close code means (stop for
 * good, restart now, fail, or retry), how long a reconnect waits, and how
 * sends wait for the connection to come back.
 */
import { describe, expect, it } from "vitest";
import { RECONNECT_BACKOFF } from "../../../daemon/adapters/whatsapp/connection.js";
import { closeAction, disconnectCode } from "../../../daemon/adapters/whatsapp/disconnect.js";
import { OpenWaiters } from "../../../daemon/adapters/whatsapp/open-waiters.js";
import { backoffDelay } from "../../../shared/backoff.js";
import { createManualClock } from "../../../shared/clock.js";
import { seededRandom } from "../../../shared/random.js";

/** What Baileys puts in `lastDisconnect.error`: a Boom with the status in `output.statusCode`. */
const boom = (statusCode: number) => Object.assign(new Error(`closed ${statusCode}`), { output: { statusCode } });

describe("closeAction", () => {
  it("forgets the link on 401, reconnects at once on 515, and stops on 403 and on 440 (another client took over)", () => {
    expect(closeAction(boom(401))).toEqual({ kind: "logged_out" });
    expect(closeAction(boom(515))).toEqual({ kind: "restart" });
    expect(closeAction(boom(403))).toMatchObject({ kind: "fail", detail: expect.stringContaining("403") });
    expect(closeAction(boom(440))).toMatchObject({ kind: "fail", detail: expect.stringContaining("another client") });
  });

  it("retries every other close, naming the code (or the error when there is none)", () => {
    expect(closeAction(boom(428))).toEqual({ kind: "retry", reason: "connection closed (428)" });
    expect(closeAction(boom(503))).toEqual({ kind: "retry", reason: "connection closed (503)" });
    expect(closeAction(new Error("socket hang up"))).toEqual({ kind: "retry", reason: "connection closed (socket hang up)" });
    expect(closeAction(undefined)).toEqual({ kind: "retry", reason: "connection closed (unknown error)" });
  });

  it("reads the status only from a Boom's output", () => {
    expect(disconnectCode(boom(440))).toBe(440);
    expect(disconnectCode({ output: { statusCode: "440" } })).toBeUndefined();
    expect(disconnectCode("440")).toBeUndefined();
  });
});

describe("reconnect backoff", () => {
  it("stays within [ceiling/2, ceiling) and the ceiling grows to a cap", () => {
    const random = seededRandom("backoff");
    const backoffCeiling = (failures: number) => backoffDelay(failures + 1, RECONNECT_BACKOFF, { bytes: (n) => Buffer.alloc(n), float: () => 1 });
    for (let attempt = 0; attempt < 12; attempt++) {
      const ceiling = backoffCeiling(attempt);
      for (let i = 0; i < 20; i++) {
        const d = backoffDelay(attempt + 1, RECONNECT_BACKOFF, random);
        expect(d).toBeGreaterThanOrEqual(ceiling / 2);
        expect(d).toBeLessThan(ceiling);
      }
    }
    expect(backoffCeiling(1)).toBeGreaterThan(backoffCeiling(0));
    expect(backoffCeiling(50)).toBe(60_000);
  });
});

describe("OpenWaiters", () => {
  const closed = () => new Error("not connected");

  it("releases every waiting send with the socket that opened, and their timers no longer fire", async () => {
    const clock = createManualClock();
    const waiters = new OpenWaiters<string>(clock, 1_000);
    const sends = [waiters.wait(closed), waiters.wait(closed)];
    clock.advance(999);
    waiters.resolveAll("socket-2");
    clock.advance(10_000);
    await expect(Promise.all(sends)).resolves.toEqual(["socket-2", "socket-2"]);
    expect(waiters.size).toBe(0);
  });

  it("refuses a send that waited its time, and only that one", async () => {
    const clock = createManualClock();
    const waiters = new OpenWaiters<string>(clock, 1_000);
    const early = waiters.wait(closed);
    clock.advance(500);
    const late = waiters.wait(closed);
    clock.advance(500);
    await expect(early).rejects.toThrow("not connected");
    expect(waiters.size).toBe(1);
    waiters.resolveAll("socket");
    await expect(late).resolves.toBe("socket");
  });

  it("refuses all at once when the channel stops", async () => {
    const clock = createManualClock();
    const waiters = new OpenWaiters<string>(clock, 1_000);
    const sends = [waiters.wait(closed), waiters.wait(closed)];
    waiters.rejectAll(new Error("stopped"));
    for (const send of sends) await expect(send).rejects.toThrow("stopped");
    expect(waiters.size).toBe(0);
  });
});
