/**
 * The hand-over: messages taken from the socket, one at a time in the order
 * they came (order kept per chat), each translated (inbound.ts) and handed to
 * the core by the one hand-over (../hand-over.ts, its file from files.ts,
 * fetched only once the core admitted the sender), and only then marked read. What the core refused is kept (replay.ts) and offered
 * again on the next open.
 */
import type { Clock } from "../../../shared/clock.js";
import type { AdapterStateStore, AdapterStatusEvent, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import { handOver } from "../hand-over.js";
import { describeError } from "./errors.js";
import { whatsappFileOf, whatsappFiles, type MediaFetchDeps } from "./files.js";
import { mediaOfMessage, translateMessage, type SelfJids } from "./inbound.js";
import type { WhatsAppOutbound } from "./outbound.js";
import { UnacceptedMessages, type HandOverOutcome } from "./replay.js";
import type { WAMessage, WhatsAppSocket } from "./socket.js";

/** The adapter-state key of the refused messages. */
const UNACCEPTED_KEY = "unaccepted";

export interface HandOverDeps extends MediaFetchDeps {
  /** The channel's id, copied into every message. */
  accountId: string;
  /** Dates a message that carries no timestamp. */
  clock: Clock;
  /** The adapter's durable state: refused messages survive a restart there. */
  state: AdapterStateStore;
  /** Mark accepted messages read. */
  readReceipts: boolean;
  /** Remembers accepted group messages, so replies can quote them. */
  outbound: Pick<WhatsAppOutbound, "rememberReceived">;
  /** The socket that is open now, if any: read receipts go there rather than to a socket since replaced. */
  openSocket(): WhatsAppSocket | undefined;
}

export class WhatsAppHandOver {
  readonly #deps: HandOverDeps;
  /** Where messages go; set by `begin`, before any socket exists. */
  #sink: InboundSink | undefined;
  /** The tail of the serial chain: every batch waits for the one before, so order holds. Never rejects. */
  #tail: Promise<void> = Promise.resolve();
  /** Taken but not accepted; loaded from the adapter state on `begin`. */
  #unaccepted = new UnacceptedMessages(undefined);

  constructor(deps: HandOverDeps) {
    this.#deps = deps;
  }

  /** Before a run: sets the sink and loads the messages an earlier run could not hand over. */
  begin(sink: InboundSink): void {
    this.#sink = sink;
    this.#unaccepted = new UnacceptedMessages(this.#deps.state.get<unknown>(UNACCEPTED_KEY));
  }

  /** Passes connection news on to the core (none before `begin`). */
  status(event: AdapterStatusEvent): void {
    this.#sink?.status(event);
  }

  /** Queues live messages; `self` is the bot's JIDs as known now. */
  take(socket: WhatsAppSocket, messages: WAMessage[], self: SelfJids): void {
    this.#tail = this.#tail
      .then(async () => {
        for (const msg of messages) await this.#note(msg, await this.#handle(socket, msg, self));
      })
      .catch((err: unknown) => this.#deps.log.error({ err: describeError(err) }, "WhatsApp hand-over failed"));
  }

  /** Queues the refused messages again (a socket just opened), ahead of anything newer. */
  replay(socket: WhatsAppSocket, self: SelfJids): void {
    if (this.#unaccepted.size) this.take(socket, this.#unaccepted.pending(), self);
  }

  /** Resolves once every message queued so far has been handled. */
  drained(): Promise<void> {
    return this.#tail;
  }

  async #handle(socket: WhatsAppSocket, msg: WAMessage, self: SelfJids): Promise<HandOverOutcome> {
    const { log, accountId, clock } = this.#deps;
    const onSkip = (reason: string) => log.debug({ reason, messageId: msg.key.id }, "skipped WhatsApp message");
    const inbound = translateMessage(msg, { self, accountId, now: clock.now(), onSkip });
    if (!inbound) return "skipped";
    const sink = this.#sink;
    if (!sink) return "refused";
    const accepted = await this.#accept(sink, socket, msg, inbound);
    if (accepted === "refused") return "refused";
    if (inbound.chatType === "group") this.#deps.outbound.rememberReceived(inbound.chatId, inbound.messageId, msg);
    // Strangers' (and unaddressed) messages stay unread: on a personal number the owner should still see them.
    if (accepted === "admitted") this.#markRead(socket, msg);
    return "accepted";
  }

  /** "admitted": journaled for a sender the core hears; "taken": journaled but not for the agent; "refused": not journaled. */
  async #accept(sink: InboundSink, socket: WhatsAppSocket, msg: WAMessage, inbound: InboundMessage): Promise<"admitted" | "taken" | "refused"> {
    const media = mediaOfMessage(msg);
    try {
      // A stranger's bare file still reaches the core, which answers them as for any message of theirs.
      const outcome = await handOver(sink, inbound, media ? [whatsappFileOf(media)] : [], whatsappFiles(this.#deps, socket, msg), { handOverBare: true });
      if (!outcome?.acknowledge) throw new Error(`not taken now (${outcome?.reason})`);
      return outcome.status === "accepted" || outcome.status === "duplicate" ? "admitted" : "taken";
    } catch (err) {
      // Not journaled: do not acknowledge; kept to offer again.
      const where = { err: describeError(err), chatId: inbound.chatId, messageId: inbound.messageId };
      this.#deps.log.warn(where, "core refused WhatsApp message; will offer it again");
      return "refused";
    }
  }

  #markRead(socket: WhatsAppSocket, msg: WAMessage): void {
    if (!this.#deps.readReceipts) return;
    const reader = this.#deps.openSocket() ?? socket;
    reader.readMessages?.([msg.key]).catch((err: unknown) => this.#deps.log.debug({ err: describeError(err) }, "read receipt failed"));
  }

  async #note(msg: WAMessage, outcome: HandOverOutcome): Promise<void> {
    const change = this.#unaccepted.note(msg, outcome);
    if (change.dropped) this.#deps.log.error({ messageId: change.dropped.key.id }, "too many refused WhatsApp messages kept; the oldest is dropped");
    if (!change.changed) return;
    try {
      await this.#deps.state.set(UNACCEPTED_KEY, this.#unaccepted.toStored());
    } catch (err) {
      this.#deps.log.error({ err: describeError(err) }, "saving refused WhatsApp messages failed");
    }
  }
}
