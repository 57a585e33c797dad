/**
 * The Matrix connection's lifecycle: start (who am I: `account/whoami` must name the configured
 * `user_id`; the bot's display name, for mentions; the first sync), the background loop that
 * long-polls `/sync` until stopped (sync.ts handles each answer), and stop. A refused token
 * ends the channel; a rate limit waits its `retry_after`; any other failure (a dropped
 * connection, a 5xx) is waited out with backoff and the same `since` asked for again.
 */
import { Method, type MatrixClient } from "matrix-js-sdk";
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import { type ReconnectStatus, type ReconnectVerdict, type SessionContext, startReconnectLoop } from "../../helpers/reconnect.js";
import { pause } from "../../helpers/retry.js";
import type { InboundSink } from "../../vocabulary/adapter.js";
import { describe, isTokenRefused, requestOpts, retryAfterMs, type Scrub } from "./errors.js";
import type { BotIdentity } from "./inbound.js";
import type { Syncer } from "./sync.js";

const MAX_RETRY_PAUSE_MS = 30_000;

export interface ConnectionDeps {
  client: MatrixClient;
  userId: string;
  syncer: Syncer;
  log: Logger;
  scrub: Scrub;
  clock: Clock;
  random: Random;
  /** The first pause after a failure (doubling up to 30 s), and after an answer not wholly taken, ms. */
  retryPauseMs: number;
}

export class MatrixConnectionError extends Error {
  override readonly name = "MatrixConnectionError";
}

export class MatrixConnection {
  readonly #deps: ConnectionDeps;
  #phase: "idle" | "running" | "stopped" = "idle";
  #sink: InboundSink | undefined;
  #bot: BotIdentity | undefined;
  /** Aborted by stop: the pending long poll, pauses, downloads. Sends stay usable (the core may finish turns). */
  readonly #run = new AbortController();
  #loop: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;

  constructor(deps: ConnectionDeps) {
    this.#deps = deps;
  }

  /** Resolves once connected and the first sync is handled, or once connecting is left to the background loop. */
  async start(sink: InboundSink): Promise<void> {
    if (this.#phase === "stopped") throw new MatrixConnectionError("matrix adapter was stopped; create a new adapter to start again");
    if (this.#phase === "running") return;
    this.#phase = "running";
    this.#sink = sink;
    sink.status({ state: "starting" });
    const { clock, random, retryPauseMs, scrub } = this.#deps;
    const loop = startReconnectLoop({
      session: (ctx) => this.#syncSession(ctx),
      classify: syncVerdict,
      describe: (error) => describe(error, scrub),
      clock,
      random,
      backoff: { baseMs: retryPauseMs, maxMs: Math.max(retryPauseMs, MAX_RETRY_PAUSE_MS) },
      signal: this.#run.signal,
      onStatus: (status) => this.#onStatus(status),
    });
    this.#loop = loop.done.then(() => undefined);
    if ((await loop.firstOutcome) !== "failed") return;
    this.#phase = "stopped";
    const end = await loop.done;
    throw new MatrixConnectionError(`matrix: ${end.state === "failed" ? end.detail : "stopped"}`);
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#shutDown();
    return this.#stopping;
  }

  async #shutDown(): Promise<void> {
    const wasRunning = this.#phase === "running";
    this.#phase = "stopped";
    this.#run.abort();
    await this.#loop;
    if (wasRunning) this.#sink?.status({ state: "stopped" });
  }

  /** whoami (the token must be the configured user's), then the display name people mention the bot by. */
  async #connect(): Promise<void> {
    const { client, userId, log, scrub } = this.#deps;
    const signal = this.#run.signal;
    const me = await client.http.authedRequest<{ user_id?: string }>(Method.Get, "/account/whoami", undefined, undefined, requestOpts({ abortSignal: signal }));
    if (me.user_id !== userId)
      throw new MatrixConnectionError(`the access token belongs to ${me.user_id ?? "nobody"}, not to the configured user_id ${userId}`);
    const profile = await client.http
      .authedRequest<{ displayname?: string }>(
        Method.Get,
        `/profile/${encodeURIComponent(userId)}/displayname`,
        undefined,
        undefined,
        requestOpts({ abortSignal: signal }),
      )
      .catch((error: unknown) => {
        if (signal.aborted) throw error;
        log.debug({ err: describe(error, scrub) }, "matrix display name not found (mentions by user id only)");
        return { displayname: undefined };
      });
    this.#bot = { userId, displayName: profile.displayname };
    log.info({ userId }, "matrix connected");
  }

  async #syncOnce(): Promise<boolean> {
    const bot = this.#bot;
    const sink = this.#sink;
    if (!bot || !sink) throw new Error("not connected");
    const answer = await this.#deps.syncer.fetch(this.#run.signal);
    return this.#deps.syncer.handle(answer, bot, sink, this.#run.signal);
  }

  /** One session of the loop: connects when needed, then syncs until a sync fails (or stop). */
  async #syncSession(ctx: SessionContext): Promise<void> {
    if (!this.#bot) await this.#connect();
    while (!ctx.signal.aborted) {
      const complete = await this.#syncOnce();
      ctx.connected(this.#deps.userId);
      if (!complete) await pause(this.#deps.clock, this.#deps.retryPauseMs, ctx.signal);
    }
  }

  #onStatus(status: ReconnectStatus): void {
    const { log, userId } = this.#deps;
    switch (status.state) {
      case "connected":
        this.#sink?.status({ state: "connected", detail: userId });
        return;
      case "reconnecting": {
        const limited = retryAfterMs(status.error) !== undefined;
        const first = status.attempt === 1 && this.#bot === undefined;
        if (first) log.warn({ err: status.detail }, "matrix homeserver not reachable at start; retrying in the background");
        else log.warn({ err: status.detail }, limited ? "matrix sync rate-limited; waiting" : "matrix sync failed; retrying");
        this.#sink?.status({ state: "reconnecting", detail: status.detail, ...(first ? {} : { reason: "closed" as const }) });
        return;
      }
      case "failed":
        log.error({ err: status.detail }, "matrix refused the access token; the channel stops");
        this.#sink?.status({ state: "failed", detail: status.detail });
        return;
      case "stopped":
        return;
    }
  }
}

/** A refused token or the wrong user is fatal; a rate limit waits what it says; anything else backs off. */
function syncVerdict(error: unknown): ReconnectVerdict {
  if (isTokenRefused(error) || error instanceof MatrixConnectionError) return { fatal: true };
  const wait = retryAfterMs(error);
  return wait !== undefined ? { afterMs: wait } : {};
}
