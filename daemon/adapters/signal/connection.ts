/**
 * The event stream: `GET /api/v1/events` (signal-cli's server-sent events,
 * `event: receive` with the envelope as data, a `:` keep-alive every 15 s),
 * reconnected with backoff when it drops, and by the watchdog when it stays
 * silent past `watchdogMs` (a connection that is up but delivers nothing).
 *
 * Each event that carries a message goes to the spool (on disk) first, then
 * to the core in arrival order, then leaves the spool once the core has it
 * (spool.ts says why). A message the core defers or cannot journal stays
 * spooled and is tried again after a pause; nothing asks signal-cli for it
 * again, because signal-cli cannot give it again.
 */
import { createParser } from "eventsource-parser";
import type { Logger } from "pino";
import { request } from "undici";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import { type ReconnectVerdict, SessionEnded, startReconnectLoop } from "../../helpers/reconnect.js";
import { pause } from "../../helpers/retry.js";
import type { InboundSink } from "../../vocabulary/adapter.js";
import { handOverEvent } from "./hand-over.js";
import { ReceiveEvent, type SignalSelf, translateMessage } from "./inbound.js";
import type { RpcCall, SignalEndpoint } from "./rpc.js";
import type { Spool } from "./spool.js";

export interface ConnectionDeps {
  endpoint: SignalEndpoint;
  account: string;
  accountId: string;
  rpc: RpcCall;
  spool: Spool;
  log: Logger;
  clock: Clock;
  random: Random;
  /** Silence (no byte at all) after which the stream is reconnected, ms. */
  watchdogMs: number;
  /** First pause after a failure (doubling up to 30 s), and before a deferred message is tried again, ms. */
  retryPauseMs: number;
}

class Deaf extends Error {
  override readonly name = "Deaf";
}

/** Every failure of the stream is worth another try; a silent one is counted as deaf. */
function streamVerdict(error: unknown): ReconnectVerdict {
  if (error instanceof Deaf) return { reason: "deaf" };
  if (error instanceof SessionEnded) return { reason: "closed", detail: "the event stream ended" };
  return { reason: "closed" };
}

export class SignalConnection {
  readonly #deps: ConnectionDeps;
  readonly #self: SignalSelf;
  readonly #run = new AbortController();
  #sink: InboundSink | undefined;
  #loop: Promise<void> | undefined;
  /** Messages in arrival order, each handed over after the one before. */
  #queue: Promise<void> = Promise.resolve();
  #stopping: Promise<void> | undefined;

  constructor(deps: ConnectionDeps) {
    this.#deps = deps;
    this.#self = { account: deps.account };
  }

  /** Hands over what a previous life left in the spool, then connects; resolves once the stream is open (or its first try failed). */
  async start(sink: InboundSink): Promise<void> {
    if (this.#sink) throw new Error("the Signal adapter was started already");
    this.#sink = sink;
    sink.status({ state: "starting" });
    for (const [id, raw] of this.#deps.spool.pending()) this.#enqueue(id, raw);
    const loop = startReconnectLoop({
      session: (ctx) => this.#streamOnce(() => ctx.connected()),
      classify: streamVerdict,
      clock: this.#deps.clock,
      random: this.#deps.random,
      backoff: { baseMs: this.#deps.retryPauseMs, maxMs: Math.max(30_000, this.#deps.retryPauseMs) },
      signal: this.#run.signal,
      onStatus: (status) => {
        if (status.state === "connected") this.#sink?.status({ state: "connected" });
        if (status.state !== "reconnecting") return;
        const { reason, detail } = status;
        this.#deps.log.warn({ reason, detail }, "signal event stream lost; reconnecting");
        this.#sink?.status({ state: "reconnecting", ...(reason ? { reason } : {}), detail });
      },
    });
    this.#loop = loop.done.then(() => undefined);
    await loop.firstOutcome;
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#run.abort(new Error("stopping"));
      await this.#loop;
      await this.#queue;
      this.#sink?.status({ state: "stopped" });
    })();
    return this.#stopping;
  }

  /** One connection to the event stream, until it ends or fails. */
  async #streamOnce(opened: () => void): Promise<void> {
    const { endpoint, account, clock, watchdogMs } = this.#deps;
    const attempt = new AbortController();
    const signal = AbortSignal.any([this.#run.signal, attempt.signal]);
    let watchdog: Timer | undefined;
    const arm = () => {
      watchdog?.cancel();
      watchdog = clock.setTimeout(() => attempt.abort(new Deaf(`nothing came for ${watchdogMs} ms, not even a keep-alive`)), watchdogMs);
    };
    try {
      arm();
      const res = await request(`${endpoint.base}/api/v1/events?account=${encodeURIComponent(account)}`, {
        method: "GET",
        headers: { ...endpoint.headers, accept: "text/event-stream" },
        signal,
        // The stream is long-lived; the watchdog, not undici, decides when it is dead.
        bodyTimeout: 0,
        headersTimeout: watchdogMs,
      });
      if (res.statusCode !== 200) {
        await res.body.text().catch(() => undefined);
        throw new Error(`the event stream answered HTTP ${res.statusCode}${res.statusCode === 400 ? " (signal-cli does not have this account)" : ""}`);
      }
      opened();
      const parser = createParser({
        onEvent: (event) => {
          if (event.event === "receive") this.#received(event.data);
        },
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body) {
        arm();
        parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
      }
    } catch (error) {
      if (attempt.signal.aborted && attempt.signal.reason instanceof Deaf) throw attempt.signal.reason;
      throw error;
    } finally {
      watchdog?.cancel();
    }
  }

  /** One `receive` event: spooled at once when it carries a message, then queued for the core. */
  #received(data: string): void {
    const { log } = this.#deps;
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      log.warn("signal event is not JSON; ignored");
      return;
    }
    const event = ReceiveEvent.safeParse(json);
    if (!event.success) {
      log.warn("signal event without an envelope; ignored");
      return;
    }
    const translated = translateMessage(event.data, this.#self, this.#deps.accountId);
    if (!translated) return;
    const id = translated.message.messageId;
    // Already spooled (a duplicate delivery while the first is still on its way): the core dedupes the rest.
    if (this.#deps.spool.has(id)) return;
    const spooled = this.#deps.spool.add(id, data);
    this.#enqueue(id, data, spooled);
  }

  #enqueue(id: string, raw: string, spooled: Promise<void> = Promise.resolve()): void {
    this.#queue = this.#queue.then(async () => {
      await spooled.catch((error) => this.#deps.log.error({ err: String(error) }, "signal: an event could not be written to the spool"));
      await this.#deliver(id, raw);
    });
  }

  /** Hands one spooled message to the core until it takes it (or the adapter stops: it stays spooled). */
  async #deliver(id: string, raw: string): Promise<void> {
    const sink = this.#sink;
    if (!sink) return;
    const deps = { rpc: this.#deps.rpc, log: this.#deps.log, self: this.#self, accountId: this.#deps.accountId };
    while (!this.#run.signal.aborted) {
      if (await handOverEvent(deps, sink, id, raw, this.#run.signal)) {
        await this.#deps.spool.remove(id);
        return;
      }
      await pause(this.#deps.clock, this.#deps.retryPauseMs, this.#run.signal);
    }
  }
}
