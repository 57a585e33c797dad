/**
 * What both delivery modes do with one event Slack sends: parse it, answer a
 * repeated `event_id` (Slack's retries) as the first one was answered,
 * translate it (inbound.ts), hand it over (hand-over.ts), and say when Slack may
 * be told "received". Slack wants that within 3 seconds whatever the turn
 * takes: the answer comes as soon as the core has journaled (or refused) the
 * message, which is quick, and at the latest after `ackWithinMs` even when
 * the journal is slower (the hand-over then still finishes; a crash in that
 * window is the one way a message acknowledged to Slack is not kept).
 * A message the core could not take (its journal failed) is not acknowledged,
 * so Slack delivers it again.
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { AcceptOutcome, InboundMessage } from "../../vocabulary/adapter.js";
import { SlackBlockActions, tapAnswerText, translateBlockAction } from "./buttons.js";
import { SlackEventCallback, SlackSlashCommand, translateMessage, translateSlashCommand, type BotIdentity, type SlackFile } from "./inbound.js";

/** Slack's budget is 3 s; answering by 2.5 s leaves room for the network. */
export const ACK_WITHIN_MS = 2500;
/** Event ids remembered, to answer Slack's retries (up to 6 minutes later) once. */
const RECENT_EVENTS = 5000;

/** "ack": tell Slack it arrived; "retry": do not (Slack delivers it again). */
export type EventVerdict = "ack" | "retry";

export interface EventHandlerDeps {
  accountId: string;
  bot(): BotIdentity | undefined;
  clock: Clock;
  log: Logger;
  redact(text: string): string;
  /** Hands a message to the core; resolves once taken or refused, rejects when it could not be. */
  take(message: InboundMessage, files: readonly SlackFile[]): Promise<AcceptOutcome | undefined>;
  /** Tells the person who tapped, privately, through the tap's `response_url` (best effort). */
  respond?(responseUrl: string, text: string): Promise<void>;
  inActiveThread(chatId: string): boolean;
  /** Every event or command that came in (the watchdog counts traffic). */
  onTraffic?(): void;
  /** Default ACK_WITHIN_MS; null: no budget, the verdict is the hand-over's (the inbox intake: nothing waits on it). */
  ackWithinMs?: number | null;
}

export class SlackEventHandler {
  /** The account, the bot, the clock and the hand-over (injected; never changes). */
  readonly #deps: EventHandlerDeps;
  /** event_id -> its verdict (or the hand-over still deciding it), newest last; bounded by RECENT_EVENTS. */
  readonly #recent = new BoundedMap<string, Promise<EventVerdict>>(RECENT_EVENTS);

  constructor(deps: EventHandlerDeps) {
    this.#deps = deps;
  }

  /** One `event_callback` body (already verified as Slack's); resolves with what to tell Slack. */
  handle(body: unknown, retry?: { num: number; reason: string }): Promise<EventVerdict> {
    this.#deps.onTraffic?.();
    const parsed = SlackEventCallback.safeParse(body);
    if (!parsed.success) {
      // Not an event this bridge reads (or malformed): nothing to keep; acknowledged so Slack stops sending it.
      this.#deps.log.debug({ type: typeOf(body) }, "slack payload ignored");
      return Promise.resolve("ack");
    }
    const id = parsed.data.event_id;
    const known = this.#recent.get(id);
    if (known) {
      this.#deps.log.debug({ eventId: id, retry }, "slack event delivered again: answered as before");
      return known;
    }
    const verdict = this.#decide(parsed.data);
    this.#remember(id, verdict);
    // A hand-over that failed is forgotten, so Slack's retry is taken afresh.
    void verdict.then((v) => {
      if (v === "retry" && this.#recent.get(id) === verdict) this.#recent.delete(id);
    });
    return verdict;
  }

  /** One slash command's payload; resolves with what to tell Slack (it does not retry a command: "retry" means answer an error). */
  handleCommand(payload: unknown): Promise<EventVerdict> {
    this.#deps.onTraffic?.();
    const parsed = SlackSlashCommand.safeParse(payload);
    if (!parsed.success) {
      this.#deps.log.debug("slack slash command payload ignored (malformed)");
      return Promise.resolve("ack");
    }
    if (!this.#deps.bot()) return Promise.resolve("retry");
    const message = translateSlashCommand(parsed.data, { accountId: this.#deps.accountId }, this.#deps.clock.now());
    const handedOver = this.#deps.take(message, []).then(
      (): EventVerdict => "ack",
      (): EventVerdict => "retry",
    );
    return this.#withinBudget(handedOver);
  }

  /**
   * One `block_actions` payload (a tap on the bridge's buttons): handed over
   * in its chat's order and acknowledged as an event is (Slack does not send
   * it again, so the acknowledgement never waits past the budget); a tap that
   * is not the first answer, or not the tapper's, is told so privately.
   */
  handleAction(payload: unknown): Promise<EventVerdict> {
    this.#deps.onTraffic?.();
    const parsed = SlackBlockActions.safeParse(payload);
    const tap = parsed.success ? translateBlockAction(parsed.data, this.#deps.accountId, this.#deps.clock.now()) : undefined;
    if (!parsed.success || !tap) {
      this.#deps.log.debug("slack interaction ignored (not a tap on the bridge's buttons)");
      return Promise.resolve("ack");
    }
    // A Socket Mode envelope sent again carries the same trigger id: answered as the first was, nothing said twice.
    const known = this.#recent.get(tap.messageId);
    if (known) return known;
    const responseUrl = parsed.data.response_url;
    const outcome = this.#deps.take(tap, []).catch((error: unknown) => {
      this.#deps.log.warn(
        { chatId: tap.chatId, err: this.#deps.redact(error instanceof Error ? error.message : String(error)) },
        "slack tap not taken by the core; the person is asked to tap again",
      );
      return "not_taken" as const;
    });
    void outcome.then((settled) => {
      const text = tapAnswerText(settled);
      if (text && responseUrl) void this.#deps.respond?.(responseUrl, text);
    });
    const verdict = this.#withinBudget(outcome.then((): EventVerdict => "ack"));
    this.#remember(tap.messageId, verdict);
    return verdict;
  }

  #decide(callback: SlackEventCallback): Promise<EventVerdict> {
    const bot = this.#deps.bot();
    if (!bot) return Promise.resolve("retry");
    const decision = translateMessage(callback.event, {
      bot,
      accountId: this.#deps.accountId,
      inActiveThread: (chatId) => this.#deps.inActiveThread(chatId),
    });
    if (decision.kind === "ignore") {
      this.#deps.log.debug({ eventId: callback.event_id, reason: decision.reason }, "slack event is not a turn");
      return Promise.resolve("ack");
    }
    const handedOver = this.#deps.take(decision.message, decision.files).then(
      (): EventVerdict => "ack",
      (error: unknown): EventVerdict => {
        this.#deps.log.warn(
          { eventId: callback.event_id, chatId: decision.message.chatId, err: this.#deps.redact(error instanceof Error ? error.message : String(error)) },
          "slack message not taken by the core; Slack will deliver it again",
        );
        return "retry";
      },
    );
    return this.#withinBudget(handedOver);
  }

  /** The hand-over's verdict, or "ack" once `ackWithinMs` passed (Slack would retry a slower answer). */
  #withinBudget(verdict: Promise<EventVerdict>): Promise<EventVerdict> {
    const budget = this.#deps.ackWithinMs === undefined ? ACK_WITHIN_MS : this.#deps.ackWithinMs;
    if (budget === null) return verdict;
    return new Promise<EventVerdict>((resolve) => {
      const timer = this.#deps.clock.setTimeout(() => resolve("ack"), budget);
      void verdict.then((v) => {
        timer.cancel();
        resolve(v);
      });
    });
  }

  #remember(id: string, verdict: Promise<EventVerdict>): void {
    this.#recent.set(id, verdict);
  }
}

const typeOf = (body: unknown): string => (body && typeof body === "object" && "type" in body && typeof body.type === "string" ? body.type : "unknown");
