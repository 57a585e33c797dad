/**
 * What the terminal shows: whole lines above the prompt, replies written as they stream, and
 * one typing line per pending reply. On a TTY the prompt (and what is half typed) stays below
 * the output; on piped output nothing but the text is written.
 */
import { clearLine, cursorTo, type Interface } from "node:readline";
import type { Writable } from "node:stream";
import { formatBytes } from "../../../shared/util/format-bytes.js";
import type { OutboundFile } from "../../vocabulary/adapter.js";

export const REPLY_PREFIX = "agent> ";
export const TYPING_LINE = "agent is typing…";

/** How a file the agent made shows: its path in the agent's workspace, its kind and size. */
export const fileLine = (file: Pick<OutboundFile, "path" | "kind" | "data">): string => `📎 ${file.path} (${file.kind}, ${formatBytes(file.data.length)})`;

export class TerminalScreen {
  readonly #output: Writable;
  readonly #tty: boolean;
  /** The prompt's line editor while input is open; lines are printed above it. */
  #prompt: Interface | undefined;
  /** A typing line is on screen for the reply still pending: refreshes would only repeat it. */
  #typingShown = false;
  /** A streamed reply is being written: the prompt waits below it until it ends. */
  #writing = false;

  constructor(output: Writable, tty: boolean) {
    this.#output = output;
    this.#tty = tty;
  }

  /** The line editor to keep below the output (undefined once input closed). */
  setPrompt(prompt: Interface | undefined): void {
    this.#prompt = prompt;
  }

  get writable(): boolean {
    return this.#output.writable && !this.#output.destroyed;
  }

  /** Prints a whole line; on a TTY above the prompt and whatever is half typed. */
  print(text: string): void {
    if (!this.writable) return;
    if (this.#tty && this.#prompt) {
      this.#clearPromptLine();
      this.#output.write(`${text}\n`);
      this.#prompt.prompt(true);
    } else this.#output.write(`${text}\n`);
  }

  /** A whole reply. */
  reply(text: string): void {
    this.#ensureWritable();
    this.#typingShown = false;
    this.print(`${REPLY_PREFIX}${text}`);
  }

  /** A piece of a streamed reply; `end` closes its line. */
  write(piece: string, end: boolean): void {
    this.#ensureWritable();
    if (!this.#writing) {
      this.#typingShown = false;
      this.#writing = true;
      // On a TTY the prompt line (and what is half typed) gives way to the reply until it ends.
      if (this.#tty && this.#prompt) this.#clearPromptLine();
      this.#output.write(REPLY_PREFIX);
    }
    if (piece) this.#output.write(piece);
    if (end) {
      this.#writing = false;
      this.#output.write("\n");
      if (this.#tty) this.#prompt?.prompt(true);
    }
  }

  typing(): void {
    if (this.#typingShown) return;
    this.#typingShown = true;
    this.print(TYPING_LINE);
  }

  #clearPromptLine(): void {
    clearLine(this.#output, 0);
    cursorTo(this.#output, 0);
  }

  #ensureWritable(): void {
    if (!this.writable) throw new Error("terminal output is closed");
  }
}
