/**
 * Hands translated Google Chat messages to the core (../hand-over.ts, the
 * files from files.ts): per conversation (a space's thread, a direct message)
 * in the order Chat posted them, conversations side by side; files fetched
 * only once the core admits the message and only those it wants. Resolves
 * with the core's outcome, so the request is answered "received" only for
 * what is journaled or deliberately refused.
 */
import type { AcceptOutcome, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import { createSerialQueue } from "../../helpers/retry.js";
import { handOver } from "../hand-over.js";
import { type ChatFilesDeps, chatFiles, chatFilesOf } from "./files.js";
import type { ChatAttachment } from "./inbound.js";

export class ChatHandOver {
  /** Where files come from (injected; never changes). */
  readonly #files: ChatFilesDeps;
  /** Set by `open` (the adapter's start); until then nothing reaches a core. */
  #sink: InboundSink | null = null;
  /** One chain per conversation. */
  readonly #chains = createSerialQueue<string>();

  constructor(files: ChatFilesDeps) {
    this.#files = files;
  }

  open(sink: InboundSink): void {
    this.#sink = sink;
  }

  get sink(): InboundSink | null {
    return this.#sink;
  }

  /** Queues `message` behind its conversation's earlier ones; rejects when the core could not take it. */
  take(message: InboundMessage, files: readonly ChatAttachment[]): Promise<AcceptOutcome | undefined> {
    const key = message.threadId === undefined ? message.chatId : `${message.chatId} ${message.threadId}`;
    return this.#chains.run(key, async () => {
      const sink = this.#sink;
      if (!sink) throw new Error("the google chat hand-over is not open");
      return handOver(sink, message, chatFilesOf(files), chatFiles(this.#files, message.messageId));
    });
  }
}
