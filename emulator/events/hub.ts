/**
 * The control plane's live feed (`GET /_emulator/events`): one hub, many
 * server-sent-events clients. Each client owns a bounded queue: while its
 * socket pushes back, frames wait up to `maxQueuedBytes`; past that the queue
 * is dropped whole and the client gets one `overflow` event (it must refetch),
 * so a slow or stalled reader costs a fixed amount of memory, never more.
 */
import { createSseClient, type SseClient, type SseClientOptions, type SseSink } from "../../shared/http/sse-client.js";
import type { RequestEvent } from "./request-log.js";

export { createSseClient, type SseClientOptions, type SseSink } from "../../shared/http/sse-client.js";

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

export const frame = (event: EmulatorEvent, id: number): string => `id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;

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
  return new SseHub(options);
}

/** The hub: numbers events, fans them out to its clients, and pings while any is attached. */
class SseHub implements EventHub {
  readonly #options: EventHubOptions;
  readonly #heartbeatMs: number;
  readonly #maxClients: number;
  /** The attached clients; each is closed as it leaves. */
  readonly #clients = new Set<SseClient>();
  /** The id of the next event published (ids start at 1 and only grow). */
  #nextId = 1;
  /** Set by close; never unset: later attaches end at once. */
  #closed = false;
  /** The ping timer: running exactly while a client is attached. */
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(options: EventHubOptions) {
    this.#options = options;
    this.#heartbeatMs = options.heartbeatMs ?? 15_000;
    this.#maxClients = options.maxClients ?? 100;
  }

  get clients(): number {
    return this.#clients.size;
  }

  get full(): boolean {
    return this.#clients.size >= this.#maxClients;
  }

  publish(event: EmulatorEvent): void {
    if (this.#clients.size === 0) return;
    const text = frame(event, this.#nextId++);
    for (const client of this.#clients) client.send(text);
  }

  attach(sink: SseSink): () => void {
    const client = createSseClient(sink, this.#options);
    if (this.#closed) {
      client.close();
      return () => {};
    }
    this.#clients.add(client);
    this.#startHeartbeat();
    return () => {
      if (!this.#clients.delete(client)) return;
      client.close();
      this.#stopHeartbeatIfIdle();
    };
  }

  close(): void {
    this.#closed = true;
    for (const client of this.#clients) client.close();
    this.#clients.clear();
    this.#stopHeartbeatIfIdle();
  }

  #startHeartbeat(): void {
    if (this.#heartbeat) return;
    this.#heartbeat = setInterval(() => {
      for (const client of this.#clients) client.send(": ping\n\n");
    }, this.#heartbeatMs);
    this.#heartbeat.unref();
  }

  #stopHeartbeatIfIdle(): void {
    if (this.#clients.size === 0 && this.#heartbeat) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
    }
  }
}
