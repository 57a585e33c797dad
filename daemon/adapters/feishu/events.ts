/**
 * What both delivery modes do with one event Feishu sends (already verified
 * and decrypted): answer a repeated `event_id` as the first one was answered
 * (Feishu delivers an event again when it was not answered 200 within 3
 * seconds, and again later), translate it (inbound.ts), hand it over
 * (hand-over.ts), and say when Feishu may be told "received": only once the
 * core has journaled or refused it, so a crash before that leaves the event
 * to Feishu's redelivery, which the journal answers once. A slow journal
 * costs a redelivery answered from memory here, never a loss.
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { AcceptOutcome, InboundMessage } from "../../vocabulary/adapter.js";
import { FeishuCardAction, FeishuMessageEvent, translateMessage, translateTap, type FeishuFileRef } from "./inbound.js";

/** Event ids remembered, to answer redeliveries once. */
const RECENT_EVENTS = 5000;

/** An event as either mode brings it: the v2 header's id and type, and the event. */
export interface FeishuEventIn {
  eventId: string;
  eventType: string;
  event: unknown;
}

/** "ack": answer 200 (with `toast` for a card callback); "retry": do not (Feishu delivers it again). */
export type EventVerdict = { kind: "ack"; toast?: { type: "info" | "warning" | "error" | "success"; content: string } } | { kind: "retry" };

export interface EventHandlerDeps {
  accountId: string;
  /** The bot's open id (undefined until known: events are then left for redelivery). */
  botOpenId(): string | undefined;
  clock: Clock;
  log: Logger;
  redact(text: string): string;
  /** Hands a message to the core; resolves with its outcome, rejects when it could not be taken. */
  take(message: InboundMessage, files: readonly FeishuFileRef[]): Promise<AcceptOutcome | undefined>;
  /** Told of a thread's root message (replies into the thread go under it). */
  onThread?(threadId: string, rootMessageId: string): void;
}

const ACK: EventVerdict = { kind: "ack" };
const RETRY: EventVerdict = { kind: "retry" };

export class FeishuEventHandler {
  /** The account, the bot, the clock and the hand-over (injected; never changes). */
  readonly #deps: EventHandlerDeps;
  /** event_id -> its verdict (or the hand-over still deciding it), newest last. */
  readonly #recent = new BoundedMap<string, Promise<EventVerdict>>(RECENT_EVENTS);

  constructor(deps: EventHandlerDeps) {
    this.#deps = deps;
  }

  handle(input: FeishuEventIn): Promise<EventVerdict> {
    const known = this.#recent.get(input.eventId);
    if (known) {
      this.#deps.log.debug({ eventId: input.eventId }, "feishu event delivered again: answered as before");
      return known;
    }
    const verdict = this.#decide(input);
    this.#recent.set(input.eventId, verdict);
    // A hand-over that failed is forgotten, so Feishu's redelivery is taken afresh.
    void verdict.then((v) => {
      if (v.kind === "retry" && this.#recent.get(input.eventId) === verdict) this.#recent.delete(input.eventId);
    });
    return verdict;
  }

  #decide(input: FeishuEventIn): Promise<EventVerdict> {
    if (input.eventType === "im.message.receive_v1") return this.#message(input);
    if (input.eventType === "card.action.trigger") return this.#tap(input);
    this.#deps.log.debug({ eventId: input.eventId, type: input.eventType }, "feishu event ignored");
    return Promise.resolve(ACK);
  }

  async #message(input: FeishuEventIn): Promise<EventVerdict> {
    const parsed = FeishuMessageEvent.safeParse(input.event);
    if (!parsed.success) {
      this.#deps.log.debug({ eventId: input.eventId }, "feishu message event malformed: ignored");
      return ACK;
    }
    const botOpenId = this.#deps.botOpenId();
    if (!botOpenId) return RETRY;
    const decision = translateMessage(parsed.data, { botOpenId, accountId: this.#deps.accountId });
    if (decision.kind === "ignore") {
      this.#deps.log.debug({ eventId: input.eventId, reason: decision.reason }, "feishu event is not a turn");
      return ACK;
    }
    const { thread_id: threadId, root_id: rootId, message_id: messageId } = parsed.data.message;
    if (threadId) this.#deps.onThread?.(threadId, rootId ?? messageId);
    try {
      const outcome = await this.#deps.take(decision.message, decision.files);
      // Not taken now (the daemon stopping): Feishu delivers it again.
      return outcome?.acknowledge === false ? RETRY : ACK;
    } catch (error) {
      this.#deps.log.warn(
        { eventId: input.eventId, chatId: decision.message.chatId, err: this.#deps.redact(error instanceof Error ? error.message : String(error)) },
        "feishu message not taken by the core; Feishu will deliver it again",
      );
      return RETRY;
    }
  }

  async #tap(input: FeishuEventIn): Promise<EventVerdict> {
    const parsed = FeishuCardAction.safeParse(input.event);
    const message = parsed.success
      ? translateTap(parsed.data, { accountId: this.#deps.accountId, eventId: input.eventId, nowMs: this.#deps.clock.now() })
      : undefined;
    if (!message) {
      this.#deps.log.debug({ eventId: input.eventId }, "feishu card action is not a question's: ignored");
      return ACK;
    }
    try {
      const outcome = await this.#deps.take(message, []);
      if (outcome?.acknowledge === false) return RETRY;
      if (outcome?.status === "refused" && outcome.reason === "not_yours")
        return { kind: "ack", toast: { type: "warning", content: "This question is not for you." } };
      if (outcome?.status === "duplicate" || (outcome?.status === "refused" && outcome.reason === "closed"))
        return { kind: "ack", toast: { type: "info", content: "Already answered." } };
      return ACK;
    } catch (error) {
      this.#deps.log.warn(
        { eventId: input.eventId, err: this.#deps.redact(error instanceof Error ? error.message : String(error)) },
        "feishu tap not taken by the core",
      );
      return RETRY;
    }
  }
}
