/** A typed line as the core's message (pure: no streams, no clock). */
import type { InboundMessage } from "../../vocabulary/adapter.js";
import { TERMINAL_PLATFORM, type TerminalChannelConfig } from "./config.js";

/** Where a line was typed: the channel, this run's id and the line's number in the run. */
export interface TerminalLineContext {
  config: Pick<TerminalChannelConfig, "id" | "userId" | "userName">;
  /** Unique per process start: the core drops repeated message ids, across restarts too. */
  runId: string;
  seq: number;
  sentAt: number;
}

/** The message a typed line is, or `undefined` for a blank line. */
export function translateMessage(raw: string, context: TerminalLineContext): InboundMessage | undefined {
  const text = raw.trim();
  if (!text) return undefined;
  const { config } = context;
  return {
    platform: TERMINAL_PLATFORM,
    accountId: config.id,
    chatId: config.userId,
    chatType: "direct",
    userId: config.userId,
    messageId: `${context.runId}-${context.seq}`,
    text,
    sentAt: context.sentAt,
    ...(config.userName !== undefined ? { userName: config.userName } : {}),
  };
}
