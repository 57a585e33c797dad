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
 * Rebuilds back off exponentially with jitter. Authentication and intent
 * failures are reported as "failed" and not retried: the same token would be
 * refused again.
 */
import {
  Client,
  Events,
  GatewayIntentBits,
  Options,
  Partials,
  SimpleShardingStrategy,
  type IIdentifyThrottler,
  type Message,
  type WebSocketOptions,
} from "discord.js";
import type { Logger } from "pino";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import type { DiscordChannelConfig } from "./platform.js";
import type { AdapterStatusEvent } from "../../core/adapter.js";
import { backoffDelay, pause } from "../../core/retry.js";

/** @discordjs/ws's manager (discord.js exports its own class under that name). */
type WSWebSocketManager = Parameters<NonNullable<WebSocketOptions["buildStrategy"]>>[0];

export interface ConnectionTuning {
  /** Longest a login may take to reach READY plus all guilds. */
  connectTimeoutMs: number;
  /** Longest discord.js may spend reconnecting by itself before the client is rebuilt. */
  reconnectGraceMs: number;
  /** A connection that lasted this long resets the rebuild backoff. */
  stableAfterMs: number;
  backoffInitialMs: number;
  backoffMaxMs: number;
  /** discord.js waits this long for guilds listed in READY before declaring itself ready. */
  waitGuildTimeoutMs: number;
  /** Replaces discord.js's identify throttle (5 s between identifies); tests only. */
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

/** A reason a connection attempt ended, without the token in it. */
export class ConnectFailure extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = "ConnectFailure";
  }
}

/** Close codes after which re-identifying with the same settings is pointless. */
const PERMANENT_CLOSE: Record<number, string> = {
  4004: "authentication failed: the bot token is invalid or was reset",
  4013: "the gateway refused the requested intents as invalid",
  4014: "disallowed intents: enable the Message Content intent for this bot in the Discord developer portal",
};

export function closeFailure(code: number): ConnectFailure {
  const permanent = PERMANENT_CLOSE[code];
  return permanent ? new ConnectFailure(permanent, true) : new ConnectFailure(`gateway closed with code ${code}`, false);
}

/** How long `stop` waits for discord.js to close the socket. */
const DESTROY_WAIT_MS = 5_000;

/**
 * Works around @discordjs/ws 1.2: destroying a shard while it waits for HELLO
 * or READY aborts that wait, whose error path starts a second destroy with
 * "reconnect". The second one clobbers the first's close handler (so
 * `client.destroy()` never resolves) and, 500 ms later, connects again: a
 * destroyed client with a live gateway session. Once our client is cancelled,
 * its shards' reconnect entry point does nothing. The method is private in
 * the typings, hence the structural cast; if a later version renames it,
 * nothing is patched and only the leak returns.
 */
function guardShards(strategy: object, cancelled: () => boolean): void {
  const shards = (strategy as { shards?: unknown }).shards;
  if (!(shards instanceof Map)) return;
  for (const shard of shards.values() as Iterable<unknown>) {
    if (!shard || typeof shard !== "object") continue;
    const target = shard as { internalConnect?: unknown };
    const original = target.internalConnect;
    if (typeof original !== "function") continue;
    target.internalConnect = function guardedInternalConnect(this: unknown, ...args: unknown[]): unknown {
      if (cancelled()) return Promise.resolve();
      return Reflect.apply(original, shard, args);
    };
  }
}

/**
 * discord.js 14's RESUMED handler reads `shard.sessionInfo.sequence`. A RESUMED that arrives
 * after the client was destroyed (its session info already cleared) throws inside the
 * socket's message handler: an unhandled rejection, which ends the process. A destroyed or
 * sessionless client has nothing left to hear from that resume: its packet is dropped.
 */
export function dropLatePackets(client: Client, cancelled: () => boolean): void {
  type Shard = { sessionInfo?: unknown } | undefined;
  const ws = client.ws as unknown as { handlePacket(packet?: { t?: unknown }, shard?: Shard): boolean };
  const handle = ws.handlePacket.bind(ws);
  ws.handlePacket = (packet, shard) => {
    if (packet && (cancelled() || (packet.t === "RESUMED" && !shard?.sessionInfo))) return false;
    return handle(packet, shard);
  };
}

interface Built {
  client: Client;
  generation: number;
  /** Set on destroy: a login still in flight must not open a socket, a destroyed shard must not reconnect. */
  guard: { cancelled: boolean };
  login: Promise<unknown> | null;
}

export function createGatewayConnection(deps: ConnectionDeps): GatewayConnection {
  const { clock, log, tuning } = deps;
  let generation = 0;
  let active: Built | null = null;
  let connected = false;
  let stopped = false;
  let rebuilding = false;
  let lastConnectedAt = 0;
  let rebuildStreak = 0;
  let graceTimer: Timer | null = null;
  /** Aborted by stop: ends a backoff pause at once. */
  const stopSignal = new AbortController();
  let abortAttempt: ((error: Error) => void) | null = null;
  let loop: Promise<void> | null = null;
  let startPromise: Promise<void> | null = null;
  let stopPromise: Promise<void> | null = null;

  // Jittered, so many bridges do not hammer the gateway in step (the daemon's one backoff).
  const backoff = (attempt: number): number => backoffDelay(attempt, { baseMs: tuning.backoffInitialMs, maxMs: tuning.backoffMaxMs }, deps.random);
  const sleep = (ms: number): Promise<void> => pause(clock, ms, stopSignal.signal);

  const describe = (error: unknown): ConnectFailure => {
    if (error instanceof ConnectFailure) return error;
    if (error && typeof error === "object" && "code" in error && error.code === "TokenInvalid") {
      return new ConnectFailure("Discord refused the bot token (401)", true);
    }
    const message = error instanceof Error ? error.message : String(error);
    return new ConnectFailure(deps.redact(message), false);
  };

  function build(): Built {
    const guard = { cancelled: false };
    const gatewayUrl = deps.config.gatewayUrl;
    // The one seam discord.js offers into @discordjs/ws. It lets us refuse a
    // connect that lands after a destroy, point the shard at an override
    // gateway, and stop a destroyed shard from reconnecting (see guardShards).
    class GuardedStrategy extends SimpleShardingStrategy {
      override async spawn(shardIds: number[]): Promise<void> {
        await super.spawn(shardIds);
        guardShards(this, () => guard.cancelled);
      }
      override async connect(): Promise<void> {
        if (guard.cancelled) throw new ConnectFailure("connection attempt cancelled", false);
        return super.connect();
      }
    }
    const buildStrategy = (manager: WSWebSocketManager) => {
      if (gatewayUrl) {
        const fetchInfo = manager.fetchGatewayInformation.bind(manager);
        manager.fetchGatewayInformation = async (force?: boolean) => ({ ...(await fetchInfo(force)), url: gatewayUrl });
        const retrieve = manager.options.retrieveSessionInfo.bind(manager.options);
        manager.options.retrieveSessionInfo = async (shardId: number) => {
          const session = await retrieve(shardId);
          return session ? { ...session, resumeURL: gatewayUrl } : session;
        };
      }
      return new GuardedStrategy(manager);
    };
    const throttler = tuning.identifyThrottler;
    const client = new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
      // DM channels are not cached until a message arrives in one.
      partials: [Partials.Channel],
      rest: { api: deps.config.api },
      waitGuildTimeout: tuning.waitGuildTimeoutMs,
      makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 25 }),
      ws: throttler ? { buildStrategy, buildIdentifyThrottler: () => throttler } : { buildStrategy },
    });
    dropLatePackets(client, () => guard.cancelled);
    const built: Built = { client, generation: ++generation, guard, login: null };
    const mine = () => built.generation === generation && !stopped;

    client.on(Events.MessageCreate, (message) => {
      if (!mine() || !client.isReady()) return;
      deps.onMessage(message, client);
    });
    client.on(Events.ShardReconnecting, () => {
      if (!mine() || !connected) return;
      if (!graceTimer) {
        deps.report({ state: "reconnecting", detail: "gateway connection lost; resuming" });
        graceTimer = clock.setTimeout(() => {
          graceTimer = null;
          if (mine()) rebuild(`gateway not back after ${tuning.reconnectGraceMs} ms`);
        }, tuning.reconnectGraceMs);
      }
    });
    const back = (how: string) => {
      if (!mine() || !connected) return;
      if (graceTimer) {
        graceTimer.cancel();
        graceTimer = null;
        deps.report({ state: "connected", detail: how });
      }
    };
    client.on(Events.ShardResume, () => back("resumed"));
    client.on(Events.ShardReady, () => back("re-identified"));
    client.on(Events.ShardDisconnect, (event) => {
      if (!mine() || !connected) return;
      const failure = closeFailure(event.code);
      if (failure.permanent) void fail(failure);
      else rebuild(failure.message);
    });
    client.on(Events.ShardError, (error) => log.warn({ err: deps.redact(error.message) }, "discord gateway error"));
    client.on(Events.Error, (error) => log.warn({ err: deps.redact(error.message) }, "discord client error"));
    client.on(Events.Warn, (message) => log.warn(deps.redact(message)));
    client.on(Events.Debug, (message) => log.trace(deps.redact(message)));
    return built;
  }

  /**
   * Destroys a client for good. Only `stop` waits for it, and not forever: a
   * shard destroyed while it waits for HELLO or READY never settles its destroy
   * (see guardShards), and a rebuild must not hang on that.
   */
  async function destroy(built: Built, wait: boolean): Promise<void> {
    built.guard.cancelled = true;
    // A login still in flight rejects once its connect is refused; nobody needs that rejection.
    void built.login?.catch(() => undefined);
    const done = built.client.destroy().catch((error: unknown) => log.debug({ err: describe(error).message }, "destroying discord client"));
    if (!wait) return;
    let cancelBound = () => {};
    const bound = new Promise<void>((resolve) => {
      const timer = clock.setTimeout(resolve, DESTROY_WAIT_MS);
      cancelBound = () => timer.cancel();
    });
    await Promise.race([done, bound]);
    cancelBound();
  }

  /** One login, resolved when the client is ready with its guilds. */
  function connectOnce(built: Built): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const timer = clock.setTimeout(
        () => finish(new ConnectFailure(`gateway not ready within ${tuning.connectTimeoutMs} ms`, false)),
        tuning.connectTimeoutMs,
      );
      const onReady = () => finish();
      const onDisconnect = (event: { code: number }) => finish(closeFailure(event.code));
      function finish(error?: Error): void {
        if (settled) return;
        settled = true;
        timer.cancel();
        abortAttempt = null;
        built.client.off(Events.ClientReady, onReady);
        built.client.off(Events.ShardDisconnect, onDisconnect);
        if (error) reject(error);
        else resolve();
      }
      abortAttempt = finish;
      built.client.once(Events.ClientReady, onReady);
      built.client.on(Events.ShardDisconnect, onDisconnect);
      built.login = built.client.login(deps.config.token);
      built.login.catch((error: unknown) => finish(describe(error)));
    });
  }

  /**
   * Connects a fresh client, retrying with backoff; `firstAttempt` carries an
   * earlier streak. `onRetrying` runs once, when the first attempt failed and
   * retries continue in the background.
   */
  async function connectLoop(firstAttempt: number, onRetrying?: () => void): Promise<void> {
    let attempt = firstAttempt;
    for (;;) {
      if (attempt > 0) await sleep(backoff(attempt));
      if (stopped) return;
      const built = build();
      try {
        await connectOnce(built);
        if (stopped) {
          await destroy(built, false);
          return;
        }
        active = built;
        connected = true;
        lastConnectedAt = clock.now();
        deps.report({ state: "connected", detail: `as ${built.client.user?.tag ?? "bot"}` });
        return;
      } catch (error) {
        await destroy(built, false);
        if (stopped) return;
        const failure = describe(error);
        if (failure.permanent) {
          await fail(failure);
          throw failure;
        }
        attempt++;
        deps.report({ state: "reconnecting", detail: `${failure.message}; retrying` });
        log.warn({ attempt, err: failure.message }, "discord connection attempt failed");
        onRetrying?.();
      }
    }
  }

  async function fail(failure: ConnectFailure): Promise<void> {
    graceTimer?.cancel();
    graceTimer = null;
    connected = false;
    const built = active;
    active = null;
    generation++;
    if (built) await destroy(built, false);
    log.error({ err: failure.message }, "discord adapter failed");
    deps.report({ state: "failed", detail: failure.message });
  }

  function rebuild(reason: string): void {
    if (stopped || rebuilding) return;
    rebuilding = true;
    graceTimer?.cancel();
    graceTimer = null;
    connected = false;
    const old = active;
    active = null;
    generation++;
    // Rebuilding again soon after the last success means something keeps
    // breaking: keep backing off instead of starting from zero.
    rebuildStreak = clock.now() - lastConnectedAt < tuning.stableAfterMs ? rebuildStreak + 1 : 0;
    log.warn({ reason }, "rebuilding discord client");
    deps.report({ state: "reconnecting", detail: `${reason}; reconnecting with a new client` });
    loop = (async () => {
      try {
        if (old) await destroy(old, false);
        await connectLoop(rebuildStreak);
      } catch {
        // Permanent failures were reported by connectLoop.
      } finally {
        rebuilding = false;
      }
    })();
  }

  return {
    start() {
      if (stopped) return Promise.reject(new Error("discord adapter was stopped"));
      // Settles after the first attempt: connected, refused for good (rejects),
      // or failed for now (resolves; retries go on and `status` tells how they fare),
      // so a Discord outage at boot does not hold up the daemon's other channels.
      startPromise ??= new Promise<void>((resolve, reject) => {
        deps.report({ state: "starting" });
        loop = connectLoop(0, resolve).then(resolve, reject);
      });
      return startPromise;
    },
    stop() {
      stopPromise ??= (async () => {
        stopped = true;
        connected = false;
        graceTimer?.cancel();
        graceTimer = null;
        stopSignal.abort();
        abortAttempt?.(new ConnectFailure("stopped", false));
        const built = active;
        active = null;
        generation++;
        if (built) await destroy(built, true);
        await loop?.catch(() => undefined);
        deps.report({ state: "stopped" });
      })();
      return stopPromise;
    },
    current() {
      const client = active?.client;
      return connected && client?.isReady() ? client : null;
    },
  };
}
