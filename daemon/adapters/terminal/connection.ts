/**
 * Reading the terminal: a readline interface over the input, each line handed on as it comes;
 * input EOF ends the connection once every line read has been handed to the core.
 */
import { createInterface, type Interface } from "node:readline";
import type { Readable, Writable } from "node:stream";

export interface TerminalInputOptions {
  input: Readable;
  output: Writable;
  tty: boolean;
  prompt: string;
  /** A line as typed; its promise settles once the core has taken (or refused) it. */
  onLine(raw: string): Promise<void> | undefined;
  onInterrupt(): void;
  /** Input ended and every line's `onLine` settled. */
  onClosed(): void;
}

/** The open input: its line editor (for the prompt) and a stop that waits for pending lines. */
export interface TerminalInput {
  readonly editor: Interface;
  readonly open: boolean;
  stop(): Promise<void>;
}

export function openTerminalInput(options: TerminalInputOptions): TerminalInput {
  return new TerminalLines(options);
}

/** The `TerminalInput`: the line editor, and the lines still being handed over. */
export class TerminalLines implements TerminalInput {
  readonly editor: Interface;
  readonly #options: TerminalInputOptions;
  /** True until the editor closes (input EOF, or `stop`); never true again. */
  #open = true;
  /** Lines handed on whose acceptance is still under way. */
  readonly #pending = new Set<Promise<void>>();
  /** Set when the editor closes: settles once every pending line has, and `onClosed` ran. */
  #closed: Promise<void> | undefined;

  constructor(options: TerminalInputOptions) {
    const { tty } = options;
    this.#options = options;
    const editor = createInterface({
      input: options.input,
      ...(tty ? { output: options.output, prompt: options.prompt } : {}),
      terminal: tty,
      crlfDelay: Infinity,
    });
    this.editor = editor;
    editor.on("line", (raw) => {
      this.#line(raw);
      if (tty) editor.prompt();
    });
    editor.on("SIGINT", options.onInterrupt);
    editor.on("close", () => {
      this.#open = false;
      this.#closed ??= Promise.allSettled([...this.#pending]).then(options.onClosed);
    });
    if (tty) editor.prompt();
  }

  get open(): boolean {
    return this.#open;
  }

  async stop(): Promise<void> {
    if (this.#open) this.editor.close();
    await this.#closed;
  }

  #line(raw: string): void {
    if (this.#closed) return;
    const handed = this.#options.onLine(raw);
    if (!handed) return;
    this.#pending.add(handed);
    void handed.finally(() => this.#pending.delete(handed));
  }
}
