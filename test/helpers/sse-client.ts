/**
 * A small server-sent-events reader over node:http for tests: collects frames
 * (comments included) and lets a test wait for the one it needs, no sleeps.
 */
import { request, type IncomingMessage } from "node:http";

export interface SseFrame {
  event?: string;
  id?: string;
  data?: string;
  /** Comment lines (`: ping`) of the frame, without the colon. */
  comments: string[];
}

export interface SseReader {
  response: IncomingMessage;
  frames: SseFrame[];
  /** All bytes read so far. */
  readonly text: string;
  /** Resolves with the first frame (seen or to come) that passes `match`. */
  next(match: (frame: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: "text/event-stream", ...headers } }, (response) => {
      const frames: SseFrame[] = [];
      let text = "";
      let pending = "";
      const waiters = new Set<{ match: (f: SseFrame) => boolean; done: (f: SseFrame) => void }>();
      let endResolve!: () => void;
      const ended = new Promise<void>((r) => (endResolve = r));
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
        pending += chunk;
        for (let cut = pending.indexOf("\n\n"); cut >= 0; cut = pending.indexOf("\n\n")) {
          const block = pending.slice(0, cut);
          pending = pending.slice(cut + 2);
          const frame: SseFrame = { comments: [] };
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) frame.comments.push(line.slice(1).trim());
            else if (line.startsWith("event: ")) frame.event = line.slice(7);
            else if (line.startsWith("id: ")) frame.id = line.slice(4);
            else if (line.startsWith("data: ")) frame.data = (frame.data === undefined ? "" : `${frame.data}\n`) + line.slice(6);
          }
          frames.push(frame);
          for (const w of [...waiters]) {
            if (w.match(frame)) {
              waiters.delete(w);
              w.done(frame);
            }
          }
        }
      });
      response.on("end", endResolve);
      response.on("close", endResolve);
      resolve({
        response,
        frames,
        get text() {
          return text;
        },
        next(match, timeoutMs = 10_000) {
          const seen = frames.find(match);
          if (seen) return Promise.resolve(seen);
          return new Promise((done, fail) => {
            const timer = setTimeout(() => {
              waiters.delete(waiter);
              fail(new Error(`no matching event within ${timeoutMs} ms; got ${frames.map((f) => f.event ?? f.comments.join()).join(", ")}`));
            }, timeoutMs);
            const waiter = {
              match,
              done: (f: SseFrame) => {
                clearTimeout(timer);
                done(f);
              },
            };
            waiters.add(waiter);
          });
        },
        ended,
        close: () => req.destroy(),
      });
    });
    req.on("error", reject);
    req.end();
  });
}

export const dataOf = <T = Record<string, unknown>>(frame: SseFrame): T => JSON.parse(frame.data ?? "null") as T;
