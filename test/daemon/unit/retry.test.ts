/**
 * The one retry module: backoff bounds, an abortable sleep on the injected
 * clock, retries that honour retry-after and never repeat a permanent
 * refusal, and per-key serial execution.
 */
import { describe, expect, it } from "vitest";
import { createManualClock, systemClock } from "../../../shared/clock.js";
import { seededRandom } from "../../../shared/random.js";
import { SendError } from "../../../daemon/vocabulary/adapter.js";
import { classifySendError } from "../../../daemon/core/delivery.js";
import { createSerialQueue, retry, sleep } from "../../../daemon/helpers/retry.js";
import { backoffDelay } from "../../../shared/backoff.js";
import { AbortedError } from "../../../shared/clock.js";

const flush = () => new Promise<void>((r) => setImmediate(r));

describe("retry", () => {
  it("waits the larger of the backoff and the platform's retry-after, and stops at maxAttempts", async () => {
    const clock = createManualClock();
    const waits: number[] = [];
    let calls = 0;
    const run = retry(
      async () => {
        calls++;
        throw new SendError("flood", { permanent: false, retryAfterMs: 5000 });
      },
      {
        clock,
        random: seededRandom(1),
        maxAttempts: 3,
        backoff: { baseMs: 10, maxMs: 100 },
        classify: classifySendError,
        onRetry: (_e, _a, ms) => waits.push(ms),
      },
    );
    const outcome = run.then(
      () => "resolved",
      (e: unknown) => e,
    );
    await flush();
    expect(calls).toBe(1);
    clock.advance(4999);
    await flush();
    expect(calls).toBe(1); // still waiting out retry_after
    clock.advance(1);
    await flush();
    expect(calls).toBe(2);
    clock.advance(5000);
    expect(await outcome).toBeInstanceOf(SendError);
    expect(calls).toBe(3);
    expect(waits).toEqual([5000, 5000]);
  });

  it("never retries a permanent refusal", async () => {
    const clock = createManualClock();
    let calls = 0;
    await expect(
      retry(
        async () => {
          calls++;
          throw new SendError("Forbidden: bot was blocked by the user", { permanent: true, status: 403 });
        },
        { clock, random: seededRandom(1), maxAttempts: 6, backoff: { baseMs: 10, maxMs: 100 }, classify: classifySendError },
      ),
    ).rejects.toMatchObject({ permanent: true });
    expect(calls).toBe(1);
  });

  it("an abort ends the wait at once, with the abort's reason", async () => {
    const clock = createManualClock();
    const abort = new AbortController();
    const waiting = sleep(clock, 60_000, abort.signal);
    abort.abort();
    await expect(waiting).rejects.toMatchObject({ name: "AbortError" });
    const stopping = new AbortController();
    const reason = new Error("stopping");
    const second = sleep(clock, 60_000, stopping.signal);
    stopping.abort(reason);
    await expect(second).rejects.toBe(reason);
    const odd = new AbortController();
    odd.abort("not an error");
    await expect(sleep(clock, 1, odd.signal)).rejects.toBeInstanceOf(AbortedError);
  });

  it("a verdict with its own wait tries again after it without using up a try, and gives up when the wait throws", async () => {
    // Backoff of 0 ms: the system clock's zero-length timer, so no time needs moving.
    const clock = systemClock;
    const attempts: number[] = [];
    let waits = 0;
    const result = await retry(
      async (attempt) => {
        attempts.push(attempt);
        if (attempts.length <= 3) throw new Error("not running yet");
        if (attempts.length === 4) throw new Error("flaky");
        return "ok";
      },
      {
        clock,
        random: seededRandom(1),
        maxAttempts: 2,
        backoff: { baseMs: 0, maxMs: 0 },
        classify: (error) =>
          error instanceof Error && error.message === "not running yet" ? { retry: true, counts: false, wait: async () => void waits++ } : { retry: true },
      },
    );
    expect(result).toBe("ok");
    // Three waits for the instance, then one counted failure and its retry: maxAttempts 2 was enough.
    expect(waits).toBe(3);
    expect(attempts).toEqual([1, 1, 1, 1, 2]);
    const gaveUp = new Error("instance failed");
    await expect(
      retry(
        async () => {
          throw new Error("not running yet");
        },
        {
          clock,
          random: seededRandom(1),
          maxAttempts: 5,
          backoff: { baseMs: 0, maxMs: 0 },
          classify: () => ({ retry: true, counts: false, wait: () => Promise.reject(gaveUp) }),
        },
      ),
    ).rejects.toBe(gaveUp);
  });

  it("backoff grows, is jittered between half and the whole, and is capped", () => {
    const random = seededRandom(2);
    for (let attempt = 1; attempt <= 12; attempt++) {
      const full = Math.min(1000, 10 * 2 ** (attempt - 1));
      const d = backoffDelay(attempt, { baseMs: 10, maxMs: 1000 }, random);
      expect(d).toBeGreaterThanOrEqual(full / 2);
      expect(d).toBeLessThanOrEqual(full);
    }
  });
});

describe("serial queue", () => {
  it("runs one key's tasks in order, other keys beside them, a failure not blocking the rest, and forgets idle keys", async () => {
    const q = createSerialQueue<string>();
    const log: string[] = [];
    let releaseA!: () => void;
    const a1 = q.run("a", () => new Promise<void>((r) => (releaseA = r)).then(() => void log.push("a1")));
    const a2 = q.run("a", async () => void log.push("a2"));
    const failed = q.run("a", async () => {
      throw new Error("boom");
    });
    const a4 = q.run("a", async () => void log.push("a4"));
    const b1 = q.run("b", async () => void log.push("b1"));
    await b1;
    await flush();
    expect(log).toEqual(["b1"]);
    expect(q.size).toBe(1);
    releaseA();
    await Promise.all([a1, a2, a4]);
    await expect(failed).rejects.toThrow("boom");
    expect(log).toEqual(["b1", "a1", "a2", "a4"]);
    await q.idle();
    expect(q.size).toBe(0);
  });
});
