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
  const { tty } = options;
  const editor = createInterface({
    input: options.input,
    ...(tty ? { output: options.output, prompt: options.prompt } : {}),
    terminal: tty,
    crlfDelay: Infinity,
  });
  let open = true;
  /** Lines handed on whose acceptance is still under way. */
  const pending = new Set<Promise<void>>();
  let closed: Promise<void> | undefined;

  editor.on("line", (raw) => {
    if (!closed) {
      const handed = options.onLine(raw);
      if (handed) {
        pending.add(handed);
        void handed.finally(() => pending.delete(handed));
      }
    }
    if (tty) editor.prompt();
  });
  editor.on("SIGINT", options.onInterrupt);
  editor.on("close", () => {
    open = false;
    closed ??= Promise.allSettled([...pending]).then(options.onClosed);
  });
  if (tty) editor.prompt();

  return {
    editor,
    get open() {
      return open;
    },
    async stop() {
      if (open) editor.close();
      await closed;
    },
  };
}
