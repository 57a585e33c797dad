/**
 * The discord.js client as the connection builds it: the intents, partials
 * and cache the adapter needs, an optional gateway override, and two guards
 * against crashes of discord.js 14 / @discordjs/ws 1.2 that end the process
 * or leak a live session (`guardShards`, `dropLatePackets`). Every guard asks
 * `cancelled()`: true once the connection has destroyed this client.
 */
import { Client, GatewayIntentBits, Options, Partials, SimpleShardingStrategy, type IIdentifyThrottler, type WebSocketOptions } from "discord.js";
import type { DiscordChannelConfig } from "./config.js";
import { ConnectFailure } from "./connect-failure.js";

/** @discordjs/ws's manager (discord.js exports its own class under that name). */
type WSWebSocketManager = Parameters<NonNullable<WebSocketOptions["buildStrategy"]>>[0];

export interface GatewayClientOptions {
  config: Pick<DiscordChannelConfig, "api" | "gatewayUrl">;
  /** discord.js waits this long for guilds listed in READY before declaring itself ready, ms. */
  waitGuildTimeoutMs: number;
  /** Replaces discord.js's identify throttle (5 s between identifies); tests only. Default discord.js's own. */
  identifyThrottler?: IIdentifyThrottler | undefined;
  /** True once this client was destroyed: it must not connect, reconnect or handle packets any more. */
  cancelled(): boolean;
}

export function buildGatewayClient(options: GatewayClientOptions): Client {
  const { identifyThrottler: throttler } = options;
  const buildStrategy = guardedStrategy(options);
  const client = new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
    // DM channels are not cached until a message arrives in one.
    partials: [Partials.Channel],
    rest: { api: options.config.api },
    waitGuildTimeout: options.waitGuildTimeoutMs,
    makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 25 }),
    ws: throttler ? { buildStrategy, buildIdentifyThrottler: () => throttler } : { buildStrategy },
  });
  dropLatePackets(client, options.cancelled);
  return client;
}

/**
 * The one seam discord.js offers into @discordjs/ws. It lets us refuse a
 * connect that lands after a destroy, point the shard at an override
 * gateway, and stop a destroyed shard from reconnecting (see guardShards).
 */
function guardedStrategy(options: GatewayClientOptions): (manager: WSWebSocketManager) => SimpleShardingStrategy {
  const { cancelled } = options;
  const gatewayUrl = options.config.gatewayUrl;
  class GuardedStrategy extends SimpleShardingStrategy {
    override async spawn(shardIds: number[]): Promise<void> {
      await super.spawn(shardIds);
      guardShards(this, cancelled);
    }
    override async connect(): Promise<void> {
      if (cancelled()) throw new ConnectFailure("connection attempt cancelled", false);
      return super.connect();
    }
  }
  return (manager) => {
    if (gatewayUrl) pointAt(manager, gatewayUrl);
    return new GuardedStrategy(manager);
  };
}

/** Sends the first connect and every resume to `gatewayUrl` instead of the address Discord names. */
function pointAt(manager: WSWebSocketManager, gatewayUrl: string): void {
  const fetchInfo = manager.fetchGatewayInformation.bind(manager);
  manager.fetchGatewayInformation = async (force?: boolean) => ({ ...(await fetchInfo(force)), url: gatewayUrl });
  const retrieve = manager.options.retrieveSessionInfo.bind(manager.options);
  manager.options.retrieveSessionInfo = async (shardId: number) => {
    const session = await retrieve(shardId);
    return session ? { ...session, resumeURL: gatewayUrl } : session;
  };
}

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
