/**
 * A chat in the terminal: one local person, one direct chat. Every line is a
 * message (lines typed while a reply is pending count too); replies print as
 * `agent> ...`. Works on a TTY (prompt kept below the output) and on piped
 * input (no prompt, no escape codes); input EOF stops it cleanly once every
 * line read has been handed to the core.
 */
import { clearLine, createInterface, cursorTo, type Interface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { systemClock, type Clock } from "../../../shared/clock.js";
import type { TerminalChannelConfig } from "./platform.js";
import {
  rawLength,
  type AdapterCapabilities,
  type AdapterLimits,
  type ChatAdapter,
  type ChatTarget,
  type InboundMessage,
  type InboundSink,
  type SendOptions,
} from "../../core/adapter.js";

export const TERMINAL_PLATFORM = "terminal";
export const REPLY_PREFIX = "agent> ";
export const TYPING_LINE = "agent is typing…";

export interface TerminalAdapterOptions {
  input: Readable;
  output: Writable;
  config: TerminalChannelConfig;
  clock?: Clock;
  /** Interactive line editing and a prompt; default: both streams are TTYs. */
  terminal?: boolean;
  /**
   * Ctrl+C in raw TTY mode reaches readline, not the process; by default it is
   * passed on as a real SIGINT so the daemon's own shutdown runs.
   */
  onInterrupt?: () => void;
}

type Stream = { isTTY?: boolean };

/** The terminal chat, plus a way to show the person a short notice (a log warning, a status line) above the prompt. */
export interface TerminalAdapter extends ChatAdapter {
  notice(text: string): void;
}

export function createTerminalAdapter(options: TerminalAdapterOptions): TerminalAdapter {
  const { input, output, config } = options;
  const clock = options.clock ?? systemClock;
  const tty = options.terminal ?? ((input as Stream).isTTY === true && (output as Stream).isTTY === true);
  const onInterrupt = options.onInterrupt ?? (() => process.kill(process.pid, "SIGINT"));
  // A typing line per pending reply at most; refreshes would only repeat it.
  const limits: AdapterLimits = { maxMessageLength: 100_000, typingRefreshMs: 60_000 };
  // Lines typed are read once: what the core cannot take is told, never left for a redelivery.
  // Streaming: text is written as it comes (a terminal cannot change what it printed).
  const capabilities: AdapterCapabilities = { redelivers: false, edit: false, append: true };

  let rl: Interface | undefined;
  let inputOpen = false;
  let stopped: Promise<void> | undefined;
  let typingShown = false;
  /** A reply is being written: the prompt waits below it until it ends. */
  let writing = false;
  let seq = 0;
  const pending = new Set<Promise<void>>();

  const writable = () => output.writable && !output.destroyed;
  /** Prints a whole line; on a TTY above the prompt and whatever is half typed. */
  const print = (text: string) => {
    if (!writable()) return;
    if (tty && rl && inputOpen) {
      clearLine(output, 0);
      cursorTo(output, 0);
      output.write(`${text}\n`);
      rl.prompt(true);
    } else output.write(`${text}\n`);
  };

  const adapter: TerminalAdapter = {
    platform: TERMINAL_PLATFORM,
    accountId: config.id,
    limits,
    capabilities,
    measure: rawLength,

    async start(sink: InboundSink) {
      if (rl) throw new Error("terminal adapter already started");
      sink.status({ state: "starting" });
      // Ids must stay unique across restarts: the core drops repeated ones.
      const runId = clock.now().toString(36);
      const line = createInterface({
        input,
        ...(tty ? { output, prompt: config.prompt } : {}),
        terminal: tty,
        crlfDelay: Infinity,
      });
      rl = line;
      inputOpen = true;

      line.on("line", (raw) => {
        const text = raw.trim();
        if (text && !stopped) {
          const message: InboundMessage = {
            platform: TERMINAL_PLATFORM,
            accountId: config.id,
            chatId: config.userId,
            chatType: "direct",
            userId: config.userId,
            messageId: `${runId}-${++seq}`,
            text,
            sentAt: clock.now(),
          };
          if (config.userName !== undefined) message.userName = config.userName;
          const accepted = sink.accept(message).then(
            () => undefined,
            (err: unknown) => {
              const reason = err instanceof Error ? err.message : String(err);
              print(`(message not taken: ${reason}; please send it again)`);
            },
          );
          pending.add(accepted);
          void accepted.finally(() => pending.delete(accepted));
        }
        if (tty) line.prompt();
      });
      line.on("SIGINT", onInterrupt);
      line.on("close", () => {
        inputOpen = false;
        stopped ??= Promise.allSettled([...pending]).then(() => {
          sink.status({ state: "stopped", detail: "input closed" });
        });
      });

      sink.status({ state: "connected" });
      if (tty) line.prompt();
    },

    async stop() {
      if (!rl) return;
      if (inputOpen) rl.close();
      await stopped;
    },

    async send(_target: ChatTarget, text: string, _options: SendOptions) {
      if (!writable()) throw new Error("terminal output is closed");
      typingShown = false;
      print(`${REPLY_PREFIX}${text}`);
    },

    async write(_target: ChatTarget, piece: string, { end }: { end: boolean }) {
      if (!writable()) throw new Error("terminal output is closed");
      if (!writing) {
        typingShown = false;
        writing = true;
        // On a TTY the prompt line (and what is half typed) gives way to the reply until it ends.
        if (tty && rl && inputOpen) {
          clearLine(output, 0);
          cursorTo(output, 0);
        }
        output.write(REPLY_PREFIX);
      }
      if (piece) output.write(piece);
      if (end) {
        writing = false;
        output.write("\n");
        if (tty && rl && inputOpen) rl.prompt(true);
      }
    },

    notice(text: string) {
      print(text);
    },

    async sendTyping(_target: ChatTarget) {
      if (typingShown) return;
      typingShown = true;
      print(TYPING_LINE);
    },
  };
  return adapter;
}
