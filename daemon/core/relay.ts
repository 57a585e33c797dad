/**
 * The relay: from an accepted chat message to its delivered reply, composed
 * of parts with one job each:
 *
 *   intake.ts        rules, dedupe, bounds, journal; what the adapter may acknowledge
 *   scheduler.ts     who runs when (per instance, per session, debounce)
 *   service-call.ts  the service call: retries, instance wait, context reset, stopped routes
 *   delivery.ts      chunks sent and recorded one by one, the one send-retry policy
 *   notices.ts       everything said to a person in the bridge's own words, coalesced, never silent
 *   command-runner.ts the bridge's commands (commands.ts), run beside the session queue
 *
 * This file wires them and runs a turn. It creates the scheduler itself, so
 * the scheduler's `run` is this relay's function from the start.
 */
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import type { ServiceClient } from "../../shared/client/index.js";
import type { Random } from "../../shared/random.js";
import type { ChannelConfig, DaemonConfig } from "../config/schema.js";
import type { JournalEntry, Store, StoredRoute } from "../state/store.js";
import type { AcceptOutcome, AdmissionAnswer, AdmissionQuestion, ChatAdapter, ChatTarget, InboundMessage } from "./adapter.js";
import { createCommandRunner } from "./command-runner.js";
import { chunksFor, createDelivery, targetOf } from "./delivery.js";
import { createIntake } from "./intake.js";
import { createNotices, noticeText } from "./notices.js";
import { chatKeyOf, errorSummary, noMetrics, StoppingError, TurnStoppedError, type RelayMetrics } from "./relay-types.js";
import { createScheduler, type Scheduler, type Turn } from "./scheduler.js";
import { createServiceCalls, sessionKeyOf } from "./service-call.js";
import { createAppendWriter, createPreviewDriver, type AppendWriter, type ChatGate, type PreviewDriver } from "./stream-delivery.js";

export { errorSummary, StoppingError, type RelayMetrics } from "./relay-types.js";
export { sessionKeyOf } from "./service-call.js";
export { targetOf } from "./delivery.js";
/** Kept for callers of the old name; the one implementation lives in retry.ts. */
export { backoffDelay } from "./retry.js";

export interface RelayDeps {
  config: DaemonConfig;
  store: Store;
  client: ServiceClient;
  clock: Clock;
  random: Random;
  logger: Logger;
  metrics?: RelayMetrics;
  adapterFor(platform: string, accountId: string): ChatAdapter | undefined;
  /** The channel config of an adapter account (its access rules), if the config has one. */
  channelFor(accountId: string): ChannelConfig | undefined;
  /** Queue depth of an instance changed (for a gauge). */
  onDepth?(instanceId: string, depth: number): void;
}

export interface Relay {
  /** The `InboundSink.accept` of one adapter. */
  accept(adapter: ChatAdapter, message: InboundMessage): Promise<AcceptOutcome>;
  /** The `InboundSink.admit` of one adapter. */
  admit(adapter: ChatAdapter, question: AdmissionQuestion): AdmissionAnswer;
  readonly scheduler: Scheduler<string>;
  /** Queues the turns the journal still holds (after a restart), in order; starts nothing until `release`. */
  resume(): void;
  /** Adapters can send: runs resumed turns and commands, and owed notices. */
  release(): void;
  /** Intake stops for platforms that redeliver, and no new service call starts (in-flight ones may finish). */
  beginStop(): void;
  /** After the grace period: no further chunk is sent; resolves once sends in progress are recorded. */
  haltDelivery(): Promise<void>;
  /** Commands in flight (they run beside the scheduler). */
  whenCommandsIdle(): Promise<void>;
  /** Routes the service refused (401/403), by rule index. */
  readonly stoppedRoutes: ReadonlyMap<number, string>;
}

export function createRelay(deps: RelayDeps): Relay {
  const { config, store, clock, random } = deps;
  const log = deps.logger;
  const metrics = deps.metrics ?? noMetrics;
  const halt = new AbortController();
  let stopping = false;

  const scheduler: Scheduler<string> = createScheduler<string>({
    clock,
    concurrencyPerInstance: config.queue.concurrencyPerInstance,
    maxPendingPerSession: config.queue.maxPendingPerSession,
    maxPendingTotal: config.queue.maxPendingTotal,
    debounceMs: config.queue.debounceMs,
    held: true,
    run: (turn) => runTurn(turn),
    onError(error) {
      if (error instanceof Error && (error.name === "StoppingError" || error.name === "JournalClosedError")) return;
      log.error({ err: errorSummary(error) }, "turn failed");
    },
    onDepth(instance) {
      const d = scheduler.depth(instance);
      deps.onDepth?.(instance, d.instanceWaiting + d.instanceRunning);
    },
  });

  const delivery = createDelivery({ config, store, clock, random, logger: log, metrics, adapterFor: deps.adapterFor });
  const service = createServiceCalls({ config, store, client: deps.client, clock, random, logger: log, metrics, signal: halt.signal });
  const notices = createNotices({
    clock,
    cooldownMs: config.retry.errorCooldownMs,
    owed: store.kv("relay:owed-notices"),
    send: (target, text) => delivery.notify(target, text),
    async finish(ids, text, failure) {
      const entries = ids.map((id) => store.get(id)).filter((e): e is JournalEntry => !!e);
      await delivery.finishWith(entries, text, failure.kind);
    },
  });
  /** Per chat, when the next streamed send or edit may go (shared by every reply in the chat). */
  const gate: ChatGate = new Map();
  /** Turns in flight that /stop can abort, by session key. */
  const stoppable = new Map<string, AbortController>();
  /** Streamed replies being shown (halting waits for their operation in flight). */
  const previews = new Set<Promise<void>>();

  /** /stop: aborts the session's turn in flight and forgets its queued messages. */
  async function stopSession(route: StoredRoute): Promise<{ stopped: boolean; dropped: number }> {
    const key = sessionKeyOf(route);
    const dropped = scheduler.drop(route.instanceId, route.sessionBase).filter((id) => store.get(id));
    const running = stoppable.get(key);
    running?.abort(new TurnStoppedError());
    if (dropped.length) {
      const entries = dropped.map((id) => store.get(id)).filter((e): e is JournalEntry => !!e);
      for (const e of entries) metrics.turn(e.route.instanceId, "failed", Math.max(0, clock.now() - e.acceptedAt) / 1000);
      await store.complete(dropped);
    }
    return { stopped: !!running, dropped: dropped.length };
  }

  const commands = createCommandRunner({
    store,
    scheduler,
    delivery,
    service,
    stopSession,
    logger: log,
    adapterFor: deps.adapterFor,
  });
  const intake = createIntake({
    config,
    clock,
    store,
    scheduler,
    logger: log,
    metrics,
    notices,
    channelFor: deps.channelFor,
    notify(_adapter, message, text) {
      void delivery.notify(targetOf(message), text).catch((error: unknown) => log.warn({ err: errorSummary(error) }, "could not send a notice"));
    },
    onCommand: (entry) => commands.track(entry),
  });

  // ---------------------------------------------------------------- turns

  async function runTurn(turn: Turn<string>): Promise<void> {
    let entries = turn.items.map((id) => store.get(id)).filter((e): e is JournalEntry => !!e);
    const lead = entries[0];
    if (!lead) return;
    if (lead.reply) {
      // Answered before a restart: only delivery is left (a streamed reply finishes the messages its preview started).
      const adapter = deps.adapterFor(lead.message.platform, lead.message.accountId);
      if (lead.preview && lead.reply.text !== undefined && adapter?.capabilities.edit) {
        return finishPreview(lead, previewFor(adapter, lead), lead.reply.text);
      }
      return delivery.deliver(lead.id);
    }
    if (stopping) throw new StoppingError();

    const started = clock.now();
    const msg = lead.message;
    const route = lead.route;
    const adapter = deps.adapterFor(msg.platform, msg.accountId);
    const chatKey = chatKeyOf(msg);
    const logCtx = { platform: msg.platform, accountId: msg.accountId, chatId: msg.chatId, instanceId: route.instanceId, entries: entries.length };
    if (!adapter) {
      log.warn(logCtx, "no adapter for this account any more: turn dropped");
      metrics.turn(route.instanceId, "undeliverable", 0);
      await store.complete(entries.map((e) => e.id));
      return;
    }

    // Too old to answer (the daemon was down, or the queue was stuck): say so rather than answer stale.
    if (config.queue.maxTurnAgeMs > 0) {
      const expired = entries.filter((e) => started - e.acceptedAt > config.queue.maxTurnAgeMs);
      if (expired.length) {
        log.info({ ...logCtx, expired: expired.length }, "pending messages too old: not answered");
        // A reply half shown before the daemon went down is closed, not left looking unfinished.
        if (lead.preview && expired.includes(lead) && adapter.capabilities.edit) {
          await endPreview(lead.id, previewFor(adapter, lead), undefined, noticeText.interruptedMarker);
        }
        const when = new Date(expired[0]!.message.sentAt).toISOString().replace("T", " ").slice(0, 16);
        await delivery.finishWith(expired, noticeText.expired(expired.length, when), "expired");
        entries = entries.filter((e) => !expired.includes(e));
        if (!entries.length) return;
      }
    }

    if (service.stoppedRoutes.has(route.ruleIndex))
      return notices.turnFailed(
        chatKey,
        entries.map((e) => e.id),
        { kind: "route_stopped" },
      );

    const target = targetOf(msg, entries[entries.length - 1]!.message.messageId);
    const mode = streamModeFor(adapter, lead);
    const preview = mode === "edit" ? previewFor(adapter, lead, target) : undefined;
    const writer: AppendWriter | undefined =
      mode === "append"
        ? createAppendWriter(adapter, target, (error) => log.warn({ ...logCtx, err: errorSummary(error) }, "could not write the reply as it came"))
        : undefined;
    const streamTo = preview ?? writer;
    const stop = new AbortController();
    const sessionKey = sessionKeyOf(route);
    stoppable.set(sessionKey, stop);
    const typing = startTyping(adapter, target);
    const notes: string[] = [];
    let outcome: Awaited<ReturnType<typeof service.call>> | undefined;
    try {
      const input = await service.buildInput(entries, route, notes);
      if (input !== undefined) {
        outcome = await service.call(route, input, logCtx, { signal: stop.signal, ...(streamTo ? { onText: (t: string) => streamTo.update(t) } : {}) });
      }
    } catch (error) {
      if (!(error instanceof TurnStoppedError)) throw error;
      // /stop: the text so far stays, marked as stopped, and the messages are forgotten.
      log.info(logCtx, "turn stopped by the person");
      await endPreview(lead.id, preview, writer, noticeText.stoppedMarker);
      metrics.turn(route.instanceId, "failed", Math.max(0, clock.now() - lead.acceptedAt) / 1000);
      await store.complete(entries.map((e) => e.id));
      return;
    } finally {
      typing.stop();
      if (stoppable.get(sessionKey) === stop) stoppable.delete(sessionKey);
    }

    if (!outcome?.ok) await endPreview(lead.id, preview, writer, noticeText.interruptedMarker);
    if (!outcome) {
      // Nothing could be passed on (every file failed): say what happened.
      return delivery.finishWith(entries, notes.join("\n") || undefined, "failed");
    }
    if (!outcome.ok) {
      log.warn({ ...logCtx, reason: outcome.reason }, "turn gave up");
      if (notes.length) await delivery.notify(target, notes.join("\n\n"));
      return notices.turnFailed(
        chatKey,
        entries.map((e) => e.id),
        outcome.failure,
      );
    }

    if (outcome.contextReset) notes.unshift(noticeText.contextReset);
    const body = outcome.text.trim() ? outcome.text : noticeText.emptyAnswer;
    const text = notes.length ? `${notes.join("\n\n")}\n\n${body}` : body;
    const chunks = chunksFor(adapter, text, "markdown");

    // The chain moves on only if nobody started a new conversation meanwhile (/new during the turn).
    const current = store.session(sessionKey);
    const session =
      outcome.responseId && current.generation === outcome.generation
        ? { base: sessionKey, state: { generation: current.generation, lastResponseId: outcome.responseId, sessionId: outcome.sessionId } }
        : undefined;
    await store.recordReply(lead.id, { chunks, members: entries.map((e) => e.id), format: "markdown", ...(preview ? { text } : {}) }, session);
    log.debug({ ...logCtx, chunks: chunks.length, ms: clock.now() - started }, "turn answered");
    if (preview) return finishPreview(store.get(lead.id) ?? lead, preview, text);
    if (writer && (await writer.finish(text))) {
      await store.recordSent(lead.id, chunks.length);
      metrics.turn(route.instanceId, "answered", Math.max(0, clock.now() - lead.acceptedAt) / 1000);
      await store.complete(entries.map((e) => e.id));
      return;
    }
    await delivery.deliver(lead.id);
  }

  /** How this turn's reply shows while it is written: edited in place, written as it comes, or not at all. */
  function streamModeFor(adapter: ChatAdapter, lead: JournalEntry): "edit" | "append" | undefined {
    // A preview started before a restart is finished in place whatever the setting is now.
    if (lead.preview && adapter.capabilities.edit) return "edit";
    const channel = deps.channelFor(adapter.accountId);
    const setting = channel && "streaming" in channel ? channel.streaming : "off";
    if (setting !== "partial") return undefined;
    if (adapter.capabilities.edit && adapter.edit) return "edit";
    if (adapter.capabilities.append && adapter.write) return "append";
    return undefined;
  }

  function previewFor(adapter: ChatAdapter, lead: JournalEntry, target?: ChatTarget): PreviewDriver {
    const last = lead.reply ? (store.get(lead.reply.members.at(-1) ?? lead.id) ?? lead) : lead;
    const driver = createPreviewDriver({
      adapter,
      target: target ?? targetOf(lead.message, last.message.messageId),
      clock,
      gate,
      maxAttempts: config.retry.maxAttempts,
      ...(lead.preview ? { resume: lead.preview } : {}),
      record: (preview) => store.recordPreview(lead.id, preview),
      signal: halt.signal,
      onError(error, action) {
        metrics.error("-", "send");
        log.warn({ platform: adapter.platform, action: action.kind, err: errorSummary(error) }, "a streamed send or edit failed");
      },
    });
    previews.add(driver.settled);
    void driver.settled.then(() => previews.delete(driver.settled));
    return driver;
  }

  /** The preview shows the final text; then the entries are done. */
  async function finishPreview(lead: JournalEntry, driver: PreviewDriver, text: string): Promise<void> {
    const result = await driver.finish(text);
    if (result === "gave_up")
      log.error({ platform: lead.message.platform, chatId: lead.message.chatId }, "the platform refused the streamed reply for good: giving up");
    const members = lead.reply?.members ?? [lead.id];
    if (lead.reply) await store.recordSent(lead.id, lead.reply.chunks.length);
    metrics.turn(lead.route.instanceId, result === "done" ? "answered" : "undeliverable", Math.max(0, clock.now() - lead.acceptedAt) / 1000);
    await store.complete(members);
  }

  /** A turn that ends without an answer: a preview shown so far is closed with `marker`, never left looking unfinished. */
  async function endPreview(leadId: string, preview: PreviewDriver | undefined, writer: AppendWriter | undefined, marker: string): Promise<void> {
    if (preview) {
      const so = preview.text;
      await preview.finish(so.trim() ? `${so.trimEnd()}\n\n${marker}` : "");
      // Closed for good: if the turn is tried again (a restart after a failure), its answer starts a new preview.
      await store.recordPreview(leadId, null);
    }
    if (writer?.shown) await writer.finish(`${writer.text}\n${marker}`);
  }

  function startTyping(adapter: ChatAdapter, target: ChatTarget): { stop(): void } {
    const every = adapter.limits.typingRefreshMs;
    if (!(every > 0)) return { stop() {} };
    let timer: { cancel(): void } | undefined;
    let active = true;
    const tick = () => {
      if (!active) return;
      adapter.sendTyping(target).catch(() => undefined);
      timer = clock.setTimeout(tick, every);
    };
    tick();
    return {
      stop() {
        active = false;
        timer?.cancel();
      },
    };
  }

  // ---------------------------------------------------------------- lifecycle

  return {
    accept: (adapter, message) => intake.accept(adapter, message),
    admit: (adapter, question) => intake.admit(adapter, question),
    scheduler,
    resume() {
      for (const entry of store.pending()) {
        if (entry.leader && store.get(entry.leader)) continue; // answered with its leader
        if (entry.kind === "command") continue;
        const members = entry.reply ? entry.reply.members.filter((id) => store.get(id)) : [entry.id];
        if (!members.includes(entry.id)) members.unshift(entry.id);
        scheduler.enqueueTurn(entry.route.instanceId, entry.route.sessionBase, members);
      }
    },
    release() {
      scheduler.release();
      for (const entry of store.pending()) if (entry.kind === "command") commands.track(entry);
      notices.resume();
    },
    beginStop() {
      stopping = true;
      intake.beginStop();
    },
    async haltDelivery() {
      halt.abort();
      notices.stop();
      await delivery.halt();
      while (previews.size) await Promise.allSettled([...previews]);
    },
    whenCommandsIdle: () => commands.idle(),
    get stoppedRoutes() {
      return service.stoppedRoutes;
    },
  };
}
