/**
 * The Matrix connection's lifecycle: start (who am I: `account/whoami` must name the configured
 * `user_id`; the bot's display name, for mentions; the first sync), the background loop that
 * long-polls `/sync` until stopped (sync.ts handles each answer), and stop. A refused token
 * ends the channel; a rate limit waits its `retry_after`; any other failure (a dropped
 * connection, a 5xx) is waited out with backoff and the same `since` asked for again.
 */
import { Method, type MatrixClient } from "matrix-js-sdk";
import type { Logger } from "pino";
import { createBackoff } from "../../../shared/backoff.js";
import type { Clock } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
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
    try {
      await this.#connect();
      await this.#syncOnce();
    } catch (error) {
      const detail = describe(error, this.#deps.scrub);
      if (isTokenRefused(error) || error instanceof MatrixConnectionError) {
        this.#phase = "stopped";
        sink.status({ state: "failed", detail });
        throw new MatrixConnectionError(`matrix: ${detail}`);
      }
      this.#deps.log.warn({ err: detail }, "matrix homeserver not reachable at start; retrying in the background");
      sink.status({ state: "reconnecting", detail });
    }
    this.#loop = this.#keepSyncing();
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
    this.#sink?.status({ state: "connected", detail: userId });
  }

  async #syncOnce(): Promise<boolean> {
    const bot = this.#bot;
    const sink = this.#sink;
    if (!bot || !sink) throw new Error("not connected");
    const answer = await this.#deps.syncer.fetch(this.#run.signal);
    return this.#deps.syncer.handle(answer, bot, sink, this.#run.signal);
  }

  /** Syncs until stopped, connecting again first when needed. Never throws. */
  async #keepSyncing(): Promise<void> {
    const { log, scrub, retryPauseMs, random, clock } = this.#deps;
    const backoff = createBackoff({ baseMs: retryPauseMs, maxMs: Math.max(retryPauseMs, MAX_RETRY_PAUSE_MS) }, random);
    let failing = this.#bot === undefined;
    if (failing) await pause(clock, backoff.failed(), this.#run.signal);
    while (this.#phase === "running") {
      try {
        if (!this.#bot) await this.#connect();
        const complete = await this.#syncOnce();
        if (failing) this.#sink?.status({ state: "connected", detail: this.#deps.userId });
        failing = false;
        backoff.reset();
        if (!complete) await pause(clock, retryPauseMs, this.#run.signal);
      } catch (error) {
        if (this.#phase !== "running") return;
        const detail = describe(error, scrub);
        if (isTokenRefused(error) || error instanceof MatrixConnectionError) {
          log.error({ err: detail }, "matrix refused the access token; the channel stops");
          this.#sink?.status({ state: "failed", detail });
          return;
        }
        const wait = retryAfterMs(error);
        log.warn({ err: detail }, wait !== undefined ? "matrix sync rate-limited; waiting" : "matrix sync failed; retrying");
        this.#sink?.status({ state: "reconnecting", detail, reason: "closed" });
        failing = true;
        await pause(clock, wait ?? backoff.failed(), this.#run.signal);
      }
    }
  }
}
