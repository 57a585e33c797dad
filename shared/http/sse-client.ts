/**
 * One server-sent-events reader with a bounded queue (both consoles' event
 * streams): frames go straight to the socket until it pushes back, then wait
 * up to `maxQueuedBytes` (and `maxQueuedFrames`); past that the queue is
 * dropped whole and the reader gets one `overflow` event when its socket
 * drains (it must refetch), so a slow or stalled reader costs a fixed amount
 * of memory, never more.
 */
/** The part of a writable HTTP response a client needs (an `http.ServerResponse` fits). */
export interface SseSink {
  write(chunk: string): boolean;
  end(): void;
  once(event: "drain", listener: () => void): unknown;
}

export interface SseClientOptions {
  /** Most bytes queued while the socket pushes back (default 1 MiB). */
  maxQueuedBytes?: number;
  /** Most frames queued while the socket pushes back (default: no limit but the bytes). */
  maxQueuedFrames?: number;
}

export interface SseClient {
  send(frame: string): void;
  /** Bytes waiting for the socket (tests check the bound). */
  readonly queuedBytes: number;
  /** Frames dropped by overflows so far. */
  readonly dropped: number;
  /** The socket pushed back and has not drained since. */
  readonly waiting: boolean;
  /** Times the backlog was dropped since the socket last drained (a reader that stays stalled keeps adding). */
  readonly overflowsSinceDrain: number;
  /** Drains so far: a caller sees whether the socket moved between two looks. */
  readonly drains: number;
  close(): void;
}

export function createSseClient(sink: SseSink, options: SseClientOptions = {}): SseClient {
  return new BoundedSseClient(sink, options.maxQueuedBytes ?? 1024 * 1024, options.maxQueuedFrames ?? Number.POSITIVE_INFINITY);
}

/** One stream's client: frames go straight to the socket until it pushes back, then wait in a bounded queue. */
class BoundedSseClient implements SseClient {
  readonly #sink: SseSink;
  readonly #maxQueuedBytes: number;
  readonly #maxQueuedFrames: number;
  /** Frames waiting for the socket's drain, oldest first; empty unless `#waiting`. */
  #queue: string[] = [];
  /** The length of the frames in `#queue`; never above `#maxQueuedBytes`. */
  #queuedBytes = 0;
  /** The socket pushed back: frames queue until its drain. */
  #waiting = false;
  /** Frames dropped since the last drain: told to the client in one `overflow` event then. */
  #droppedSinceDrain = 0;
  /** Frames dropped by overflows so far. */
  #dropped = 0;
  #overflowsSinceDrain = 0;
  #drains = 0;
  /** Set by close; never unset: nothing is sent after it. */
  #closed = false;

  constructor(sink: SseSink, maxQueuedBytes: number, maxQueuedFrames: number) {
    this.#sink = sink;
    this.#maxQueuedBytes = maxQueuedBytes;
    this.#maxQueuedFrames = maxQueuedFrames;
  }

  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  get dropped(): number {
    return this.#dropped;
  }

  get waiting(): boolean {
    return this.#waiting;
  }

  get overflowsSinceDrain(): number {
    return this.#overflowsSinceDrain;
  }

  get drains(): number {
    return this.#drains;
  }

  send(chunk: string): void {
    if (this.#closed) return;
    if (!this.#waiting) {
      this.#push(chunk);
      return;
    }
    if (this.#queuedBytes + chunk.length > this.#maxQueuedBytes || this.#queue.length >= this.#maxQueuedFrames) {
      // Dropping the whole backlog (not just the oldest frame) keeps the rule simple for
      // clients: after `overflow`, refetch, then apply what follows.
      this.#droppedSinceDrain += this.#queue.length + 1;
      this.#dropped += this.#queue.length + 1;
      this.#overflowsSinceDrain++;
      this.#queue = [];
      this.#queuedBytes = 0;
      return;
    }
    this.#queue.push(chunk);
    this.#queuedBytes += chunk.length;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#sink.end();
  }

  #push(chunk: string): boolean {
    if (this.#sink.write(chunk)) return true;
    this.#waiting = true;
    this.#sink.once("drain", () => this.#drain());
    return false;
  }

  #drain(): void {
    this.#waiting = false;
    this.#drains++;
    this.#overflowsSinceDrain = 0;
    if (this.#closed) return;
    if (this.#droppedSinceDrain > 0) {
      const notice = `event: overflow\ndata: ${JSON.stringify({ dropped: this.#droppedSinceDrain })}\n\n`;
      this.#droppedSinceDrain = 0;
      if (!this.#push(notice)) return;
    }
    while (this.#queue.length > 0) {
      const next = this.#queue.shift()!;
      this.#queuedBytes -= next.length;
      if (!this.#push(next)) return;
    }
  }
}
