/**
 * Hands translated Slack messages to the core (../hand-over.ts, the files
 * from files.ts): per chat in the order Slack sent them (chats side by side),
 * files fetched only once the core admits the message and only those it
 * wants. Resolves with the core's outcome, so the caller acknowledges to
 * Slack only what is journaled or deliberately refused.
 */
import type { Logger } from "pino";
import type { AcceptOutcome, AdapterStatusEvent, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import { createSerialQueue } from "../../helpers/retry.js";
import { handOver } from "../hand-over.js";
import { slackFileOf, slackFiles, type SlackFilesDeps } from "./files.js";
import { placeKeyOf, type SlackFile } from "./inbound.js";

export interface HandOverDeps extends SlackFilesDeps {
  log: Logger;
  /** Told of every message the core took (to remember the threads the bot answers in). */
  onAccepted?(message: InboundMessage): void;
}

export class SlackHandOver {
  /** The log, the bot token for files and the accepted-message hook (injected; never changes). */
  readonly #deps: HandOverDeps;
  /** Set by `open` (the adapter's start); until then nothing reaches a core. */
  #sink: InboundSink | null = null;
  /** One chain per chat: a chat's messages reach the core in order, each after the one before settled. */
  readonly #chains = createSerialQueue<string>();

  constructor(deps: HandOverDeps) {
    this.#deps = deps;
  }

  open(sink: InboundSink): void {
    this.#sink = sink;
  }

  /** Passes connection news on to the core (none before `open`). */
  status(event: AdapterStatusEvent): void {
    this.#sink?.status(event);
  }

  /**
   * Queues `message` behind its chat's earlier ones; resolves with what the
   * core made of it (undefined: nothing to hand over), rejects when the core
   * could not take it (do not acknowledge).
   */
  take(message: InboundMessage, files: readonly SlackFile[]): Promise<AcceptOutcome | undefined> {
    return this.#chains.run(placeKeyOf(message), () => this.#deliver(message, files));
  }

  /** Resolves once every message taken so far has reached the core. */
  idle(): Promise<void> {
    return this.#chains.idle();
  }

  async #deliver(message: InboundMessage, files: readonly SlackFile[]): Promise<AcceptOutcome | undefined> {
    const sink = this.#sink;
    if (!sink) throw new Error("the slack hand-over is not open");
    const outcome = await handOver(sink, message, files.map(slackFileOf), slackFiles(this.#deps, message.messageId));
    if (outcome?.status === "accepted") this.#deps.onAccepted?.(message);
    return outcome;
  }
}
