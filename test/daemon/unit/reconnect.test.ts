/**
 * The one reconnect loop (daemon/helpers/reconnect.ts), on a manual clock:
 * sessions are held open or ended by the test, and time moves only when the
 * test moves it, so every delay is asserted to the millisecond without a
 * real wait.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { createManualClock, type ManualClock } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import {
  DEFAULT_RECONNECT_BACKOFF,
  type ReconnectOptions,
  type ReconnectStatus,
  type SessionContext,
  SessionEnded,
  startReconnectLoop,
  untilAborted,
} from "../../../daemon/helpers/reconnect.js";

/** Jitter fixed at its top: every delay is the full exponential step. */
const top: Random = { bytes: (n) => Buffer.alloc(n), float: () => 1 };
const flush = () => new Promise<void>((r) => setImmediate(r));

interface Held {
  ctx: SessionContext;
  /** The link ends by itself. */
  end(): void;
  fail(error: unknown): void;
}

/** A loop whose sessions the test holds: each started session waits for the test to end or fail it. */
function harness(options: Partial<ReconnectOptions> & { clock?: ManualClock } = {}) {
  const clock = options.clock ?? createManualClock();
  const held: Held[] = [];
  const statuses: ReconnectStatus[] = [];
  const stop = new AbortController();
  const loop = startReconnectLoop({
    clock,
    random: top,
    backoff: { baseMs: 100, maxMs: 1000 },
    signal: stop.signal,
    onStatus: (s) => statuses.push(s),
    session: (ctx) =>
      new Promise<void>((resolve, reject) => {
        held.push({ ctx, end: resolve, fail: reject });
        // A held session ends with the loop's signal, as a real one must.
        ctx.signal.addEventListener("abort", () => resolve(), { once: true });
      }),
    ...options,
  });
  /** Session n (from 0), once it has started. */
  const session = async (n: number): Promise<Held> => {
    // A try at once starts a turn of the event loop later (the loop yields between tries).
    for (let turn = 0; turn < 3 && !held[n]; turn++) await flush();
    const s = held[n];
    if (!s) throw new Error(`session ${n} has not started (${held.length} did)`);
    return s;
  };
  const reconnecting = () => statuses.filter((s) => s.state === "reconnecting");
  return { clock, held, statuses, stop, loop, session, reconnecting };
}

describe("startReconnectLoop", () => {
  it("connects, and after a drop waits the backoff on the clock, not a millisecond less, before the next session", async () => {
    const h = harness();
    const first = await h.session(0);
    expect(first.ctx.attempt).toBe(0);
    first.ctx.connected("as bot");
    expect(await h.loop.firstOutcome).toBe("connected");
    first.end();
    await flush();
    expect(h.statuses).toEqual([
      { state: "connected", detail: "as bot" },
      { state: "reconnecting", attempt: 1, delayMs: 100, error: expect.any(SessionEnded), detail: "the connection ended", reason: "closed" },
    ]);
    h.clock.advance(99);
    await flush();
    expect(h.held).toHaveLength(1);
    h.clock.advance(1);
    expect((await h.session(1)).ctx.attempt).toBe(1);
  });

  it("grows the wait while tries keep failing, up to the ceiling, and starts over once a session connects", async () => {
    const h = harness();
    for (let n = 0; n < 5; n++) {
      (await h.session(n)).fail(new Error(`refused ${n}`));
      await flush();
      h.clock.advance(h.reconnecting()[n]!.delayMs);
    }
    expect(h.reconnecting().map((s) => s.state === "reconnecting" && [s.attempt, s.delayMs, s.detail])).toEqual([
      [1, 100, "refused 0"],
      [2, 200, "refused 1"],
      [3, 400, "refused 2"],
      [4, 800, "refused 3"],
      [5, 1000, "refused 4"],
    ]);
    const sixth = await h.session(5);
    sixth.ctx.connected();
    sixth.end();
    await flush();
    expect(h.reconnecting().at(-1)).toMatchObject({ attempt: 1, delayMs: 100 });
  });

  it("says the first try failed at once, so a start never waits for an outage to end", async () => {
    const h = harness();
    (await h.session(0)).fail(new Error("ECONNREFUSED"));
    expect(await h.loop.firstOutcome).toBe("retrying");
  });

  it("with healthyAfterMs, starts over only after a session that stayed up that long; a shorter one keeps backing off", async () => {
    const h = harness({ healthyAfterMs: 60_000 });
    const s0 = await h.session(0);
    s0.ctx.connected();
    h.clock.advance(59_999);
    s0.end();
    await flush();
    h.clock.advance(100);
    const s1 = await h.session(1);
    s1.ctx.connected();
    h.clock.advance(10);
    s1.fail(new Error("dropped"));
    await flush();
    // Two short-lived sessions in a row: the second wait doubled.
    expect(h.reconnecting().map((s) => s.state === "reconnecting" && s.delayMs)).toEqual([100, 200]);
    h.clock.advance(200);
    const s2 = await h.session(2);
    s2.ctx.connected();
    h.clock.advance(60_000);
    s2.fail(new Error("dropped after a minute"));
    await flush();
    expect(h.reconnecting().at(-1)).toMatchObject({ attempt: 1, delayMs: 100 });
  });

  it("with retryHealthyAtOnce, re-makes a link that lasted at once, then backs off from the base", async () => {
    const h = harness({ healthyAfterMs: 60_000, retryHealthyAtOnce: true });
    const s0 = await h.session(0);
    s0.ctx.connected();
    h.clock.advance(60_000);
    s0.fail(new Error("gateway closed with code 1006"));
    const s1 = await h.session(1);
    expect(h.reconnecting().at(-1)).toMatchObject({ attempt: 1, delayMs: 0 });
    s1.fail(new Error("still down"));
    await flush();
    expect(h.reconnecting().at(-1)).toMatchObject({ attempt: 2, delayMs: 100 });
  });

  it("with healthyAfterMs Infinity, only the session's own healthy() starts the backoff over", async () => {
    const h = harness({ healthyAfterMs: Number.POSITIVE_INFINITY });
    const s0 = await h.session(0);
    s0.ctx.connected();
    h.clock.advance(3_600_000);
    s0.fail(new Error("poll failed"));
    await flush();
    h.clock.advance(100);
    const s1 = await h.session(1);
    s1.fail(new Error("poll failed"));
    await flush();
    h.clock.advance(200);
    const s2 = await h.session(2);
    s2.ctx.healthy();
    s2.fail(new Error("poll failed"));
    await flush();
    expect(h.reconnecting().map((s) => s.state === "reconnecting" && s.delayMs)).toEqual([100, 200, 100]);
  });

  it("says connected once per link, however often the session repeats it, and again after a reconnect", async () => {
    const h = harness();
    const s0 = await h.session(0);
    s0.ctx.connected("@bot");
    s0.ctx.connected("@bot");
    s0.end();
    await flush();
    h.clock.advance(100);
    const s1 = await h.session(1);
    s1.ctx.connected("@bot");
    s1.ctx.connected("@bot");
    expect(h.statuses.map((s) => s.state)).toEqual(["connected", "reconnecting", "connected"]);
  });

  it("ends on a fatal verdict: failed once, no further session, and start hears it", async () => {
    const refused = new Error("401 token refused");
    const h = harness({ classify: (e) => (e === refused ? { fatal: true, detail: "the token was refused" } : {}) });
    (await h.session(0)).fail(refused);
    expect(await h.loop.done).toEqual({ state: "failed", error: refused, detail: "the token was refused" });
    expect(await h.loop.firstOutcome).toBe("failed");
    expect(h.statuses).toEqual([{ state: "failed", error: refused, detail: "the token was refused" }]);
    h.clock.advance(DEFAULT_RECONNECT_BACKOFF.maxMs * 10);
    await flush();
    expect(h.held).toHaveLength(1);
  });

  it("waits at least a server's retry-after, still counting the failure", async () => {
    const h = harness({ classify: () => ({ afterMs: 5000, detail: "rate limited" }) });
    (await h.session(0)).fail(new Error("429"));
    await flush();
    h.clock.advance(5000);
    (await h.session(1)).fail(new Error("429"));
    await flush();
    expect(h.reconnecting().map((s) => s.state === "reconnecting" && [s.attempt, s.delayMs])).toEqual([
      [1, 5000],
      [2, 5000],
    ]);
  });

  it("re-makes at once, without counting, a link the platform asked to renew; the reason reaches the status", async () => {
    const refresh = new Error("refresh_requested");
    const h = harness({ classify: (e) => (e === refresh ? { atOnce: true, reason: "refresh" } : {}) });
    (await h.session(0)).fail(new Error("down"));
    await flush();
    h.clock.advance(100);
    (await h.session(1)).fail(refresh);
    (await h.session(2)).fail(new Error("down again"));
    await flush();
    expect(h.reconnecting().map((s) => s.state === "reconnecting" && [s.attempt, s.delayMs, s.reason])).toEqual([
      [1, 100, undefined],
      [2, 0, "refresh"],
      [3, 200, undefined],
    ]);
  });

  it("an at-once verdict again, with no healthy session in between, counts as a failure: a platform that always asks for a new link is backed off, not hammered", async () => {
    const h = harness({ classify: () => ({ atOnce: true, detail: "restart required" }) });
    for (let n = 0; n < 6; n++) {
      (await h.session(n)).fail(new Error("515"));
      await flush();
      const wait = h.reconnecting()[n]!.delayMs;
      if (wait > 0) {
        // Not a millisecond early: the next connection waits the whole delay.
        h.clock.advance(wait - 1);
        await flush();
        expect(h.held).toHaveLength(n + 1);
        h.clock.advance(1);
      }
    }
    // The first is the platform's normal request (free); each repeat waits the shared backoff.
    expect(h.reconnecting().map((s) => s.state === "reconnecting" && [s.attempt, s.delayMs])).toEqual([
      [1, 0],
      [2, 100],
      [3, 200],
      [4, 400],
      [5, 800],
      [6, 1000],
    ]);
    // The status says the request came again before any link worked.
    expect(h.reconnecting()[0]).toMatchObject({ detail: "restart required" });
    expect(h.reconnecting()[1]).toMatchObject({ detail: "restart required (again, with no working connection in between)" });
  });

  it("an at-once verdict after a healthy session is free again, and the backoff starts over from the base", async () => {
    const h = harness({ classify: (e) => (e instanceof SessionEnded ? {} : { atOnce: true }) });
    (await h.session(0)).fail(new Error("515 after pairing"));
    (await h.session(1)).fail(new Error("515 again"));
    await flush();
    h.clock.advance(100);
    const s2 = await h.session(2);
    s2.ctx.connected();
    s2.fail(new Error("renew after a working link"));
    // No clock movement: the link that worked is re-made at once.
    const s3 = await h.session(3);
    s3.end();
    await flush();
    expect(h.reconnecting().map((s) => s.state === "reconnecting" && s.delayMs)).toEqual([0, 100, 0, 100]);
  });

  it("a session that connects and ends at once, again and again, lets the process run between tries, so a stop can reach it", async () => {
    let sessions = 0;
    const h = harness({
      classify: () => ({ atOnce: true }),
      session: async (ctx) => {
        sessions++;
        // Connected each time, so each at-once verdict is free: every try comes at once.
        ctx.connected();
        throw new Error("renew");
      },
    });
    // Before the fix the loop ran every try in one go of microtasks: this timer never ran.
    await flush();
    expect(sessions).toBeGreaterThan(0);
    h.stop.abort();
    expect(await h.loop.done).toEqual({ state: "stopped" });
  });

  it("stops at once when aborted during the wait: the timer goes, no session starts, done says stopped", async () => {
    const h = harness();
    (await h.session(0)).fail(new Error("down"));
    await flush();
    h.stop.abort();
    expect(await h.loop.done).toEqual({ state: "stopped" });
    expect(h.statuses.at(-1)).toEqual({ state: "stopped" });
    h.clock.advance(10_000);
    await flush();
    expect(h.held).toHaveLength(1);
  });

  it("stops a running session through its signal, and reports no reconnect for the end it caused", async () => {
    const h = harness();
    const s0 = await h.session(0);
    s0.ctx.connected();
    h.stop.abort();
    expect(s0.ctx.signal.aborted).toBe(true);
    expect(await h.loop.done).toEqual({ state: "stopped" });
    expect(h.statuses.map((s) => s.state)).toEqual(["connected", "stopped"]);
    // A session that says "connected" after the stop is not believed.
    s0.ctx.connected();
    expect(h.statuses.map((s) => s.state)).toEqual(["connected", "stopped"]);
  });

  it("never starts when the signal aborted before it", async () => {
    const stop = new AbortController();
    stop.abort();
    const h = harness({ signal: stop.signal });
    expect(await h.loop.done).toEqual({ state: "stopped" });
    expect(await h.loop.firstOutcome).toBe("stopped");
    expect(h.held).toHaveLength(0);
  });

  it("treats a session that throws synchronously like one that rejects", async () => {
    const h = harness({
      session: () => {
        throw new Error("socket could not be created");
      },
    });
    await flush();
    expect(h.reconnecting()[0]).toMatchObject({ detail: "socket could not be created", delayMs: 100 });
    h.stop.abort();
    await h.loop.done;
  });

  it("keeps going when a status listener throws", async () => {
    const h = harness({
      onStatus: () => {
        throw new Error("listener broke");
      },
    });
    (await h.session(0)).fail(new Error("down"));
    await flush();
    h.clock.advance(100);
    await h.session(1);
  });

  it("names errors with the platform's describe, so a token in an error's text never reaches the status", async () => {
    const h = harness({ describe: (e) => (e instanceof Error ? e.message : String(e)).replace("xoxb-secret", "[redacted]") });
    (await h.session(0)).fail(new Error("bad token xoxb-secret"));
    await flush();
    expect(h.reconnecting()[0]).toMatchObject({ detail: "bad token [redacted]" });
  });

  it("a classify or describe that throws is the platform's bug, not the link's: the loop retries as by default and never rejects", async () => {
    const h = harness({
      classify: () => {
        throw new Error("classify bug");
      },
      describe: () => {
        throw new Error("describe bug with xoxb-secret");
      },
    });
    (await h.session(0)).fail(new Error("bad token xoxb-secret"));
    expect(await h.loop.firstOutcome).toBe("retrying");
    expect(h.reconnecting()).toEqual([expect.objectContaining({ attempt: 1, delayMs: 100, detail: "the error could not be described" })]);
    h.clock.advance(100);
    (await h.session(1)).ctx.connected();
    h.stop.abort();
    expect(await h.loop.done).toEqual({ state: "stopped" });
  });

  it("untilAborted: resolves when the signal aborts, at once when it already has", async () => {
    const stop = new AbortController();
    let resolved = false;
    const waiting = untilAborted(stop.signal).then(() => (resolved = true));
    await flush();
    expect(resolved).toBe(false);
    stop.abort();
    await waiting;
    await untilAborted(stop.signal);
  });
});

describe("one reconnect loop", () => {
  it("no adapter writes its own: only the loop and Telegram's empty-poll pacing use the backoff directly", () => {
    const repo = resolve(import.meta.dirname, "../../..");
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
      );
    // Pacing a server that answers empty polls at once is not a reconnect: the link works.
    const allowed = new Set(["daemon/adapters/telegram/polling.ts"]);
    const found = sources(join(repo, "daemon/adapters"))
      .map((file) => relative(repo, file).split("\\").join("/"))
      .filter((file) => !allowed.has(file))
      .filter((file) => /\b(createBackoff|backoffDelay)\b/.test(readFileSync(join(repo, file), "utf8")));
    expect(found).toEqual([]);
    // The guard reads real files: the allowed one is among them and does use it.
    expect(readFileSync(join(repo, "daemon/adapters/telegram/polling.ts"), "utf8")).toMatch(/createBackoff/);
  });
});
