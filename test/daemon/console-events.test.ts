/**
 * The operator console's event stream is bounded: a reader that falls behind
 * holds at most a few events (its backlog is dropped and it is told with one
 * `overflow` event, then it goes on); one that stays stalled (overflows again
 * before draining, or pushes back for several keepalive periods) is let go,
 * and its slot serves the next; beyond the cap on open streams the next is
 * refused with 503 and the contract's `{detail}`, until one closes. Over real
 * HTTP: a raw socket that does not read is the slow reader.
 */
import { createServer, type ServerResponse } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it, onTestFinished } from "vitest";
import { ActivityFeed } from "../../daemon/ops/console/activity.js";
import { createEventStream } from "../../daemon/ops/console/event-stream.js";
import { systemClock, type Clock } from "../../shared/clock.js";
import { openSse } from "../helpers/sse-client.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";

/** A server with only the stream on it; `pad` makes each event large enough to fill the socket's buffers. */
async function streamServer(options: { maxQueuedEvents?: number; maxReaders?: number; pad?: number; clock?: Clock; keepaliveMs?: number }) {
  const clock = options.clock ?? systemClock;
  const feed = new ActivityFeed(clock);
  /** The responses served, in order: a test sees when one pushes back. */
  const responses: ServerResponse[] = [];
  const stream = createEventStream({
    clock,
    subscribe: (listener) => feed.subscribe(listener),
    view: (event) => ({ ...event, pad: "x".repeat(options.pad ?? 0) }),
    maxQueuedEvents: options.maxQueuedEvents ?? 1000,
    maxQueuedBytes: 1024 * 1024 * 1024,
    ...(options.maxReaders !== undefined ? { maxReaders: options.maxReaders } : {}),
    ...(options.keepaliveMs !== undefined ? { keepaliveMs: options.keepaliveMs } : {}),
  });
  const server = createServer((_req, res) => {
    if (stream.open(res)) responses.push(res);
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { feed, stream, responses, port: (server.address() as AddressInfo).port };
}

/** A raw HTTP/1.0 reader that has stopped reading (a sleeping laptop); its stream comes unchunked. */
async function stalledReader(port: number) {
  const socket = connect(port, "127.0.0.1");
  onTestFinished(() => void socket.destroy());
  socket.setEncoding("utf8");
  socket.write("GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  socket.pause();
  return socket;
}

/** Emits events until the reader's socket pushes back (its buffers are full); how many it took. */
function fillUntilPushback(feed: ActivityFeed, res: ServerResponse): number {
  let sent = 0;
  // Synchronous: no drain can come between two events. 64 KiB each, far fewer than 2000 fill any socket.
  while (!res.writableNeedDrain && sent < 2000) feed.emit({ type: "queue", at: sent, instance: "one", waiting: sent++, running: 0 });
  expect(res.writableNeedDrain).toBe(true);
  return sent;
}

describe("the console's event stream", () => {
  it("holds at most maxQueuedEvents for a reader that falls behind, tells it what it missed, and goes on", async () => {
    const { feed, stream, responses, port } = await streamServer({ maxQueuedEvents: 5, pad: 64 * 1024 });
    const socket = await stalledReader(port);
    let text = "";
    await waitUntil(() => stream.readers === 1, "the stream attached");
    const filled = fillUntilPushback(feed, responses[0]!);
    // Five wait for the drain; the sixth overflows once: the backlog is dropped.
    for (let i = 0; i < 6; i++) feed.emit({ type: "queue", at: filled + i, instance: "one", waiting: filled + i, running: 0 });
    expect(stream.readers).toBe(1);
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    socket.resume();
    await waitUntil(() => text.includes("event: overflow"), "the overflow notice");
    const overflow = JSON.parse(/event: overflow\ndata: (.*)\n/.exec(text)![1]!) as { dropped: number };
    expect(overflow.dropped).toBeGreaterThan(0);
    // The stream goes on after it: a later event arrives.
    feed.emit({ type: "config", at: 999_999 });
    await waitUntil(() => text.includes("event: config"), "the event after the overflow");
    const delivered = text.split("event: queue").length - 1;
    expect(overflow.dropped).toBe(6);
    expect(delivered + overflow.dropped).toBe(filled + 6);
  });

  it("lets a reader go that overflows again before draining, and its slot serves the next (no 503)", async () => {
    const { feed, stream, responses, port } = await streamServer({ maxQueuedEvents: 5, maxReaders: 1, pad: 64 * 1024 });
    await stalledReader(port);
    await waitUntil(() => stream.readers === 1, "the stream attached");
    const filled = fillUntilPushback(feed, responses[0]!);
    for (let i = 0; i < 6; i++) feed.emit({ type: "queue", at: filled + i, instance: "one", waiting: i, running: 0 });
    expect(responses[0]!.destroyed).toBe(false);
    // Still not reading: the queue fills again and overflows a second time.
    for (let i = 0; i < 6; i++) feed.emit({ type: "queue", at: filled + 6 + i, instance: "one", waiting: i, running: 0 });
    expect(responses[0]!.destroyed).toBe(true);
    await waitUntil(() => stream.readers === 0, "the stalled reader let go");
    const next = await openSse(`http://127.0.0.1:${port}/events`);
    await next.next((f) => f.event === "hello");
    next.close();
  });

  it("lets a reader go that stays pushed back for maxStalledKeepalives periods without a drain, and its slot serves the next", async () => {
    const clock = createSteppableClock();
    const keepaliveMs = 25_000;
    const { feed, stream, responses, port } = await streamServer({ maxQueuedEvents: 1000, maxReaders: 1, pad: 64 * 1024, clock, keepaliveMs });
    await stalledReader(port);
    await waitUntil(() => stream.readers === 1, "the stream attached");
    fillUntilPushback(feed, responses[0]!);
    // No overflow (the queue holds 1000): only time tells that this reader is gone. Three periods are not enough (default 4).
    for (let beat = 1; beat <= 3; beat++) clock.advance(keepaliveMs);
    expect(responses[0]!.destroyed).toBe(false);
    clock.advance(keepaliveMs);
    expect(responses[0]!.destroyed).toBe(true);
    await waitUntil(() => stream.readers === 0, "the stalled reader let go");
    const next = await openSse(`http://127.0.0.1:${port}/events`);
    await next.next((f) => f.event === "hello");
    next.close();
  });

  it("keeps a reader that is slow but drains between keepalives", async () => {
    const clock = createSteppableClock();
    const keepaliveMs = 25_000;
    const { feed, stream, responses, port } = await streamServer({ maxQueuedEvents: 1000, pad: 64 * 1024, clock, keepaliveMs });
    const socket = await stalledReader(port);
    let text = "";
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    await waitUntil(() => stream.readers === 1, "the stream attached");
    for (let round = 0; round < 6; round++) {
      socket.pause();
      const filled = fillUntilPushback(feed, responses[0]!);
      clock.advance(keepaliveMs);
      // It reads again before the next period ends: the socket drains.
      socket.resume();
      await waitUntil(() => !responses[0]!.writableNeedDrain, "the reader caught up");
      expect(filled).toBeGreaterThan(0);
      clock.advance(keepaliveMs);
    }
    expect(responses[0]!.destroyed).toBe(false);
    expect(stream.readers).toBe(1);
    expect(text).toContain(": keepalive");
  });

  it("serves at most maxReaders at once, and another once one leaves", async () => {
    const { stream, port } = await streamServer({ maxReaders: 2 });
    const first = await openSse(`http://127.0.0.1:${port}/events`);
    const second = await openSse(`http://127.0.0.1:${port}/events`);
    await first.next((f) => f.event === "hello");
    const refused = await fetch(`http://127.0.0.1:${port}/events`);
    expect(refused.status).toBe(503);
    first.close();
    await waitUntil(() => stream.readers === 1, "the first reader let go");
    const third = await openSse(`http://127.0.0.1:${port}/events`);
    await third.next((f) => f.event === "hello");
    second.close();
    third.close();
  });
});
