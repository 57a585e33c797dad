/**
 * The console's live events (`/ui/api/events`, server-sent events), bounded:
 * at most `maxReaders` streams at once (the next is refused with 503 and a
 * sentence, never left hanging), and each reader's backlog held by the
 * shared bounded client (shared/http/sse-client.ts): past `maxQueuedEvents`
 * (or the bytes) its backlog is dropped and it gets one `overflow` event,
 * on which the page reloads what it shows. A reader that stays stalled is
 * let go (its socket destroyed, its slot freed): when it overflows a second
 * time before draining, or when `maxStalledKeepalives` keepalive periods pass
 * without a drain; otherwise a few sleeping laptops would hold every slot
 * until TCP gives up, and everyone else would get 503.
 */
import type { ServerResponse } from "node:http";
import type { Clock } from "../../../shared/clock.js";
import { createSseClient } from "../../../shared/http/sse-client.js";
import { CONSOLE_SECURITY_HEADERS } from "../../../shared/web-console.js";
import type { ActivityEvent } from "./activity.js";

export interface EventStreamOptions {
  clock: Clock;
  /** Where the events come from; returns the unsubscribe. */
  subscribe(listener: (event: ActivityEvent) => void): () => void;
  /** What a reader sees of an event (the console adds chat names); undefined leaves it out. */
  view(event: ActivityEvent): unknown;
  /** Streams open at once (default 16: a browser holds six per origin, an operator a few tabs). */
  maxReaders?: number;
  /** Events a reader may fall behind by before its backlog is dropped (default 1000). */
  maxQueuedEvents?: number;
  /** Bytes likewise (default 1 MiB). */
  maxQueuedBytes?: number;
  /** A comment line this often keeps proxies from closing an idle stream (default 25 s). */
  keepaliveMs?: number;
  /** Keepalive periods a reader may stay pushed back without a drain before it is let go (default 4: under two minutes). */
  maxStalledKeepalives?: number;
}

export interface EventStream {
  /** Serves one reader; false (nothing written) when `maxReaders` are open. */
  open(res: ServerResponse): boolean;
  readonly readers: number;
}

export function createEventStream(options: EventStreamOptions): EventStream {
  const maxReaders = options.maxReaders ?? 16;
  let readers = 0;
  return {
    get readers() {
      return readers;
    },
    open(res) {
      if (readers >= maxReaders) return false;
      readers++;
      res.writeHead(200, {
        ...CONSOLE_SECURITY_HEADERS,
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
      });
      const client = createSseClient(res, { maxQueuedFrames: options.maxQueuedEvents ?? 1000, maxQueuedBytes: options.maxQueuedBytes ?? 1024 * 1024 });
      // A second overflow before a drain: the reader is not catching up, so its slot goes to the next.
      const sendFrame = (frame: string) => {
        if (res.destroyed) return;
        client.send(frame);
        if (client.overflowsSinceDrain >= 2) res.destroy();
      };
      const send = (type: string, data: unknown) => sendFrame(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
      // Attached before `hello`: nothing after it is missed.
      const off = options.subscribe((event) => {
        const data = options.view(event);
        if (data !== undefined) send(event.type, data);
      });
      send("hello", { at: options.clock.now() });
      let keepalive = { cancel() {} };
      const maxStalled = options.maxStalledKeepalives ?? 4;
      let stalledBeats = 0;
      let drainsAtLastBeat = client.drains;
      const beat = () => {
        keepalive = options.clock.setTimeout(() => {
          // Stalled for this whole period: pushed back now, and no drain since the last beat.
          stalledBeats = client.waiting && client.drains === drainsAtLastBeat ? stalledBeats + 1 : 0;
          drainsAtLastBeat = client.drains;
          if (stalledBeats >= maxStalled) {
            res.destroy();
            return;
          }
          sendFrame(": keepalive\n\n");
          beat();
        }, options.keepaliveMs ?? 25_000);
      };
      beat();
      let closed = false;
      res.on("close", () => {
        if (closed) return;
        closed = true;
        readers--;
        off();
        keepalive.cancel();
        client.close();
      });
      return true;
    },
  };
}
