/**
 * Keeps one discord.js client connected to the gateway, and never connected
 * but deaf. discord.js resumes or re-identifies by itself after most drops;
 * this supervisor covers what it does not:
 * - a close it treats as final (`shardDisconnect`: invalid shard, bad API
 *   version, ...) leaves the client idle for good, so the client is rebuilt;
 * - a reconnect that does not come back within `reconnectGraceMs` (a gateway
 *   that accepts sockets but never says HELLO, a resume loop) is cut short by
 *   rebuilding the client;
 * - a login that neither succeeds nor fails is bounded by `connectTimeoutMs`.
 * Each client is one session of the daemon's one reconnect loop
 * (daemon/helpers/reconnect.ts): rebuilds back off exponentially with jitter,
 * and a client that stayed up `stableAfterMs` earns a rebuild at once.
 * Authentication and intent failures are reported as "failed" and not
 * retried: the same token would be refused again.
 */
import { Events, type ButtonInteraction, type ChatInputCommandInteraction, type Client, type IIdentifyThrottler, type Message } from "discord.js";
import type { Logger } from "pino";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import type { AdapterStatusEvent } from "../../vocabulary/adapter.js";
import { type ReconnectLoop, type ReconnectStatus, type ReconnectVerdict, type SessionContext, startReconnectLoop } from "../../helpers/reconnect.js";
import type { DiscordChannelConfig } from "./config.js";
import { closeFailure, ConnectFailure, connectFailureOf } from "./connect-failure.js";
import { buildGatewayClient } from "./gateway-client.js";

export { ConnectFailure } from "./connect-failure.js";

export interface ConnectionTuning {
  /** Longest a login may take to reach READY plus all guilds, ms. Default 45 000. */
  connectTimeoutMs: number;
  /** Longest discord.js may spend reconnecting by itself before the client is rebuilt, ms. Default 120 000. */
  reconnectGraceMs: number;
  /** A connection that lasted this long resets the rebuild backoff, ms. Default 60 000. */
  stableAfterMs: number;
  /** First delay before a new connection attempt, ms. Default 2 000. */
  backoffInitialMs: number;
  /** Ceiling of any one delay between connection attempts, ms. Default 300 000. */
  backoffMaxMs: number;
  /** discord.js waits this long for guilds listed in READY before declaring itself ready, ms. Default 15 000. */
  waitGuildTimeoutMs: number;
  /** Replaces discord.js's identify throttle (5 s between identifies); tests only. Default discord.js's own. */
  identifyThrottler?: IIdentifyThrottler;
}

export const defaultConnectionTuning: ConnectionTuning = {
  connectTimeoutMs: 45_000,
  reconnectGraceMs: 120_000,
  stableAfterMs: 60_000,
  backoffInitialMs: 2_000,
  backoffMaxMs: 300_000,
  waitGuildTimeoutMs: 15_000,
};

export interface ConnectionDeps {
  config: Pick<DiscordChannelConfig, "token" | "api" | "gatewayUrl">;
  clock: Clock;
  random: Random;
  log: Logger;
  /** Removes the token from any text before it reaches a log or status. */
  redact(text: string): string;
  report(event: AdapterStatusEvent): void;
  /** Called for messages of the current client only. */
  onMessage(message: Message, client: Client<true>): void;
  /** A person tapped a button of one of the bot's messages. */
  onButton?(interaction: ButtonInteraction): void;
  /** A person used one of the bot's application commands. */
  onCommand?(interaction: ChatInputCommandInteraction): void;
  /**
   * A new gateway session began (a first READY, a new client, or discord.js re-identifying):
   * what was sent meanwhile is not dispatched again, so the adapter may catch up (catch-up.ts).
   * Not called after a RESUME, which replays what was missed.
   */
  onNewSession?(client: Client<true>): void;
  tuning: ConnectionTuning;
}

export interface GatewayConnection {
  /**
   * Resolves once connected, or once a first attempt failed in a way retrying
   * may fix (retries then go on in the background); rejects on a failure
   * retrying cannot fix (a refused token, disallowed intents).
   */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The connected client, or null while (re)connecting. */
  current(): Client<true> | null;
}

/** How long `stop` waits for discord.js to close the socket. */
const DESTROY_WAIT_MS = 5_000;

/** One discord.js client and what the supervisor knows of it. */
interface Built {
  client: Client;
  /** The supervisor's generation when it was built: its events count only while that is still current. */
  generation: number;
  /** Set on destroy: a login still in flight must not open a socket, a destroyed shard must not reconnect. */
  guard: { cancelled: boolean };
  login: Promise<unknown> | null;
}

export function createGatewayConnection(deps: ConnectionDeps): GatewayConnection {
  return new GatewaySupervisor(deps);
}

/** A connected client must go (`failure` says why); permanent failures end the loop. */
class RebuildNeeded extends Error {
  override readonly name = "RebuildNeeded";
  constructor(readonly failure: ConnectFailure) {
    super(failure.message);
  }
}

/** A refused token or intents end the adapter; anything else is worth a new client. */
function gatewayVerdict(error: unknown): ReconnectVerdict {
  if (error instanceof RebuildNeeded) {
    const { failure } = error;
    return failure.permanent ? { fatal: true, detail: failure.message } : { detail: `${failure.message}; reconnecting with a new client` };
  }
  if (error instanceof ConnectFailure) return error.permanent ? { fatal: true, detail: error.message } : { detail: `${error.message}; retrying` };
  return { detail: `${String(error)}; retrying` };
}

class GatewaySupervisor implements GatewayConnection {
  readonly #deps: ConnectionDeps;
  /** Bumped by each new client and whenever a client stops being ours: events of an older client are ignored. */
  #generation = 0;
  /** The client that is connected and ours; null while connecting, rebuilding, failed or stopped. */
  #active: Built | null = null;
  /** Set once, by stop: nothing connects or reports "connected" afterwards. */
  #stopped = false;
  /** Runs while discord.js resumes by itself after a drop; when it fires, the client is rebuilt. */
  #grace: Timer | null = null;
  /** Aborted by stop: ends the loop, a backoff pause included, at once. */
  readonly #stopSignal = new AbortController();
  /** Ends the login in flight (stop calls it); null when none is. */
  #abortAttempt: ((error: Error) => void) | null = null;
  /** Ends the session of the active client (it must be rebuilt); null while none is active. */
  #endSession: ((why: RebuildNeeded | null) => void) | null = null;
  #loop: ReconnectLoop | null = null;
  #startPromise: Promise<void> | null = null;
  #stopPromise: Promise<void> | null = null;

  constructor(deps: ConnectionDeps) {
    this.#deps = deps;
  }

  start(): Promise<void> {
    if (this.#stopped) return Promise.reject(new Error("this discord adapter was stopped: build a new one (createDiscordAdapter) to connect again"));
    // Settles after the first attempt: connected, refused for good (rejects),
    // or failed for now (resolves; retries go on and `status` tells how they fare),
    // so a Discord outage at boot does not hold up the daemon's other channels.
    this.#startPromise ??= this.#begin();
    return this.#startPromise;
  }

  async #begin(): Promise<void> {
    this.#deps.report({ state: "starting" });
    const { clock, random, tuning } = this.#deps;
    const loop = startReconnectLoop({
      session: (ctx) => this.#session(ctx),
      classify: gatewayVerdict,
      clock,
      random,
      backoff: { baseMs: tuning.backoffInitialMs, maxMs: tuning.backoffMaxMs },
      // A client that lasted is rebuilt at once; one that breaks soon after it came up goes on backing off.
      healthyAfterMs: tuning.stableAfterMs,
      retryHealthyAtOnce: true,
      signal: this.#stopSignal.signal,
      onStatus: (status) => this.#onStatus(status),
    });
    this.#loop = loop;
    if ((await loop.firstOutcome) !== "failed") return;
    const end = await loop.done;
    throw end.state === "failed" ? end.error : new ConnectFailure("stopped", false);
  }

  stop(): Promise<void> {
    this.#stopPromise ??= this.#shutDown();
    return this.#stopPromise;
  }

  current(): Client<true> | null {
    const client = this.#active?.client;
    return client?.isReady() ? client : null;
  }

  async #shutDown(): Promise<void> {
    this.#stopped = true;
    this.#stopSignal.abort();
    this.#abortAttempt?.(new ConnectFailure("stopped", false));
    const built = this.#retire();
    if (built) await this.#destroy(built, true);
    await this.#loop?.done;
    this.#deps.report({ state: "stopped" });
  }

  #onStatus(status: ReconnectStatus): void {
    const { log, report } = this.#deps;
    switch (status.state) {
      case "connected":
        report(status.detail === undefined ? { state: "connected" } : { state: "connected", detail: status.detail });
        return;
      case "reconnecting":
        if (status.error instanceof RebuildNeeded) log.warn({ reason: status.error.message }, "rebuilding discord client");
        else
          log.warn(
            { attempt: status.attempt, err: status.error instanceof Error ? status.error.message : String(status.error) },
            "discord connection attempt failed",
          );
        report({ state: "reconnecting", detail: status.detail });
        return;
      case "failed":
        log.error({ err: status.detail }, "discord adapter failed");
        report({ state: "failed", detail: status.detail });
        return;
      case "stopped":
        return;
    }
  }

  /** One client: built, logged in until ready, adopted, and kept until it must be rebuilt (or stop). */
  async #session(ctx: SessionContext): Promise<void> {
    if (this.#stopped) return;
    const built = this.#build();
    try {
      await this.#connectOnce(built);
    } catch (error) {
      await this.#destroy(built, false);
      throw connectFailureOf(error, this.#deps.redact);
    }
    if (ctx.signal.aborted) return this.#destroy(built, false);
    const stopped = () => this.#endSession?.(null);
    const why = await new Promise<RebuildNeeded | null>((resolve) => {
      this.#endSession = resolve;
      ctx.signal.addEventListener("abort", stopped, { once: true });
      this.#adopt(built, ctx);
    });
    this.#endSession = null;
    ctx.signal.removeEventListener("abort", stopped);
    const old = this.#active === built ? this.#retire() : null;
    if (old) await this.#destroy(old, false);
    if (why) throw why;
  }

  #build(): Built {
    const guard = { cancelled: false };
    const { config, tuning } = this.#deps;
    const client = buildGatewayClient({
      config,
      waitGuildTimeoutMs: tuning.waitGuildTimeoutMs,
      identifyThrottler: tuning.identifyThrottler,
      cancelled: () => guard.cancelled,
    });
    const built: Built = { client, generation: ++this.#generation, guard, login: null };
    this.#listen(built);
    return built;
  }

  /** One login, resolved when the client is ready with its guilds. */
  #connectOnce(built: Built): Promise<void> {
    const { clock, tuning, config } = this.#deps;
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const timer = clock.setTimeout(
        () => finish(new ConnectFailure(`gateway not ready within ${tuning.connectTimeoutMs} ms`, false)),
        tuning.connectTimeoutMs,
      );
      const onReady = () => finish();
      const onDisconnect = (event: { code: number }) => finish(closeFailure(event.code));
      const finish = (error?: Error): void => {
        if (settled) return;
        settled = true;
        timer.cancel();
        this.#abortAttempt = null;
        built.client.off(Events.ClientReady, onReady);
        built.client.off(Events.ShardDisconnect, onDisconnect);
        if (error) reject(error);
        else resolve();
      };
      this.#abortAttempt = finish;
      built.client.once(Events.ClientReady, onReady);
      built.client.on(Events.ShardDisconnect, onDisconnect);
      built.login = built.client.login(config.token);
      built.login.catch((error: unknown) => finish(connectFailureOf(error, this.#deps.redact)));
    });
  }

  /** A client that reached READY becomes the active one. */
  #adopt(built: Built, ctx: SessionContext): void {
    this.#active = built;
    ctx.connected(`as ${built.client.user?.tag ?? "bot"}`);
    if (built.client.isReady()) this.#deps.onNewSession?.(built.client);
  }

  /** Wires a client's events; each handler first checks the client is still ours. */
  #listen(built: Built): void {
    const { client } = built;
    const { log, redact } = this.#deps;
    const current = () => built.generation === this.#generation && !this.#stopped;
    const connected = () => this.#active === built;
    client.on(Events.MessageCreate, (message) => {
      if (current() && client.isReady()) this.#deps.onMessage(message, client);
    });
    client.on(Events.InteractionCreate, (interaction) => {
      if (!current()) return;
      if (interaction.isButton()) this.#deps.onButton?.(interaction);
      else if (interaction.isChatInputCommand()) this.#deps.onCommand?.(interaction);
    });
    client.on(Events.ShardReconnecting, () => {
      if (connected()) this.#startGrace(built);
    });
    client.on(Events.ShardResume, () => connected() && this.#endGrace("resumed"));
    client.on(Events.ShardReady, () => {
      if (!connected()) return;
      this.#endGrace("re-identified");
      if (client.isReady()) this.#deps.onNewSession?.(client);
    });
    client.on(Events.ShardDisconnect, (event) => {
      if (!connected()) return;
      this.#rebuild(closeFailure(event.code));
    });
    client.on(Events.ShardError, (error) => log.warn({ err: redact(error.message) }, "discord gateway error"));
    client.on(Events.Error, (error) => log.warn({ err: redact(error.message) }, "discord client error"));
    client.on(Events.Warn, (message) => log.warn(redact(message)));
    client.on(Events.Debug, (message) => log.trace(redact(message)));
  }

  /** discord.js is resuming by itself: give it `reconnectGraceMs`, then rebuild. */
  #startGrace(built: Built): void {
    if (this.#grace) return;
    const { clock, tuning } = this.#deps;
    this.#deps.report({ state: "reconnecting", detail: "gateway connection lost; resuming" });
    this.#grace = clock.setTimeout(() => {
      this.#grace = null;
      if (this.#active === built) this.#rebuild(new ConnectFailure(`gateway not back after ${tuning.reconnectGraceMs} ms`, false));
    }, tuning.reconnectGraceMs);
  }

  /** discord.js came back by itself (`how`) within the grace period. */
  #endGrace(how: string): void {
    if (!this.#grace) return;
    this.#clearGrace();
    this.#deps.report({ state: "connected", detail: how });
  }

  #clearGrace(): void {
    this.#grace?.cancel();
    this.#grace = null;
  }

  /** The active client stops being ours (its events are ignored from now on); returns it for destroying. */
  #retire(): Built | null {
    this.#clearGrace();
    const built = this.#active;
    this.#active = null;
    this.#generation++;
    return built;
  }

  /** The active client must go: its session ends, and the loop decides (a new client, or "failed" for a permanent close). */
  #rebuild(failure: ConnectFailure): void {
    if (this.#stopped) return;
    this.#endSession?.(new RebuildNeeded(failure));
  }

  /**
   * Destroys a client for good. Only `stop` waits for it, and not forever: a
   * shard destroyed while it waits for HELLO or READY never settles its destroy
   * (see gateway-client.ts's guardShards), and a rebuild must not hang on that.
   */
  async #destroy(built: Built, wait: boolean): Promise<void> {
    built.guard.cancelled = true;
    // A login still in flight rejects once its connect is refused; nobody needs that rejection.
    void built.login?.catch(() => undefined);
    const done = built.client
      .destroy()
      .catch((error: unknown) => this.#deps.log.debug({ err: connectFailureOf(error, this.#deps.redact).message }, "destroying discord client"));
    if (!wait) return;
    let cancelBound = () => {};
    const bound = new Promise<void>((resolve) => {
      const timer = this.#deps.clock.setTimeout(resolve, DESTROY_WAIT_MS);
      cancelBound = () => timer.cancel();
    });
    await Promise.race([done, bound]);
    cancelBound();
  }
}
