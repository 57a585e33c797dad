/**
 * Hands translated messages to the core (../hand-over.ts, the files from
 * files.ts): per channel in the order Discord sent them (channels side by
 * side), attachments fetched only once the core admits the message and only
 * the files it wants. Discord never delivers a message twice, so every
 * message is journaled or refused by the core, which tells the person;
 * nothing here waits for a redelivery.
 */
import type { Logger } from "pino";
import type { AdapterStatusEvent, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import { createSerialQueue } from "../../helpers/retry.js";
import { handOver } from "../hand-over.js";
import { discordFileOf, discordFiles, type DiscordFilesDeps } from "./files.js";
import type { DiscordAttachmentView } from "./inbound.js";
import { channelOf, errorText } from "./outbound.js";

export interface HandOverDeps extends DiscordFilesDeps {
  log: Logger;
  /** Removes the token from any text before it reaches a log. */
  redact(text: string): string;
}

export class DiscordHandOver {
  readonly #deps: HandOverDeps;
  /** Set by `open` (the adapter's start); until then messages are dropped, as there is no core to take them. */
  #sink: InboundSink | null = null;
  /** One chain per channel: a channel's messages reach the core in order, each after the one before settled. */
  readonly #chains = createSerialQueue<string>();

  constructor(deps: HandOverDeps) {
    this.#deps = deps;
  }

  open(sink: InboundSink): void {
    this.#sink = sink;
  }

  /** Queues `message` behind its channel's earlier ones; a failure is logged, never thrown. */
  take(message: InboundMessage, attachments: readonly DiscordAttachmentView[]): void {
    this.#chains
      .run(channelOf(message), () => this.#deliver(message, attachments))
      .catch((error: unknown) => {
        this.#deps.log.error({ chatId: message.chatId, err: this.#deps.redact(errorText(error)) }, "discord message not handed to the core");
      });
  }

  /** Passes connection news on to the core (none before `open`). */
  status(event: AdapterStatusEvent): void {
    this.#sink?.status(event);
  }

  /** Resolves once every message taken so far has reached the core. */
  idle(): Promise<void> {
    return this.#chains.idle();
  }

  async #deliver(message: InboundMessage, attachments: readonly DiscordAttachmentView[]): Promise<void> {
    const sink = this.#sink;
    if (!sink) return;
    await handOver(sink, message, attachments.map(discordFileOf), discordFiles(this.#deps, message.messageId));
  }
}
