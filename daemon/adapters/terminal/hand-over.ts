/** A typed line handed to the core by the one hand-over (../hand-over.ts); what the core cannot take is said on screen. */
import type { Clock } from "../../../shared/clock.js";
import type { InboundSink } from "../../vocabulary/adapter.js";
import { handOver } from "../hand-over.js";
import type { TerminalChannelConfig } from "./config.js";
import { terminalFiles } from "./files.js";
import { translateMessage } from "./inbound.js";
import type { TerminalScreen } from "./outbound.js";

export interface LineHandOverDeps {
  config: Pick<TerminalChannelConfig, "id" | "userId" | "userName">;
  clock: Clock;
  screen: Pick<TerminalScreen, "print">;
}

/** Line `seq` of run `runId`; undefined for a blank line (nothing to hand over). */
export function handOverLine(deps: LineHandOverDeps, sink: InboundSink, runId: string, seq: number, raw: string): Promise<void> | undefined {
  const message = translateMessage(raw, { config: deps.config, runId, seq, sentAt: deps.clock.now() });
  if (!message) return undefined;
  return handOver(sink, message, [], terminalFiles).then(
    () => undefined,
    (err: unknown) => deps.screen.print(`(message not taken: ${err instanceof Error ? err.message : String(err)}; please send it again)`),
  );
}
