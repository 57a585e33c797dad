/**
 * One room event handed to the core: translate (inbound.ts), then the one hand-over
 * (../hand-over.ts) with the event's file (files.ts, the authenticated media endpoint).
 * Resolves once the core has the message (or it is not for the core); rejects when the event
 * must come again (the core deferred it, the journal failed, the adapter is stopping
 * mid-download), so the sync token is not kept.
 */
import type { InboundSink } from "../../vocabulary/adapter.js";
import { handOver } from "../hand-over.js";
import { type MatrixFilesDeps, matrixFiles } from "./files.js";
import { type BotIdentity, type RoomEvent, translateMessage } from "./inbound.js";

export interface HandoverContext {
  bot: BotIdentity;
  sink: InboundSink;
  accountId: string;
  /** Aborted when the adapter stops: a download under way ends, and the event must come again. */
  signal: AbortSignal;
}

export async function handOverEvent(event: RoomEvent, room: { roomId: string; direct: boolean }, to: HandoverContext, files: MatrixFilesDeps): Promise<void> {
  const translated = translateMessage(event, room, to.bot, to.accountId);
  if (!translated) return;
  const outcome = await handOver(to.sink, translated.message, translated.files, matrixFiles(files, to.signal));
  if (outcome && !outcome.acknowledge) throw new Error(`not taken now (${outcome.reason}); asked for again`);
}
