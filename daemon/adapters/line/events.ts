/**
 * What the bridge does with one verified webhook body: each event parsed,
 * answered once per `webhookEventId` (LINE's redelivery, `isRedelivery`,
 * brings the same id again), translated (inbound.ts), its reply and quote
 * tokens remembered for the answer (outbound.ts), and handed over in its
 * chat's order. The body is answered 200 once every event in it is journaled
 * or deliberately refused; 500 when one could not be taken, so LINE (with
 * webhook redelivery on) delivers the events again, and those already taken
 * are answered from memory or by the core's duplicate check.
 */
import type { Logger } from "pino";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { InboundMessage } from "../../vocabulary/adapter.js";
import { LineEvent, LineWebhookBody, translateMessage, type LineFile, type Translation } from "./inbound.js";

export type EventVerdict = "ack" | "retry";

export interface LineEventsDeps {
  accountId: string;
  log: Logger;
  redact(text: string): string;
  /** Hands a message to the core; resolves once taken or refused, rejects when it could not be. */
  take(message: InboundMessage, files: readonly LineFile[]): Promise<unknown>;
  /** A message's tokens, kept for its answer. */
  remember(chatId: string, messageId: string, tokens: { replyToken: string | undefined; quoteToken: string | undefined }): void;
  /** A postback (a button tapped); absent: postbacks are ignored. */
  postback?(translation: Extract<Translation, { kind: "postback" }>, eventId: string): Promise<unknown>;
}

/** Event ids remembered to answer redeliveries once. */
const RECENT_EVENTS = 5000;

export class LineEventHandler {
  readonly #deps: LineEventsDeps;
  readonly #recent = new BoundedMap<string, Promise<EventVerdict>>(RECENT_EVENTS);

  constructor(deps: LineEventsDeps) {
    this.#deps = deps;
  }

  /** One webhook body (already verified as LINE's); resolves with what to answer. */
  async handle(body: unknown): Promise<EventVerdict> {
    const parsed = LineWebhookBody.safeParse(body);
    if (!parsed.success) {
      this.#deps.log.debug("line webhook body ignored (not a webhook body)");
      return "ack";
    }
    // An empty events list is LINE's "Verify" button: answered 200.
    const verdicts = await Promise.all(parsed.data.events.map((event) => this.#one(event)));
    return verdicts.every((v) => v === "ack") ? "ack" : "retry";
  }

  #one(raw: unknown): Promise<EventVerdict> {
    const parsed = LineEvent.safeParse(raw);
    if (!parsed.success) return Promise.resolve("ack");
    const event = parsed.data;
    const known = this.#recent.get(event.webhookEventId);
    if (known) {
      this.#deps.log.debug({ eventId: event.webhookEventId }, "line event delivered again: answered as before");
      return known;
    }
    const verdict = this.#decide(event);
    this.#recent.set(event.webhookEventId, verdict);
    // A hand-over that failed is forgotten, so the redelivery is taken afresh.
    void verdict.then((v) => {
      if (v === "retry" && this.#recent.get(event.webhookEventId) === verdict) this.#recent.delete(event.webhookEventId);
    });
    return verdict;
  }

  #take(event: LineEvent, translation: Extract<Translation, { kind: "message" }>): Promise<unknown> {
    this.#deps.remember(translation.message.chatId, translation.message.messageId, {
      // A redelivered event's reply token is not to be trusted within its minute (LINE redelivers late): its answer is pushed.
      replyToken: event.deliveryContext?.isRedelivery ? undefined : translation.replyToken,
      quoteToken: translation.quoteToken,
    });
    return this.#deps.take(translation.message, translation.files);
  }

  #decide(event: LineEvent): Promise<EventVerdict> {
    const translation = translateMessage(event, { accountId: this.#deps.accountId });
    if (translation.kind === "ignore") {
      this.#deps.log.debug({ eventId: event.webhookEventId, reason: translation.reason }, "line event is not a turn");
      return Promise.resolve("ack");
    }
    const handedOver =
      translation.kind === "postback" ? (this.#deps.postback?.(translation, event.webhookEventId) ?? Promise.resolve()) : this.#take(event, translation);
    return handedOver.then(
      (): EventVerdict => "ack",
      (error: unknown): EventVerdict => {
        this.#deps.log.warn(
          { eventId: event.webhookEventId, err: this.#deps.redact(error instanceof Error ? error.message : String(error)) },
          "line event not taken by the core; answered 500 (LINE delivers it again where redelivery is on)",
        );
        return "retry";
      },
    );
  }
}
