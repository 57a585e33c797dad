/**
 * A chat in the terminal: one local person, one direct chat. Every line is a message (lines
 * typed while a reply is pending count too); replies print as `agent> ...`. Works on a TTY
 * (prompt kept below the output) and on piped input (no prompt, no escape codes); input EOF
 * stops it cleanly once every line read has been handed to the core.
 */
import type { Readable, Writable } from "node:stream";
import { systemClock, type Clock } from "../../../shared/clock.js";
import {
  rawLength,
  type AppendCapability,
  type AdapterLimits,
  type ChatAdapter,
  type ChatTarget,
  type FileCapability,
  type FileLimits,
  type InboundSink,
} from "../../vocabulary/adapter.js";
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

type Stream = { isTTY?: boolean };

export function createTerminalAdapter(options: TerminalAdapterOptions): TerminalAdapter {
  return new TerminalChat(options);
}

/** The `TerminalAdapter`: the screen it draws on and the input it reads while started. */
export class TerminalChat implements TerminalAdapter {
  readonly platform = TERMINAL_PLATFORM;
  readonly accountId: string;
  readonly limits = limits;
  // Lines typed are read once: what the core cannot take is told, never left for a redelivery.
  readonly redelivers = false;
  readonly files: FileCapability = { limits: fileLimits, send: async (_target, file) => this.#screen.print(fileLine(file)) };
  // Streaming: text is written as it comes (a terminal cannot change what it printed).
  readonly appends: AppendCapability = { write: async (_target, piece, { end }) => this.#screen.write(piece, end) };
  readonly measure = rawLength;
  /** As given: the streams, the channel, the interrupt handler. */
  readonly #options: TerminalAdapterOptions;
  /** Dates lines (and so the run id). */
  readonly #clock: Clock;
  /** Whether input and output are a terminal (a prompt, escape codes) rather than pipes. */
  readonly #tty: boolean;
  /** Everything printed goes through it, so output never breaks the prompt. */
  readonly #screen: TerminalScreen;
  /** The input being read: set by `start`, once (a second start is refused). */
  #reading: TerminalInput | undefined;

  constructor(options: TerminalAdapterOptions) {
    const { input, output } = options;
    this.#options = options;
    this.accountId = options.config.id;
    this.#clock = options.clock ?? systemClock;
    this.#tty = options.terminal ?? ((input as Stream).isTTY === true && (output as Stream).isTTY === true);
    this.#screen = new TerminalScreen(output, this.#tty);
  }

  async start(sink: InboundSink): Promise<void> {
    if (this.#reading) throw new Error("terminal adapter already started");
    const { input, output, config } = this.#options;
    const clock = this.#clock;
    const screen = this.#screen;
    sink.status({ state: "starting" });
    // Ids must stay unique across restarts: the core drops repeated ones.
    const runId = clock.now().toString(36);
    let seq = 0;
    const reading = openTerminalInput({
      input,
      output,
      tty: this.#tty,
      prompt: config.prompt,
      onLine: (raw) => handOverLine({ config, clock, screen }, sink, runId, raw.trim() ? ++seq : seq, raw),
      onInterrupt: this.#options.onInterrupt ?? (() => process.kill(process.pid, "SIGINT")),
      onClosed: () => sink.status({ state: "stopped", detail: "input closed" }),
    });
    this.#reading = reading;
    screen.setPrompt(reading.editor);
    reading.editor.on("close", () => screen.setPrompt(undefined));
    sink.status({ state: "connected" });
  }

  async stop(): Promise<void> {
    await this.#reading?.stop();
  }

  async send(_target: ChatTarget, text: string): Promise<void> {
    this.#screen.reply(text);
  }

  notice(text: string): void {
    this.#screen.print(text);
  }

  async sendTyping(): Promise<void> {
    this.#screen.typing();
  }
}
