/**
 * Hands translated Teams messages to the core (../hand-over.ts, the files
 * from files.ts): per chat in the order the connector posted them (chats side
 * by side), files fetched only once the core admits the message and only
 * those it wants. Resolves with the core's outcome, so the endpoint answers
 * 200 only for what is journaled or deliberately refused.
 */
import { createSerialQueue } from "../../helpers/retry.js";
import type { AcceptOutcome, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import { handOver } from "../hand-over.js";
import { type TeamsFilesDeps, teamsFiles } from "./files.js";
import { conversationIdOf, type TeamsFile } from "./inbound.js";

export class TeamsHandOver {
  readonly #deps: TeamsFilesDeps;
  /** One chain per chat: a chat's messages reach the core in order. */
  readonly #chains = createSerialQueue<string>();

  constructor(deps: TeamsFilesDeps) {
    this.#deps = deps;
  }

  /** Queues `message` behind its chat's earlier ones; undefined: nothing to hand over. Rejects when the core could not take it. */
  take(sink: InboundSink, message: InboundMessage, files: readonly TeamsFile[]): Promise<AcceptOutcome | undefined> {
    return this.#chains.run(conversationIdOf(message), () => handOver(sink, message, files, teamsFiles(this.#deps, message.messageId)));
  }

  /** Resolves once every message taken so far has reached the core. */
  idle(): Promise<void> {
    return this.#chains.idle();
  }
}
