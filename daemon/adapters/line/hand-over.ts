/**
 * Hands translated LINE messages to the core (../hand-over.ts, the content
 * from files.ts): per chat in the order LINE sent them, content fetched only
 * once the core admits the message. Resolves with the core's outcome, so the
 * webhook is answered 200 only for what is journaled or deliberately refused.
 */
import type { AcceptOutcome, AdapterStatusEvent, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import { createSerialQueue } from "../../helpers/retry.js";
import { handOver, type FileSource } from "../hand-over.js";
import type { LineFile } from "./inbound.js";

export class LineHandOver {
  readonly #files: FileSource<LineFile>;
  #sink: InboundSink | null = null;
  readonly #chains = createSerialQueue<string>();

  constructor(files: FileSource<LineFile>) {
    this.#files = files;
  }

  open(sink: InboundSink): void {
    this.#sink = sink;
  }

  status(event: AdapterStatusEvent): void {
    this.#sink?.status(event);
  }

  take(message: InboundMessage, files: readonly LineFile[]): Promise<AcceptOutcome | undefined> {
    return this.#chains.run(message.chatId, async () => {
      const sink = this.#sink;
      if (!sink) throw new Error("the line hand-over is not open");
      const outcome = await handOver(sink, message, files, this.#files);
      // Not acknowledging a deferred message makes LINE deliver it again (redelivery on).
      if (outcome && !outcome.acknowledge) throw new Error(`deferred (${outcome.reason})`);
      return outcome;
    });
  }

  idle(): Promise<void> {
    return this.#chains.idle();
  }
}
