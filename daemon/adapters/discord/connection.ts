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
 * Rebuilds back off exponentially with jitter (rebuild-streak.ts says from
 * where). Authentication and intent failures are reported as "failed" and not
 * retried: the same token would be refused again.
 */
import { Events, type ButtonInteraction, type ChatInputCommandInteraction, type Client, type IIdentifyThrottler, type Message } from "discord.js";
import type { Logger } from "pino";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import type { AdapterStatusEvent } from "../../vocabulary/adapter.js";
import { pause } from "../../helpers/retry.js";
import { createBackoff } from "../../../shared/backoff.js";
import type { DiscordChannelConfig } from "./config.js";
import { closeFailure, ConnectFailure, connectFailureOf } from "./connect-failure.js";
import { buildGatewayClient } from "./gateway-client.js";
import { RebuildStreak } from "./rebuild-streak.js";

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

class GatewaySupervisor implements GatewayConnection {
  readonly #deps: ConnectionDeps;
  /** Bumped by each new client and whenever a client stops being ours: events of an older client are ignored. */
  #generation = 0;
  /** The client that is connected and ours; null while connecting, rebuilding, failed or stopped. */
  #active: Built | null = null;
  /** Set once, by stop: nothing connects or reports "connected" afterwards. */
  #stopped = false;
  /** True while one rebuild runs: another close or grace expiry meanwhile starts no second one. */
  #rebuilding = false;
  readonly #streak: RebuildStreak;
  /** Runs while discord.js resumes by itself after a drop; when it fires, the client is rebuilt. */
  #grace: Timer | null = null;
  /** Aborted by stop: ends a backoff pause at once. */
  readonly #stopSignal = new AbortController();
  /** Ends the login in flight (stop calls it); null when none is. */
  #abortAttempt: ((error: Error) => void) | null = null;
  /** The connect loop running now (start's or a rebuild's): stop waits for it. */
  #loop: Promise<void> | null = null;
  #startPromise: Promise<void> | null = null;
  #stopPromise: Promise<void> | null = null;

  constructor(deps: ConnectionDeps) {
    this.#deps = deps;
    this.#streak = new RebuildStreak(deps.tuning.stableAfterMs);
  }

  start(): Promise<void> {
    if (this.#stopped) return Promise.reject(new Error("this discord adapter was stopped: build a new one (createDiscordAdapter) to connect again"));
    // Settles after the first attempt: connected, refused for good (rejects),
    // or failed for now (resolves; retries go on and `status` tells how they fare),
    // so a Discord outage at boot does not hold up the daemon's other channels.
    this.#startPromise ??= new Promise<void>((resolve, reject) => {
      this.#deps.report({ state: "starting" });
      this.#loop = this.#connectLoop(0, resolve).then(resolve, reject);
    });
    return this.#startPromise;
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
    await this.#loop?.catch(() => undefined);
    this.#deps.report({ state: "stopped" });
  }

  /**
   * Connects a fresh client, retrying with backoff; `firstAttempt` carries an
   * earlier streak. `onRetrying` runs once, when the first attempt failed and
   * retries continue in the background.
   */
  async #connectLoop(firstAttempt: number, onRetrying?: () => void): Promise<void> {
    for (let attempt = firstAttempt; ; ) {
      if (attempt > 0) await this.#pause(attempt);
      if (this.#stopped) return;
      const built = this.#build();
      try {
        await this.#connectOnce(built);
        return await this.#adopt(built);
      } catch (error) {
        await this.#destroy(built, false);
        if (this.#stopped) return;
        const failure = connectFailureOf(error, this.#deps.redact);
        if (failure.permanent) {
          await this.#fail(failure);
          throw failure;
        }
        attempt++;
        this.#deps.report({ state: "reconnecting", detail: `${failure.message}; retrying` });
        this.#deps.log.warn({ attempt, err: failure.message }, "discord connection attempt failed");
        onRetrying?.();
      }
    }
  }

  /** Waits out the backoff before `attempt` (jittered, so many bridges do not hammer the gateway in step); stop ends it. */
  #pause(attempt: number): Promise<void> {
    const { tuning, random, clock } = this.#deps;
    const delay = createBackoff({ baseMs: tuning.backoffInitialMs, maxMs: tuning.backoffMaxMs }, random).delayFor(attempt);
    return pause(clock, delay, this.#stopSignal.signal);
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

  /** A client that reached READY becomes the active one, unless stop came meanwhile. */
  async #adopt(built: Built): Promise<void> {
    if (this.#stopped) return this.#destroy(built, false);
    this.#active = built;
    this.#streak.connected(this.#deps.clock.now());
    this.#deps.report({ state: "connected", detail: `as ${built.client.user?.tag ?? "bot"}` });
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
      const failure = closeFailure(event.code);
      if (failure.permanent) void this.#fail(failure);
      else this.#rebuild(failure.message);
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
      if (this.#active === built) this.#rebuild(`gateway not back after ${tuning.reconnectGraceMs} ms`);
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

  async #fail(failure: ConnectFailure): Promise<void> {
    const built = this.#retire();
    if (built) await this.#destroy(built, false);
    this.#deps.log.error({ err: failure.message }, "discord adapter failed");
    this.#deps.report({ state: "failed", detail: failure.message });
  }

  #rebuild(reason: string): void {
    if (this.#stopped || this.#rebuilding) return;
    this.#rebuilding = true;
    const old = this.#retire();
    const firstAttempt = this.#streak.rebuild(this.#deps.clock.now());
    this.#deps.log.warn({ reason }, "rebuilding discord client");
    this.#deps.report({ state: "reconnecting", detail: `${reason}; reconnecting with a new client` });
    this.#loop = (async () => {
      try {
        if (old) await this.#destroy(old, false);
        await this.#connectLoop(firstAttempt);
      } catch {
        // Permanent failures were reported by connectLoop.
      } finally {
        this.#rebuilding = false;
      }
    })();
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
