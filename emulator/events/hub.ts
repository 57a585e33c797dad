/**
 * The control plane's live feed (`GET /_emulator/events`): one hub, many
 * server-sent-events clients. Each client owns a bounded queue: while its
 * socket pushes back, frames wait up to `maxQueuedBytes`; past that the queue
 * is dropped whole and the client gets one `overflow` event (it must refetch),
 * so a slow or stalled reader costs a fixed amount of memory, never more.
 */
import type { RequestEvent } from "./request-log.js";

/** What the stream carries; README "Events stream" documents each payload. */
export type EmulatorEvent =
  | { type: "request"; data: RequestEvent }
  /** `replaced`: the whole state was replaced (reset, snapshot import), not changed in place. */
  | { type: "state"; data: { at: string; replaced: boolean } }
  | { type: "turn"; data: TurnEvent }
  /** An unexpected error (a 500 or a cut answer), logged under the same request id. */
  | { type: "error"; data: ErrorEvent };

/** What `error` events carry: where an unexpected error happened (docs/emulator.md, "Unexpected errors"). */
export interface ErrorEvent {
  request_id: string;
  at: string;
  method: string;
  path: string;
  /** The route's operation id; null when the request matched no route. */
  route: string | null;
  sandbox_id: string | null;
  status: number;
}

export interface TurnEvent {
  instance_id: string;
  session: string;
  id: string;
  previous_response_id: string | null;
  model: string;
  /** Epoch seconds. */
  created_at: number;
  /** Cut to `TEXT_PREVIEW` characters; the console API gives the whole turn. */
  input_text: string;
  output_text: string;
  /** True when either text was cut. */
  truncated: boolean;
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
  /** Set when the turn was more than text (tool calls, a script rule, an object): the console API gives its items. */
  answer?: true;
}

/** The part of a writable HTTP response a client needs (an `http.ServerResponse` fits). */
export interface SseSink {
  write(chunk: string): boolean;
  end(): void;
  once(event: "drain", listener: () => void): unknown;
}

export interface SseClientOptions {
  /** Most bytes queued while the socket pushes back (default 1 MiB). */
  maxQueuedBytes?: number;
}

export interface SseClient {
  send(frame: string): void;
  /** Bytes waiting for the socket (tests check the bound). */
  readonly queuedBytes: number;
  /** Frames dropped by overflows so far. */
  readonly dropped: number;
  close(): void;
}

export const frame = (event: EmulatorEvent, id: number): string => `id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;

export function createSseClient(sink: SseSink, options: SseClientOptions = {}): SseClient {
  const maxQueuedBytes = options.maxQueuedBytes ?? 1024 * 1024;
  let queue: string[] = [];
  let queuedBytes = 0;
  let waiting = false;
  let droppedSinceDrain = 0;
  let dropped = 0;
  let closed = false;

  const push = (chunk: string): boolean => {
    if (sink.write(chunk)) return true;
    waiting = true;
    sink.once("drain", drain);
    return false;
  };
  const drain = () => {
    waiting = false;
    if (closed) return;
    if (droppedSinceDrain > 0) {
      const notice = `event: overflow\ndata: ${JSON.stringify({ dropped: droppedSinceDrain })}\n\n`;
      droppedSinceDrain = 0;
      if (!push(notice)) return;
    }
    while (queue.length > 0) {
      const next = queue.shift()!;
      queuedBytes -= next.length;
      if (!push(next)) return;
    }
  };

  return {
    send(chunk) {
      if (closed) return;
      if (!waiting) {
        push(chunk);
        return;
      }
      if (queuedBytes + chunk.length > maxQueuedBytes) {
        // Dropping the whole backlog (not just the oldest frame) keeps the rule simple for
        // clients: after `overflow`, refetch, then apply what follows.
        droppedSinceDrain += queue.length + 1;
        dropped += queue.length + 1;
        queue = [];
        queuedBytes = 0;
        return;
      }
      queue.push(chunk);
      queuedBytes += chunk.length;
    },
    get queuedBytes() {
      return queuedBytes;
    },
    get dropped() {
      return dropped;
    },
    close() {
      if (closed) return;
      closed = true;
      queue = [];
      queuedBytes = 0;
      sink.end();
    },
  };
}

export interface EventHubOptions extends SseClientOptions {
  /** Most streams attached at once; more are refused (default 100). Each costs a socket and up to `maxQueuedBytes`. */
  maxClients?: number;
  /** Interval of `: ping` comments that keep proxies and idle timeouts away, ms (default 15000). */
  heartbeatMs?: number;
}

export interface EventHub {
  publish(event: EmulatorEvent): void;
  /** Adds a client; returns its detach function. */
  attach(sink: SseSink): () => void;
  readonly clients: number;
  /** True when `maxClients` streams are attached: the next is refused. */
  readonly full: boolean;
  /** Ends every stream (the emulator is closing); later attaches end at once. */
  close(): void;
}

export function createEventHub(options: EventHubOptions = {}): EventHub {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const maxClients = options.maxClients ?? 100;
  const clients = new Set<SseClient>();
  let nextId = 1;
  let closed = false;
  let heartbeat: NodeJS.Timeout | undefined;

  const startHeartbeat = () => {
    if (heartbeat) return;
    heartbeat = setInterval(() => {
      for (const client of clients) client.send(": ping\n\n");
    }, heartbeatMs);
    heartbeat.unref();
  };
  const stopHeartbeatIfIdle = () => {
    if (clients.size === 0 && heartbeat) {
      clearInterval(heartbeat);
      heartbeat = undefined;
    }
  };

  return {
    publish(event) {
      if (clients.size === 0) return;
      const text = frame(event, nextId++);
      for (const client of clients) client.send(text);
    },
    attach(sink) {
      const client = createSseClient(sink, options);
      if (closed) {
        client.close();
        return () => {};
      }
      clients.add(client);
      startHeartbeat();
      return () => {
        if (!clients.delete(client)) return;
        client.close();
        stopHeartbeatIfIdle();
      };
    },
    get clients() {
      return clients.size;
    },
    get full() {
      return clients.size >= maxClients;
    },
    close() {
      closed = true;
      for (const client of clients) client.close();
      clients.clear();
      stopHeartbeatIfIdle();
    },
  };
}
