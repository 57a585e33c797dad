/**
 * Hands translated Feishu messages to the core (../hand-over.ts, the files
 * from files.ts): per chat in the order Feishu sent them (chats side by
 * side), files fetched only once the core admits the message and only those
 * it wants. Resolves with the core's outcome, so the caller answers Feishu
 * "received" only for what is journaled or deliberately refused.
 */
import type { AcceptOutcome, AdapterStatusEvent, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import { createSerialQueue } from "../../helpers/retry.js";
import { handOver } from "../hand-over.js";
import { feishuFiles, type FeishuFilesDeps } from "./files.js";
import type { FeishuFileRef } from "./inbound.js";

export class FeishuHandOver {
  /** The client and log for files (injected; never changes). */
  readonly #deps: FeishuFilesDeps;
  /** Set by `open` (the adapter's start); until then nothing reaches a core. */
  #sink: InboundSink | null = null;
  /** Set by `close` (the adapter's stop): nothing new reaches the core. */
  #closed = false;
  /** One chain per chat: a chat's messages reach the core in order, each after the one before settled. */
  readonly #chains = createSerialQueue<string>();

  constructor(deps: FeishuFilesDeps) {
    this.#deps = deps;
  }

  open(sink: InboundSink): void {
    this.#sink = sink;
    this.#closed = false;
  }

  /** Stops taking messages; resolves once those under way reached the core. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#chains.idle();
  }

  status(event: AdapterStatusEvent): void {
    this.#sink?.status(event);
  }

  /** Queues `message` behind its chat's earlier ones; resolves with the core's outcome (undefined: nothing to hand over); rejects when it could not be taken. */
  take(message: InboundMessage, files: readonly FeishuFileRef[]): Promise<AcceptOutcome | undefined> {
    return this.#chains.run(message.chatId, async () => {
      const sink = this.#sink;
      if (!sink || this.#closed) throw new Error("the feishu adapter is not taking messages");
      return handOver(sink, message, files, feishuFiles(this.#deps));
    });
  }
}
