/**
 * Hands decrypted private messages to the core (../hand-over.ts) per chat (a person or a NIP-17 room) in
 * the order they came. Relays deliver again: the same event from each relay
 * and, after every reconnect, what the lookback covers. Messages already
 * handled (journaled or deliberately refused) are remembered by id for the
 * lookback's length, durably, so a person refused or paired is not answered
 * again; one handled but not yet remembered when the process died comes once
 * more and the journal knows it (a duplicate).
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import { createSerialQueue } from "../../helpers/retry.js";
import type { AdapterStateStore, AdapterStatusEvent, InboundSink } from "../../vocabulary/adapter.js";
import { handOver } from "../hand-over.js";
import { errorText } from "./connection.js";
import type { FileSource } from "../hand-over.js";
import { type DirectMessageView, type NostrFileRef, type TranslateContext, translateMessage } from "./inbound.js";

const HANDLED = "handled";
const protocolKey = (pubkey: string) => `protocol.${pubkey}`;

export interface HandOverDeps {
  accountId: string;
  self: string;
  state: AdapterStateStore;
  clock: Clock;
  log: Logger;
  lookbackSeconds: number;
  /** The bot's npub, its names and its sent messages: what addresses it in a room. */
  addressing: Pick<TranslateContext, "npub" | "names" | "sentByBot">;
  files: FileSource<NostrFileRef>;
}

export class NostrHandOver {
  readonly #deps: HandOverDeps;
  #sink: InboundSink | null = null;
  #closed = false;
  readonly #chains = createSerialQueue<string>();
  /** Message id -> when it was handled (seconds); kept for the lookback's length. */
  readonly #handled: Map<string, number>;
  /** Ids being handed over now (two relays' copies arriving together). */
  readonly #inFlight = new Set<string>();
  readonly #saves = createSerialQueue<"handled">();
  #dirty = false;

  constructor(deps: HandOverDeps) {
    this.#deps = deps;
    this.#handled = new Map(Object.entries(deps.state.get<Record<string, number>>(HANDLED) ?? {}));
  }

  open(sink: InboundSink): void {
    this.#sink = sink;
    this.#closed = false;
  }

  /** No more messages reach the core once this returns (those under way finish). */
  close(): void {
    this.#closed = true;
  }

  status(event: AdapterStatusEvent): void {
    this.#sink?.status(event);
  }

  /** The scheme `pubkey` last wrote in. */
  protocolOf(pubkey: string): DirectMessageView["protocol"] | undefined {
    return this.#deps.state.get(protocolKey(pubkey));
  }

  take(view: DirectMessageView): void {
    if (this.#closed || this.#handled.has(view.id) || this.#inFlight.has(view.id)) return;
    this.#inFlight.add(view.id);
    // One chain per chat (a person, or a room): a room's messages keep their order.
    const chat = [view.sender, ...view.recipients]
      .filter((p) => p !== this.#deps.self)
      .sort()
      .join(",");
    this.#chains
      .run(chat, () => this.#deliver(view))
      .catch((error: unknown) =>
        // Stopping ends a file's download: the message is not remembered, so the next life's look-back brings it again.
        this.#closed
          ? this.#deps.log.info({ messageId: view.id }, "nostr message left for the next start")
          : this.#deps.log.error({ messageId: view.id, err: errorText(error) }, "nostr message not handed to the core"),
      )
      .finally(() => this.#inFlight.delete(view.id));
  }

  idle(): Promise<void> {
    return Promise.all([this.#chains.idle(), this.#saves.idle()]).then(() => undefined);
  }

  async #deliver(view: DirectMessageView): Promise<void> {
    const sink = this.#sink;
    if (!sink || this.#closed) return;
    const { accountId, self, log, addressing } = this.#deps;
    const translated = translateMessage(view, {
      accountId,
      self,
      ...addressing,
      onIgnored: (reason) => log.debug({ messageId: view.id, reason }, "nostr message ignored"),
    });
    if (!translated) return this.#remember(view.id);
    const { message, files } = translated;
    // The reply goes out in the scheme this message came in: known before the core can answer it.
    if (message.chatType === "direct" && this.protocolOf(view.sender) !== view.protocol) await this.#deps.state.set(protocolKey(view.sender), view.protocol);
    const outcome = await handOver(sink, message, files, this.#deps.files);
    if (!outcome || outcome.acknowledge) this.#remember(view.id);
  }

  #remember(id: string): void {
    this.#handled.set(id, Math.floor(this.#deps.clock.now() / 1000));
    this.#dirty = true;
    // One write at a time; a write takes everything remembered so far.
    void this.#saves
      .run(HANDLED, async () => {
        if (!this.#dirty) return;
        this.#dirty = false;
        const oldest = Math.floor(this.#deps.clock.now() / 1000) - this.#deps.lookbackSeconds - 3600;
        for (const [key, at] of this.#handled) if (at < oldest) this.#handled.delete(key);
        await this.#deps.state.set(HANDLED, Object.fromEntries(this.#handled));
      })
      .catch((error: unknown) => this.#deps.log.warn({ err: errorText(error) }, "nostr: could not save the handled message ids"));
  }
}
