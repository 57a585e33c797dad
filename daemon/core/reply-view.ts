/**
 * How a turn's reply shows while the agent writes it: edited in place (a
 * preview, stream-delivery.ts), written as it comes (an append writer), or
 * not at all until delivery; and the typing indicator meanwhile.
 *
 * `ReplyViews` owns what the turns of one relay share: the per-chat gate of
 * streamed operations and the previews still running (halting waits for
 * them). A turn opens one `ReplyView` and closes it exactly one way: finished
 * to the final text, or ended with a marker when no answer comes.
 */
import { scheduleIdOf } from "./schedules/message.js";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import type { ChannelConfig, DaemonConfig } from "../config/schema.js";
import type { JournalEntry } from "../vocabulary/records.js";
import type { Store } from "../vocabulary/store.js";
import type { ChatAdapter, ChatTarget } from "../vocabulary/adapter.js";
import { targetOf, type AccountGuard } from "./delivery.js";
import { errorSummary, type RelayMetrics } from "./relay-types.js";
import { createAppendWriter, createPreviewDriver, type AppendWriter, type ChatGate, type PreviewDriver } from "./stream-delivery.js";

/** How a reply shows while it is written: "edit" (a preview), "append" (written as it comes), or undefined (not at all). */
export type StreamMode = "edit" | "append" | undefined;

/**
 * The stream mode of a turn, from what the adapter can do and the channel's
 * `streaming` setting. A preview started before a restart is finished in
 * place whatever the setting is now.
 */
export function streamModeFor(adapter: Pick<ChatAdapter, "edits" | "appends">, resumingPreview: boolean, streaming: string): StreamMode {
  if (resumingPreview && adapter.edits) return "edit";
  if (streaming !== "partial") return undefined;
  if (adapter.edits) return "edit";
  if (adapter.appends) return "append";
  return undefined;
}

/** A turn's open view of its reply. */
export interface ReplyView {
  readonly target: ChatTarget;
  /** Set in "edit" mode. */
  readonly preview: PreviewDriver | undefined;
  /** Set in "append" mode. */
  readonly writer: AppendWriter | undefined;
  /** What the service call streams into (undefined: the answer is read whole). */
  readonly onText: ((textSoFar: string) => void) | undefined;
}

export interface ReplyViewsDeps {
  config: DaemonConfig;
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: RelayMetrics;
  channelFor(accountId: string): ChannelConfig | undefined;
  /** Aborted when the daemon halts: previews stop where they are (the journal keeps them). */
  signal: AbortSignal;
  /** Several machines: what a chat's account answers to, its halt and its lease (delivery.ts `accountGuard`); a preview stops with either. */
  guardFor?(target: ChatTarget): AccountGuard;
  /** Sends what a reply holds beyond its text (the files it names), then ends its entries (delivery.ts `deliver`). */
  deliverRest(leaderId: string): Promise<void>;
}

export class ReplyViews {
  readonly #deps: ReplyViewsDeps;
  /** Per chat, when the next streamed send or edit may go: shared by every reply in the chat. */
  readonly #gate: ChatGate = new Map();
  /** Previews not yet settled; each removes itself when it settles, so halting waits for exactly these. */
  readonly #previews = new Set<Promise<void>>();

  constructor(deps: ReplyViewsDeps) {
    this.#deps = deps;
  }

  /** Opens the view of a turn's reply (led by `lead`, answering up to `target`). */
  open(adapter: ChatAdapter, lead: JournalEntry, target: ChatTarget, logCtx: Record<string, unknown>): ReplyView {
    const channel = this.#deps.channelFor(adapter.accountId);
    // A scheduled prompt's answer is shown whole: it may be the silent word, which is never shown.
    const streaming = scheduleIdOf(lead.message) === undefined && channel && "streaming" in channel ? channel.streaming : "off";
    const mode = streamModeFor(adapter, !!lead.preview, streaming);
    const preview = mode === "edit" ? this.preview(adapter, lead, target) : undefined;
    const writer =
      mode === "append"
        ? createAppendWriter(adapter, target, (error) =>
            this.#deps.logger.warn({ ...logCtx, err: errorSummary(error) }, "could not write the reply as it came"),
          )
        : undefined;
    const streamTo = preview ?? writer;
    return { target, preview, writer, onText: streamTo ? (t) => streamTo.update(t) : undefined };
  }

  /** The preview driver of `lead`'s reply, resuming its journaled preview if it has one. */
  preview(adapter: ChatAdapter, lead: JournalEntry, target?: ChatTarget): PreviewDriver {
    const { config, store, clock, metrics, logger } = this.#deps;
    const last = lead.reply ? (store.get(lead.reply.members.at(-1) ?? lead.id) ?? lead) : lead;
    const to = target ?? targetOf(lead.message, last.message.messageId);
    const guard = this.#deps.guardFor?.(to);
    const driver = createPreviewDriver({
      adapter,
      target: to,
      clock,
      gate: this.#gate,
      maxAttempts: config.retry.maxAttempts,
      ...(lead.preview ? { resume: lead.preview } : {}),
      record: (preview) => store.recordPreview(lead.id, preview),
      signal: guard ? AbortSignal.any([this.#deps.signal, guard.signal]) : this.#deps.signal,
      ...(guard ? { mayReach: guard.mayReach } : {}),
      onError(error, action) {
        metrics.error("-", "send");
        logger.warn({ platform: adapter.platform, action: action.kind, err: errorSummary(error) }, "a streamed send or edit failed");
      },
    });
    this.#previews.add(driver.settled);
    void driver.settled.then(() => this.#previews.delete(driver.settled));
    return driver;
  }

  /** The preview shows the final text; then the reply's entries are done. */
  async finishPreview(lead: JournalEntry, driver: PreviewDriver, text: string): Promise<void> {
    const { store, metrics, clock, logger } = this.#deps;
    const result = await driver.finish(text);
    if (result === "gave_up")
      logger.error({ platform: lead.message.platform, chatId: lead.message.chatId }, "the platform refused the streamed reply for good: giving up");
    const members = lead.reply?.members ?? [lead.id];
    // Never back: files already sent after the text (a restart finishing the preview again) stay sent.
    if (lead.reply) await store.recordSent(lead.id, Math.max(lead.sent, lead.reply.chunks.length));
    if (lead.reply?.files?.length) return this.#deps.deliverRest(lead.id);
    metrics.turn(lead.route.instanceId, result === "done" ? "answered" : "undeliverable", Math.max(0, clock.now() - lead.acceptedAt) / 1000);
    await store.complete(members);
  }

  /** A reply that ends without an answer: what was shown so far is closed with `marker`, never left looking unfinished. */
  async end(leadId: string, view: Pick<ReplyView, "preview" | "writer">, marker: string): Promise<void> {
    const { preview, writer } = view;
    if (preview) {
      const so = preview.text;
      await preview.finish(so.trim() ? `${so.trimEnd()}\n\n${marker}` : "");
      // Closed for good: if the turn is tried again (a restart after a failure), its answer starts a new preview.
      await this.#deps.store.recordPreview(leadId, null);
    }
    if (writer?.shown) await writer.finish(`${writer.text}\n${marker}`);
  }

  /** Resolves once every preview has settled (after the halt signal, they stop at their operation in flight). */
  async whenSettled(): Promise<void> {
    while (this.#previews.size) await Promise.allSettled([...this.#previews]);
  }
}

/** Shows "typing…" until stopped, refreshed as often as the platform needs it. */
export function startTyping(adapter: ChatAdapter, target: ChatTarget, clock: Clock, delayMs = 0): { stop(): void } {
  const every = adapter.limits.typingRefreshMs;
  if (!(every > 0)) return { stop() {} };
  let timer: { cancel(): void } | undefined;
  let active = true;
  const tick = () => {
    if (!active) return;
    adapter.sendTyping(target).catch(() => undefined);
    timer = clock.setTimeout(tick, every);
  };
  // Telegram's advice for sendChatAction: only when the answer takes noticeable time. An answer
  // within the delay needs no indicator, and saves the platform call on the turn's path.
  if (delayMs > 0) timer = clock.setTimeout(tick, delayMs);
  else tick();
  return {
    stop() {
      active = false;
      timer?.cancel();
    },
  };
}
