/**
 * Hands translated posts to the core (../hand-over.ts, the files from
 * files.ts): per channel in the order they came (channels side by side),
 * files fetched only once the core admits the post. A post can come twice
 * (its event and a catch-up, or a replayed event): one already taken in this
 * life is skipped, and the core's journal drops one taken in an earlier life.
 * The catch-up's mark advances only once the core has the post.
 */
import type { Logger } from "pino";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import { createSerialQueue } from "../../helpers/retry.js";
import type { AdapterStatusEvent, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import { handOver } from "../hand-over.js";
import type { MattermostCatchUp } from "./catch-up.js";
import { mattermostFileOf, mattermostFiles, type MattermostFilesDeps } from "./files.js";
import type { ChannelFacts, MattermostFileInfo } from "./inbound.js";

export interface HandOverDeps extends MattermostFilesDeps {
  log: Logger;
  catchUp: MattermostCatchUp;
  redact(text: string): string;
}

export class MattermostHandOver {
  readonly #deps: HandOverDeps;
  #sink: InboundSink | null = null;
  readonly #chains = createSerialQueue<string>();
  /** Post ids the core has (this life): a second arrival is not handed over again. */
  readonly #taken = new BoundedMap<string, true>(5_000);

  constructor(deps: HandOverDeps) {
    this.#deps = deps;
  }

  open(sink: InboundSink): void {
    this.#sink = sink;
  }

  close(): void {
    this.#sink = null;
  }

  take(message: InboundMessage, files: readonly MattermostFileInfo[], facts: ChannelFacts): void {
    this.#chains
      .run(message.chatId, () => this.#deliver(message, files, facts))
      .catch((error: unknown) => {
        const detail = this.#deps.redact(error instanceof Error ? error.message : String(error));
        this.#deps.log.error({ chatId: message.chatId, err: detail }, "mattermost post not handed to the core (a catch-up brings it again)");
      });
  }

  status(event: AdapterStatusEvent): void {
    this.#sink?.status(event);
  }

  idle(): Promise<void> {
    return this.#chains.idle();
  }

  async #deliver(message: InboundMessage, files: readonly MattermostFileInfo[], facts: ChannelFacts): Promise<void> {
    const sink = this.#sink;
    if (!sink || this.#taken.has(message.messageId)) return;
    await this.#deps.catchUp.known(message.chatId, message.sentAt, facts);
    const outcome = await handOver(sink, message, files.map(mattermostFileOf), mattermostFiles(this.#deps, message.messageId));
    // Nothing to hand over (no text, no file), or handed and settled: either way it is done with.
    if (outcome === undefined || outcome.acknowledge) {
      this.#taken.set(message.messageId, true);
      this.#deps.catchUp.taken(message.chatId, message.sentAt);
    }
  }
}
