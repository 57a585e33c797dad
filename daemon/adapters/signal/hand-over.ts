/**
 * One spooled message handed to the core: translate (inbound.ts), then the
 * one hand-over (../hand-over.ts) with its files (files.ts). Resolves with
 * whether it may leave the spool: true once the core journaled it, knows it
 * already, refused it on purpose, or it carries nothing for the core; false
 * when the core did not take it now (busy, stopping) or the journal failed.
 */
import type { Logger } from "pino";
import type { InboundSink } from "../../vocabulary/adapter.js";
import { handOver } from "../hand-over.js";
import { signalFiles } from "./files.js";
import { ReceiveEvent, type SignalSelf, translateMessage } from "./inbound.js";
import type { RpcCall } from "./rpc.js";

export interface HandOverDeps {
  rpc: RpcCall;
  log: Logger;
  self: SignalSelf;
  accountId: string;
}

export async function handOverEvent(deps: HandOverDeps, sink: InboundSink, id: string, raw: string, signal: AbortSignal): Promise<boolean> {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return true;
  }
  const event = ReceiveEvent.safeParse(json);
  const translated = event.success ? translateMessage(event.data, deps.self, deps.accountId) : undefined;
  if (!translated) return true;
  try {
    const outcome = await handOver(sink, translated.message, translated.files, signalFiles({ rpc: deps.rpc, log: deps.log }, signal));
    if (!outcome || outcome.acknowledge) return true;
    deps.log.info({ messageId: id, reason: outcome.reason }, "signal message not taken now; kept, tried again shortly");
  } catch (error) {
    if (!signal.aborted)
      deps.log.warn(
        { messageId: id, err: error instanceof Error ? error.message : String(error) },
        "signal message could not be handed over; kept, tried again shortly",
      );
  }
  return false;
}
