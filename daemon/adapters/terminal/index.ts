/**
 * A chat in the terminal: one local person, one direct chat. Every line is a message (lines
 * typed while a reply is pending count too); replies print as `agent> ...`. Works on a TTY
 * (prompt kept below the output) and on piped input (no prompt, no escape codes); input EOF
 * stops it cleanly once every line read has been handed to the core.
 */
import type { Readable, Writable } from "node:stream";
import { systemClock, type Clock } from "../../../shared/clock.js";
import { rawLength, type AdapterCapabilities, type AdapterLimits, type ChatAdapter, type FileLimits } from "../../vocabulary/adapter.js";
import { TERMINAL_PLATFORM, type TerminalChannelConfig } from "./config.js";
import { openTerminalInput, type TerminalInput } from "./connection.js";
import { handOverLine } from "./hand-over.js";
import { fileLine, TerminalScreen } from "./outbound.js";

export { TERMINAL_PLATFORM } from "./config.js";
export { REPLY_PREFIX, TYPING_LINE } from "./outbound.js";

export interface TerminalAdapterOptions {
  input: Readable;
  output: Writable;
  config: TerminalChannelConfig;
  /** Default: the system clock. */
  clock?: Clock;
  /** Interactive line editing and a prompt. Default: both streams are TTYs. */
  terminal?: boolean;
  /**
   * Ctrl+C in raw TTY mode reaches readline, not the process. Default: passed on as a real
   * SIGINT so the daemon's own shutdown runs.
   */
  onInterrupt?: () => void;
}

/** The terminal chat, plus a way to show the person a short notice (a log warning, a status line) above the prompt. */
export interface TerminalAdapter extends ChatAdapter {
  notice(text: string): void;
}

// A typing line per pending reply at most; refreshes would only repeat it.
const limits: AdapterLimits = { maxMessageLength: 100_000, typingRefreshMs: 60_000 };
// Files the agent names are shown by their workspace path (a terminal shows no images); the limit only bounds the check that the file is there.
const fileLimits: FileLimits = { photo: 100 * 1024 * 1024, voice: 100 * 1024 * 1024, document: 100 * 1024 * 1024 };
// Lines typed are read once: what the core cannot take is told, never left for a redelivery.
// Streaming: text is written as it comes (a terminal cannot change what it printed).
const capabilities: AdapterCapabilities = { redelivers: false, edit: false, append: true };

type Stream = { isTTY?: boolean };

export function createTerminalAdapter(options: TerminalAdapterOptions): TerminalAdapter {
  const { input, output, config } = options;
  const clock = options.clock ?? systemClock;
  const tty = options.terminal ?? ((input as Stream).isTTY === true && (output as Stream).isTTY === true);
  const screen = new TerminalScreen(output, tty);
  let reading: TerminalInput | undefined;

  return {
    platform: TERMINAL_PLATFORM,
    accountId: config.id,
    limits,
    capabilities,
    measure: rawLength,

    async start(sink) {
      if (reading) throw new Error("terminal adapter already started");
      sink.status({ state: "starting" });
      // Ids must stay unique across restarts: the core drops repeated ones.
      const runId = clock.now().toString(36);
      let seq = 0;
      reading = openTerminalInput({
        input,
        output,
        tty,
        prompt: config.prompt,
        onLine: (raw) => handOverLine({ config, clock, screen }, sink, runId, raw.trim() ? ++seq : seq, raw),
        onInterrupt: options.onInterrupt ?? (() => process.kill(process.pid, "SIGINT")),
        onClosed: () => sink.status({ state: "stopped", detail: "input closed" }),
      });
      screen.setPrompt(reading.editor);
      reading.editor.on("close", () => screen.setPrompt(undefined));
      sink.status({ state: "connected" });
    },

    async stop() {
      await reading?.stop();
    },

    async send(_target, text) {
      screen.reply(text);
    },

    fileLimits,
    async sendFile(_target, file) {
      screen.print(fileLine(file));
    },

    async write(_target, piece, { end }) {
      screen.write(piece, end);
    },

    notice(text) {
      screen.print(text);
    },

    async sendTyping() {
      screen.typing();
    },
  };
}
