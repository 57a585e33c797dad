/**
 * Streamed replies with Feishu's card streaming (CardKit, "Streaming card
 * updates"), where the app may use it: the reply's first text becomes a card
 * entity (JSON 2.0, `streaming_mode` on, one markdown element) sent as the
 * message; each later text is pushed to that element (Feishu types the new
 * part out), and the last replaces the whole card with streaming mode off.
 * Every operation carries a `sequence` strictly greater than the card's last:
 * taken from the clock (tenths of a second since 2025), so a restarted
 * daemon finishing a card it did not start still goes forward. After a
 * restart the card is found from the journaled message id
 * (`cards/id_convert`). A refusal to create a card entity (the scope
 * `cardkit:card:write` missing, CardKit unknown) turns card streaming off
 * for the account: replies are then cards patched in place (outbound.ts).
 * A push refused (streaming mode closes by itself after 10 minutes) falls
 * back to replacing the whole card.
 */
import type { Logger } from "pino";
import type * as lark from "@larksuiteoapi/node-sdk";
import type { Clock } from "../../../shared/clock.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { SendReceipt } from "../../vocabulary/adapter.js";
import type { Call, FeishuAdapterError } from "./outbound.js";

/** The element the reply's text lives in. */
export const REPLY_ELEMENT = "reply";
/** 2025-01-01T00:00:00Z: sequences count tenths of a second from here (2^31 of them last 6.8 years). */
const SEQUENCE_EPOCH_MS = 1_735_689_600_000;

/** A JSON 2.0 card with the reply's text, streaming or done. */
export function entityCard(text: string, streaming: boolean): string {
  return JSON.stringify({
    schema: "2.0",
    config: { update_multi: true, streaming_mode: streaming, summary: { content: streaming ? "…" : text.slice(0, 100) } },
    body: { elements: [{ tag: "markdown", content: text, element_id: REPLY_ELEMENT }] },
  });
}

export interface CardStreamsDeps {
  client: lark.Client;
  call: Call;
  clock: Clock;
  log: Logger;
  /** Card streaming wanted (the channel's `cardStreaming`). */
  enabled: boolean;
}

export class CardStreams {
  readonly #deps: CardStreamsDeps;
  /** Whether the config wants card streaming at all (when not, no message is looked up). */
  readonly #wanted: boolean;
  /** Why card streaming is off for this account (undefined: on). */
  #refused: string | undefined;
  /** message id -> its card entity (null: a message that holds none), as learnt or looked up. */
  readonly #cards = new BoundedMap<string, string | null>(5000);
  /** Messages whose card this process closed (streaming mode off). */
  readonly #closed = new BoundedMap<string, true>(5000);
  #lastSequence = 0;

  constructor(deps: CardStreamsDeps) {
    this.#deps = deps;
    this.#wanted = deps.enabled;
    if (!deps.enabled) this.#refused = "turned off in the config";
  }

  get available(): boolean {
    return this.#refused === undefined;
  }

  /**
   * A streamed reply's first text as a card entity, sent with `send`; undefined when card
   * streaming is off or Feishu refused to create the entity (the caller sends an ordinary card).
   */
  async start(text: string, send: (content: string) => Promise<SendReceipt>): Promise<SendReceipt | undefined> {
    if (!this.available) return undefined;
    let cardId: string | undefined;
    try {
      const data = await this.#deps.call("cardkit.card.create", () =>
        this.#deps.client.cardkit.v1.card.create({ data: { type: "card_json", data: entityCard(text, true) } }),
      );
      cardId = data?.card_id;
    } catch (error) {
      if (!isPermanent(error)) throw error;
      this.#refused = error instanceof Error ? error.message : String(error);
      this.#deps.log.info({ why: this.#refused }, "feishu card streaming refused: streamed replies update an ordinary card instead");
      return undefined;
    }
    if (!cardId) throw new Error("feishu cardkit.card.create gave no card_id");
    const receipt = await send(JSON.stringify({ type: "card", data: { card_id: cardId } }));
    if (receipt.messageId) this.#cards.set(receipt.messageId, cardId);
    return receipt;
  }

  /**
   * Updates message `messageId` if it holds a card entity: `final` replaces the card with streaming
   * mode off, else the text is pushed. False when the message holds none (the caller patches it).
   */
  async update(messageId: string, text: string, final: boolean): Promise<boolean> {
    if (!this.#wanted) return false;
    const cardId = await this.#cardOf(messageId);
    if (!cardId) return false;
    if (!final) {
      try {
        await this.#deps.call("cardkit.cardElement.content", () =>
          this.#deps.client.cardkit.v1.cardElement.content({
            path: { card_id: cardId, element_id: REPLY_ELEMENT },
            data: { content: text, sequence: this.#sequence() },
          }),
        );
        return true;
      } catch (error) {
        // Streaming mode closed (ten minutes passed): the whole card instead, still streaming.
        if (!isPermanent(error)) throw error;
      }
    }
    await this.#deps.call("cardkit.card.update", () =>
      this.#deps.client.cardkit.v1.card.update({
        path: { card_id: cardId },
        data: { card: { type: "card_json", data: entityCard(text, !final) }, sequence: this.#sequence() },
      }),
    );
    if (final) this.#closed.set(messageId, true);
    return true;
  }

  /** Whether message `messageId` may be a card still streaming (unknown ones may: a restart forgot them). */
  mayBeOpen(messageId: string): boolean {
    if (!this.#wanted || this.#closed.get(messageId)) return false;
    return this.#cards.get(messageId) !== null;
  }

  async #cardOf(messageId: string): Promise<string | undefined> {
    const known = this.#cards.get(messageId);
    if (known !== undefined) return known ?? undefined;
    // Not sent by this process (a restart): Feishu says whether the message holds a card entity.
    try {
      const data = await this.#deps.call("cardkit.card.idConvert", () => this.#deps.client.cardkit.v1.card.idConvert({ data: { message_id: messageId } }));
      this.#cards.set(messageId, data?.card_id ?? null);
      return data?.card_id;
    } catch (error) {
      if (!isPermanent(error)) throw error;
      this.#cards.set(messageId, null);
      return undefined;
    }
  }

  #sequence(): number {
    const fromClock = Math.floor((this.#deps.clock.now() - SEQUENCE_EPOCH_MS) / 100);
    this.#lastSequence = Math.max(this.#lastSequence + 1, fromClock);
    return this.#lastSequence;
  }
}

const isPermanent = (error: unknown): error is FeishuAdapterError => !!error && typeof error === "object" && "permanent" in error && error.permanent === true;
