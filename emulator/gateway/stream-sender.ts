/** Sends a streamed answer's events: batched, or paced on the clock, and cut where a reset fault says. */
import type { ServerResponse } from "node:http";
import type { Clock } from "../../shared/clock.js";
import { gone, writable } from "./http.js";
import { deltaDueAt, type Frame } from "./wire.js";

/** Flush streamed frames in pieces of about this many characters. */
const STREAM_BATCH = 16 * 1024;

/** How a streamed answer is sent. */
export interface StreamPlan {
  /** Paced (`!stream S`): deltas spread evenly over this many ms, each written at once. */
  paceMs?: number;
  /** Delta frames in the stream, every item's (for the pacing). */
  deltaCount: number;
  /** Fault: the connection is destroyed once this many deltas were sent (before the text is done, if it has fewer). */
  resetAfterDeltas?: number;
  /** Called just before `response.completed` is written, if the client is still there; awaited (the store makes the turn durable). */
  beforeCompleted(): Promise<void>;
}

export function createStreamSender(clock: Clock) {
  /** Waits `ms` on the clock, or less if the client goes away (which aborts the stream). */
  const waitUnlessGone = (res: ServerResponse, ms: number): Promise<void> => {
    if (ms <= 0 || gone(res)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        timer.cancel();
        res.off("close", done);
        resolve();
      };
      const timer = clock.setTimeout(done, ms);
      res.on("close", done);
    });
  };

  const write = async (res: ServerResponse, text: string): Promise<void> => {
    if (text && !res.write(text)) await writable(res);
  };

  /**
   * Cuts the connection in the middle of the body: what was written is
   * flushed first (a FIN after the data, so the client reliably sees those
   * events), then the socket closes without the body's end.
   */
  const cut = async (res: ServerResponse, text: string): Promise<void> => {
    await write(res, text);
    res.socket?.end();
  };

  return async function sendStream(res: ServerResponse, frames: Iterable<Frame>, plan: StreamPlan): Promise<void> {
    if (gone(res)) return;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
    });
    const start = clock.now();
    const paced = plan.paceMs !== undefined;
    let batch = "";
    let deltas = 0;
    for (const frame of frames) {
      const isDelta = frame.delta === true;
      if (isDelta || frame.closesText) {
        // The fault never lets the stream complete, even when it has fewer deltas.
        if (plan.resetAfterDeltas !== undefined && (!isDelta || deltas >= plan.resetAfterDeltas)) return cut(res, batch);
        if (paced) {
          // Written in time order: what is due now goes out before the wait.
          await write(res, batch);
          batch = "";
          // A text closes with its last delta; the last one of all is due at the end.
          const due = isDelta
            ? deltaDueAt(deltas, plan.deltaCount, plan.paceMs!)
            : deltas >= plan.deltaCount
              ? plan.paceMs!
              : deltaDueAt(deltas - 1, plan.deltaCount, plan.paceMs!);
          await waitUnlessGone(res, start + due - clock.now());
          if (gone(res)) return;
        }
        if (isDelta) deltas++;
      }
      if (frame.type === "response.completed" || frame.type === "response.incomplete") {
        if (gone(res)) return;
        await plan.beforeCompleted();
      }
      batch += frame.text;
      if (batch.length < STREAM_BATCH && !paced) continue;
      await write(res, batch);
      batch = "";
      if (gone(res)) return;
    }
    res.end(batch);
  };
}
