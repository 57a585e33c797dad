/**
 * Reading a streamed response (`stream: true`): the body is split into
 * server-sent events by `eventsource-parser` (a maintained, spec-complete
 * parser), and each event's JSON is checked against the schemas in
 * `shared/schemas/responses.ts`. Nothing is cast.
 *
 * How a stream can end, as the caller sees it:
 * - `response.completed` arrives and the iteration ends normally;
 * - `ServiceError` of kind `stream` (retryable): the connection broke (with
 *   its `cause`), the body ended before a terminal event, the service said so
 *   inside the stream (`error`, `response.failed`, `response.incomplete`, with
 *   the event's `code`), or an event did not match its schema (code
 *   `invalid_stream_event`);
 * - `ServiceError` of kind `service` or `gateway` with a status: an HTTP error
 *   before the stream started (see client/index.ts);
 * - the `AbortSignal`'s reason when the caller aborted (the connection is closed,
 *   so the gateway stops).
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { z } from "zod";
import { KNOWN_STREAM_EVENT_TYPES, KnownStreamEvent } from "../schemas/responses.js";
import { ServiceError } from "./errors.js";

/** An event whose `type` this client does not know (passed on, never dropped silently). */
export interface UnknownStreamEvent {
  type: "unknown_event";
  /** The event's own `type` (or its SSE `event:` name when the data has none). */
  event: string;
  data: unknown;
}

/** One event of a streamed response. Narrow on `type`. */
export type ResponseStreamEvent = KnownStreamEvent | UnknownStreamEvent;

const Typed = z.looseObject({ type: z.string() });

/** Parses one SSE message; a malformed known event is a `ServiceError` (kind `stream`, code `invalid_stream_event`). */
export function parseStreamEvent(message: EventSourceMessage): ResponseStreamEvent {
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    return { type: "unknown_event", event: message.event ?? "message", data: message.data };
  }
  const typed = Typed.safeParse(data);
  const type = typed.success ? typed.data.type : message.event;
  if (type === undefined || !KNOWN_STREAM_EVENT_TYPES.has(type)) return { type: "unknown_event", event: type ?? "message", data };
  const known = KnownStreamEvent.safeParse(data);
  if (!known.success) {
    const detail = `malformed ${type} event: ${z.prettifyError(known.error)}`;
    throw new ServiceError({ kind: "stream", message: detail, body: data, code: "invalid_stream_event" });
  }
  return known.data;
}

const TERMINAL = new Set(["response.completed", "response.failed", "response.incomplete", "error"]);

function failureOf(event: KnownStreamEvent): ServiceError | undefined {
  if (event.type === "error")
    return new ServiceError({ kind: "stream", message: `stream error: ${event.message}`, body: event, code: event.code ?? undefined });
  if (event.type === "response.failed" || event.type === "response.incomplete") {
    return new ServiceError({ kind: "stream", message: `the response ended as ${event.response.status}`, body: event, code: event.type });
  }
  return undefined;
}

/**
 * Events of an SSE body, as they arrive. Ends after `response.completed`;
 * throws as the module comment says. Breaking out of the loop (or aborting)
 * destroys the body, which closes the connection.
 */
export async function* readResponseStream(
  body: AsyncIterable<Uint8Array | string> & { destroy?: (error?: Error) => unknown },
  signal?: AbortSignal,
): AsyncGenerator<ResponseStreamEvent, void, undefined> {
  const ready: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => void ready.push(message) });
  const decoder = new TextDecoder();
  let finished = false;
  try {
    for await (const chunk of body) {
      parser.feed(typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true }));
      while (ready.length) {
        const event = parseStreamEvent(ready.shift()!);
        if (event.type !== "unknown_event") {
          const failure = failureOf(event);
          if (failure) throw failure;
        }
        yield event;
        if (TERMINAL.has(event.type)) {
          finished = true;
          return;
        }
      }
    }
  } catch (cause) {
    if (signal?.aborted) throw signal.reason;
    if (cause instanceof ServiceError) throw cause;
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new ServiceError({ kind: "stream", message: `the stream broke: ${message}`, cause });
  } finally {
    // Early exit (break, abort, error, terminal event): release the connection.
    if (!finished || signal?.aborted) body.destroy?.();
  }
  if (signal?.aborted) throw signal.reason;
  throw new ServiceError({ kind: "stream", message: "the stream ended before the response completed" });
}
