/**
 * Reads a server-sent-event body as it arrives, for tests that watch a stream
 * grow: each event is stamped with the (test's) clock when it was parsed, and
 * `until` resolves as soon as the events seen so far satisfy a condition, so
 * tests wait on events, never on time.
 */
import { createParser } from "eventsource-parser";

export interface SeenEvent {
  event: string | undefined;
  /** `data`, JSON-parsed. */
  data: unknown;
  /** The clock's time when the event was parsed. */
  at: number;
}

export interface SseReader {
  readonly events: SeenEvent[];
  /** Text deltas so far. */
  deltas(): string[];
  /** Resolves once `test(events)` holds; rejects if the body ends (or breaks) first. */
  until(test: (events: SeenEvent[]) => boolean): Promise<void>;
  /** Resolves when the body ends cleanly; rejects with its error. */
  readonly done: Promise<void>;
}

export function readSse(body: AsyncIterable<Uint8Array | string>, now: () => number = Date.now): SseReader {
  const events: SeenEvent[] = [];
  const waiters: { test: (events: SeenEvent[]) => boolean; resolve: () => void; reject: (e: unknown) => void }[] = [];
  let finished: { error: unknown } | undefined;
  const check = () => {
    for (const w of [...waiters]) {
      if (w.test(events)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      } else if (finished) {
        waiters.splice(waiters.indexOf(w), 1);
        w.reject(finished.error ?? new Error(`stream ended after ${events.length} events without the awaited one`));
      }
    }
  };
  const parser = createParser({
    onEvent(e) {
      events.push({ event: e.event, data: JSON.parse(e.data) as unknown, at: now() });
      check();
    },
  });
  const decoder = new TextDecoder();
  const done = (async () => {
    try {
      for await (const chunk of body) parser.feed(typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true }));
      finished = { error: undefined };
    } catch (error) {
      finished = { error };
    }
    check();
    if (finished.error !== undefined) throw finished.error;
  })();
  // Callers that only use `until` must not see an unhandled rejection.
  done.catch(() => {});
  return {
    events,
    deltas: () =>
      ofType(events, "response.output_text.delta").flatMap((e) => {
        const delta = fieldOf(e.data, "delta");
        return typeof delta === "string" ? [delta] : [];
      }),
    until(test) {
      return new Promise<void>((resolve, reject) => {
        waiters.push({ test, resolve, reject });
        check();
      });
    },
    done,
  };
}

const fieldOf = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && key in value ? (value as Record<string, unknown>)[key] : undefined;

/** Events of one type. */
export const ofType = (events: SeenEvent[], type: string): SeenEvent[] => events.filter((e) => fieldOf(e.data, "type") === type);
