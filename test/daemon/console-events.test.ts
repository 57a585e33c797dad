/**
 * The operator console's event stream is bounded: a reader that stops
 * reading holds at most a few events (its backlog is dropped and it is told
 * with one `overflow` event, then it goes on), and beyond the cap on open
 * streams the next is refused with 503 and the contract's `{detail}`, until
 * one closes. Over real HTTP: a raw socket that does not read is the slow reader.
 */
import { createServer } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it, onTestFinished } from "vitest";
import { ActivityFeed } from "../../daemon/ops/console/activity.js";
import { createEventStream } from "../../daemon/ops/console/event-stream.js";
import { systemClock } from "../../shared/clock.js";
import { openSse } from "../helpers/sse-client.js";
import { waitUntil } from "../helpers/wait.js";

/** A server with only the stream on it; `pad` makes each event large enough to fill the socket's buffers. */
async function streamServer(options: { maxQueuedEvents?: number; maxReaders?: number; pad?: number }) {
  const feed = new ActivityFeed(systemClock);
  const stream = createEventStream({
    clock: systemClock,
    subscribe: (listener) => feed.subscribe(listener),
    view: (event) => ({ ...event, pad: "x".repeat(options.pad ?? 0) }),
    maxQueuedEvents: options.maxQueuedEvents ?? 1000,
    maxQueuedBytes: 1024 * 1024 * 1024,
    ...(options.maxReaders !== undefined ? { maxReaders: options.maxReaders } : {}),
  });
  const server = createServer((_req, res) => {
    if (!stream.open(res)) res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { feed, stream, port: (server.address() as AddressInfo).port };
}

describe("the console's event stream", () => {
  it("holds at most maxQueuedEvents for a reader that stops reading, tells it what it missed, and goes on", async () => {
    const { feed, stream, port } = await streamServer({ maxQueuedEvents: 5, pad: 64 * 1024 });
    // HTTP/1.0: the stream comes unchunked, so the frames can be read off the socket as they are.
    const socket = connect(port, "127.0.0.1");
    onTestFinished(() => void socket.destroy());
    let text = "";
    socket.setEncoding("utf8");
    socket.write("GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    socket.pause();
    await waitUntil(() => stream.readers === 1, "the stream attached");
    // 400 events of 64 KiB (25 MiB): far more than the socket's buffers take while nobody reads.
    for (let i = 0; i < 400; i++) feed.emit({ type: "queue", at: i, instance: "one", waiting: i, running: 0 });
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
    expect(delivered + overflow.dropped).toBe(400);
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
