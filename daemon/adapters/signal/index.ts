/**
 * The Signal adapter: the signal-cli daemon's JSON-RPC over HTTP (rpc.ts)
 * and its server-sent events (connection.ts) behind the `ChatAdapter`
 * interface. Wiring only:
 *
 * - events in: connection.ts reads the stream (watchdog, reconnects), spools
 *   each message (spool.ts), translates it (inbound.ts) and hands it over with
 *   its files (files.ts);
 * - replies: outbound.ts (quotes, paced edits within Signal's limits, files, typing, reactions);
 * - errors: errors.ts (rate limits and proof-required challenges as `SendError`s).
 */
import { cryptoRandom, type Random } from "../../../shared/random.js";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import type { SignalChannelConfig } from "./config.js";
import { SignalConnection } from "./connection.js";
import { createSignalOutbound, SIGNAL_FILE_LIMITS, SIGNAL_LIMITS } from "./outbound.js";
import { createRpc, endpointOf } from "./rpc.js";
import { Spool } from "./spool.js";

export { SIGNAL_LIMITS } from "./outbound.js";

export interface SignalAdapterOptions {
  /** First pause after a failure (doubling up to 30 s), and before a deferred message is tried again. Default 1000 ms. */
  retryPauseMs?: number;
  /** Per JSON-RPC call, ms (a send with a large file takes a while). Default 120 000. */
  rpcTimeoutMs?: number;
  /** Jitter for pauses. Default `cryptoRandom`. */
  random?: Random;
}

export function createSignalAdapter(config: SignalChannelConfig, deps: AdapterDeps, options: SignalAdapterOptions = {}): ChatAdapter {
  const log = deps.logger.child({ platform: "signal", accountId: config.id });
  const endpoint = endpointOf(config.url);
  const rpc = createRpc({ endpoint, account: config.account, timeoutMs: options.rpcTimeoutMs ?? 120_000 });
  const connection = new SignalConnection({
    endpoint,
    account: config.account,
    accountId: config.id,
    rpc,
    spool: new Spool(deps.state),
    log,
    clock: deps.clock,
    random: options.random ?? cryptoRandom,
    watchdogMs: config.watchdogMs,
    retryPauseMs: options.retryPauseMs ?? 1000,
  });
  const outbound = createSignalOutbound({ rpc, state: deps.state, account: config.account, clock: deps.clock, log });
  return {
    platform: "signal",
    accountId: config.id,
    limits: { ...SIGNAL_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? SIGNAL_LIMITS.minEditIntervalMs },
    // signal-cli never sends an event twice, but the adapter's spool does: what the core does not take now stays on disk and is handed over again.
    redelivers: true,
    measure: outbound.measure,
    start: (sink) => connection.start(sink),
    stop: () => connection.stop(),
    send: outbound.send,
    edits: { edit: outbound.edit },
    sendTyping: outbound.sendTyping,
    files: { limits: SIGNAL_FILE_LIMITS, send: outbound.sendFile },
    reactions: { react: outbound.react },
  };
}
