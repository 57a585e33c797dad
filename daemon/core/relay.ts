/**
 * The relay: from an accepted chat message to its delivered reply. This file
 * only wires the parts; each has one job.
 *
 * Where a chat message becomes a turn, in order:
 *
 *   1. adapters/<platform>/inbound.ts#translateMessage: the platform's message as the core's `InboundMessage`
 *   2. the adapter's `sink.accept` (core/adapter.ts `InboundSink`), given to it by daemon.ts
 *   3. daemon.ts: the sink is this relay's `accept`
 *   4. intake.ts#accept: rules, dedupe, bounds, journal; what the adapter may acknowledge
 *   5. scheduler.ts: per-session order, per-instance concurrency, debounce (a burst is one turn)
 *   6. turn.ts#runTurn: the turn's steps (recorded reply, expiry, stopped routes,
 *      the reply's view (reply-view.ts), the service call (service-call.ts), settling)
 *   7. delivery.ts: chunks sent and recorded one by one, the one send-retry policy
 *
 * Around intake: group-context.ts (unaddressed group messages kept, sent
 * with the next mention) and acknowledgement.ts (a reaction on a message
 * taken, cleared when its turn is over).
 *
 * Beside that path: notices.ts (everything said to a person in the bridge's
 * own words, coalesced, never silent), command-runner.ts (the bridge's
 * commands, run beside the session queue; /link and /unlink in
 * identity-commands.ts, /stop in stop-session.ts) and schedules/ (runner.ts
 * fires each slot through fire.ts, which journals it like a message). The relay creates the scheduler
 * itself, so the scheduler's `run` is `runTurn` from the start.
 */
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import type { ServiceClient } from "../../shared/client/index.js";
import type { Random } from "../../shared/random.js";
import type { ChannelConfig, DaemonConfig } from "../config/schema.js";
import type { JournalEntry } from "../vocabulary/records.js";
import type { Store } from "../vocabulary/store.js";
import type { AcceptOutcome, AdmissionAnswer, AdmissionQuestion, ChatAdapter, InboundMessage } from "../vocabulary/adapter.js";
import { Acknowledgements } from "./acknowledgement.js";
import { createCommandRunner } from "./command-runner.js";
import { parseCommand } from "./commands.js";
import { createDelivery, targetOf, type AccountLease } from "./delivery.js";
import { GroupContexts } from "./group-context.js";
import { createIntake } from "./intake.js";
import { sessionKeyOf } from "../vocabulary/keys.js";
import { ChatQueueModes } from "./queue-mode.js";
import { createNotices } from "./notices.js";
import { createPairing } from "./pairing.js";
import { createPairingOps, type PairingOps } from "./pairing-ops.js";
import { errorSummary, isShutdownError, noMetrics, type RelayMetrics } from "./relay-types.js";
import { ReplyViews } from "./reply-view.js";
import { createScheduler, type Scheduler } from "./scheduler.js";
import { createServiceCalls } from "./service-call.js";
import { runTurn, StoppableTurns, type TurnDeps } from "./turn.js";
import { VoiceNotes } from "./voice-notes.js";
import { IdentityLinks } from "./identity-links.js";
import { createIdentityCommands } from "./identity-commands.js";
import { scheduleIdOf } from "./schedules/message.js";
import { createFire } from "./schedules/fire.js";
import { ScheduleRunner } from "./schedules/runner.js";
import { createStopSession } from "./stop-session.js";
import { isListed, senderIds } from "./access.js";
import { describeSchedules } from "./schedules/listing.js";
import { createTranscribers } from "../transcription/transcriber.js";
import { createQuestions } from "./questions/questions.js";
import { hex } from "../../shared/random.js";

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
  /** An account this node now owns (several machines): its stored entries resume, in order, and its replies may be sent while `lease` is valid. */
  adopt(platform: string, accountId: string, entries: readonly JournalEntry[], lease: AccountLease): void;
  /** An account being handed over: no further chunk of its replies; resolves once its sends in progress are recorded. */
  handOver(platform: string, accountId: string): Promise<void>;
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
  /**
   * The config was reloaded (its channels restarted): routes stopped by the service are tried again (the fix may
   * be in the new file, and rule indexes may have moved); schedules added, removed or changed start or stop.
   */
  reloaded(): Promise<void>;
  /** DM pairing: what owners do (approve, list, revoke). */
  readonly pairing: PairingOps;
  /** One node: runs every channel's scheduled prompts (several machines: `adopt` runs each account's). */
  startSchedules(): void;
  /** The scheduled prompts, their slots and timers. */
  readonly schedules: ScheduleRunner;
}

export function createRelay(deps: RelayDeps): Relay {
  const { config, store, clock, random } = deps;
  const log = deps.logger;
  const metrics = deps.metrics ?? noMetrics;
  const halt = new AbortController();
  /** Aborted by `beginStop`: turns that start from then on end early. */
  const stopping = new AbortController();

  const scheduler: Scheduler<string> = createScheduler<string>({
    clock,
    // An instance's concurrency is fixed when its queue is made; the bounds and the debounce are read
    // from the config at each message, so a reload changes them from the next one.
    concurrencyPerInstance: config.queue.concurrencyPerInstance,
    get maxPendingPerSession() {
      return config.queue.maxPendingPerSession;
    },
    get maxPendingTotal() {
      return config.queue.maxPendingTotal;
    },
    get debounceMs() {
      return config.queue.debounceMs;
    },
    held: true,
    joins: (items) => items.every((id) => joinable(store.get(id))),
    run: (turn) => acknowledged(turn.items, () => runTurn(turn, turnDeps)),
    onError(error) {
      if (isShutdownError(error)) return;
      log.error({ err: errorSummary(error) }, "turn failed");
    },
    onDepth(instance) {
      const d = scheduler.depth(instance);
      deps.onDepth?.(instance, d.instanceWaiting + d.instanceRunning);
    },
  });

  const queueModes = new ChatQueueModes(store.kv("relay:queue-modes"));
  const queueModeOf = (entry: JournalEntry) => queueModes.modeOf(config, entry.message, entry.route.ruleIndex);
  /** A waiting turn's entry may start together with others: a message not yet answered, in a session that collects or interrupts. */
  function joinable(entry: JournalEntry | undefined): boolean {
    return !!entry && entry.kind === "turn" && !entry.reply && queueModeOf(entry) !== "followup";
  }

  const delivery = createDelivery({ config, store, clock, random, logger: log, metrics, client: deps.client, adapterFor: deps.adapterFor });
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
  const views = new ReplyViews({
    config,
    store,
    clock,
    logger: log,
    metrics,
    channelFor: deps.channelFor,
    signal: halt.signal,
    guardFor: (target) => delivery.accountGuard(target),
    deliverRest: (id) => delivery.deliver(id),
  });
  const stoppable = new StoppableTurns();
  const voiceNotes = new VoiceNotes({
    store,
    transcribers: createTranscribers({ config, clock, channelFor: deps.channelFor }),
    logger: log,
    metrics,
    signal: halt.signal,
  });
  /** Transcripts of turns that ended while this node was down or elsewhere: forgotten (best effort). */
  const sweepTranscripts = () => void voiceNotes.sweep().catch((error: unknown) => log.debug({ err: errorSummary(error) }, "could not forget old transcripts"));
  const groupContext = new GroupContexts({ clock, channelFor: deps.channelFor });
  const acks = new Acknowledgements({ channelFor: deps.channelFor, adapterFor: deps.adapterFor, logger: log });

  /** Runs a turn, then clears its messages' reactions (unless the daemon stops: the turn resumes at the next start). */
  async function acknowledged(ids: readonly string[], run: () => Promise<void>): Promise<void> {
    // A scheduled prompt is no platform message: nothing to react on.
    // Nor is a tap on a question's button.
    const messages = ids.flatMap((id) => store.get(id)?.message ?? []).filter((m) => scheduleIdOf(m) === undefined && !m.answers);
    try {
      await run();
    } catch (error) {
      if (!isShutdownError(error)) acks.answered(messages);
      throw error;
    }
    acks.answered(messages);
  }

  const questions = createQuestions({
    config: () => config,
    store,
    clock,
    logger: log,
    metrics: { question: (event) => metrics.question?.(event) },
    adapterFor: deps.adapterFor,
    channelFor: deps.channelFor,
    async inject(message) {
      const adapter = deps.adapterFor(message.platform, message.accountId);
      if (!adapter) throw new Error(`no adapter for ${message.platform} ${message.accountId}`);
      await accept(adapter, message);
    },
    newId: () => `${clock.now().toString(36)}${hex(random, 6)}`,
  });

  /** Intake, with the group's context before a message that addresses the bot, and a reaction on a turn's message once taken. */
  async function accept(adapter: ChatAdapter, message: InboundMessage): Promise<AcceptOutcome> {
    // A tap on a question's button is no conversation: the group's context waits for the next message.
    if (message.answers) return intake.accept(adapter, message);
    const outcome = await intake.accept(adapter, groupContext.attach(message));
    groupContext.settle(message, outcome);
    const command = !message.attachments?.length && parseCommand(message.text);
    if (outcome.status === "accepted" && !command) acks.taken(message);
    return outcome;
  }

  const stopSession = createStopSession({ store, clock, metrics, scheduler, stoppable, closeQuestion: (route) => questions.stop(route) });

  const schedules = new ScheduleRunner({
    // Read at each look (a reload replaces them; `reloaded` starts and stops what changed).
    get schedules() {
      return config.schedules;
    },
    platformOf(accountId) {
      const channel = deps.channelFor(accountId);
      return channel && deps.adapterFor(channel.type, accountId) ? channel.type : undefined;
    },
    store,
    clock,
    logger: log,
    fire: createFire({ config, store, scheduler, logger: log }),
    count: (schedule, outcome) => metrics.scheduled(schedule, outcome),
  });

  const links = new IdentityLinks({
    store,
    clock,
    random,
    // Read at each message: a reload's links apply to the next one.
    configured: () => config.identityLinks,
    platformOf: (accountId) => deps.channelFor(accountId)?.type,
  });
  const identityCommands = createIdentityCommands({ links, logger: log });

  // One owner of pairing state: strangers' requests (intake) and owners' approvals count against the same limits.
  const pairing = createPairing({ store, clock, random, logger: log });
  const pairingOps = createPairingOps({
    pairing,
    channelFor: deps.channelFor,
    delivery,
    logger: log,
  });
  const commands = createCommandRunner({
    approvePairing: (entry, codeArg) => pairingOps.approveFromChat(entry, codeArg),
    link: identityCommands.link,
    unlink: identityCommands.unlink,
    listSchedules(entry) {
      const m = entry.message;
      const channel = deps.channelFor(m.accountId);
      if (!channel || !isListed(channel.access.owners, senderIds(m))) return "Only this channel's owners (access.owners) can list its schedules.";
      return describeSchedules(schedules.list(m.accountId), clock.now());
    },
    config,
    clock,
    store,
    scheduler,
    delivery,
    service,
    stopSession,
    queueModes,
    logger: log,
    adapterFor: deps.adapterFor,
    channelFor: deps.channelFor,
    abandonQuestion: (entry, question) => questions.abandon(entry, question),
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
    onQueued(entry, sessionWasBusy) {
      // Queue mode interrupt: a message to a session answering an earlier one stops that answer (its messages go again with this one).
      if (sessionWasBusy && queueModeOf(entry) === "interrupt" && stoppable.stop(sessionKeyOf(entry.route), "interrupt"))
        log.debug({ platform: entry.message.platform, chatId: entry.message.chatId }, "a newer message interrupts the answer in progress");
    },
    pairing,
    links,
    screenAnswer: (message, route) => questions.screen(message, route),
  });
  const turnDeps: TurnDeps = {
    config,
    store,
    clock,
    logger: log,
    metrics,
    service,
    delivery,
    notices,
    views,
    stoppable,
    voiceNotes,
    adapterFor: deps.adapterFor,
    stopping: () => stopping.signal.aborted,
    queueModeOf,
    questions,
    putBack(entries) {
      const route = entries[0]?.route;
      if (route)
        scheduler.putBack(
          route.instanceId,
          route.sessionBase,
          entries.map((e) => e.id),
        );
    },
  };

  /** Stored turns back in their sessions' queues, in acceptance order (commands are tracked on release). */
  function queueStored(entries: readonly JournalEntry[]): void {
    for (const entry of entries) {
      if (entry.leader && store.get(entry.leader)) continue; // answered with its leader
      if (entry.kind === "command") continue;
      const members = entry.reply ? entry.reply.members.filter((id) => store.get(id)) : [entry.id];
      if (!members.includes(entry.id)) members.unshift(entry.id);
      scheduler.enqueueTurn(entry.route.instanceId, entry.route.sessionBase, members);
    }
  }

  // ---------------------------------------------------------------- lifecycle

  return {
    accept,
    admit: (adapter, question) => intake.admit(adapter, question),
    scheduler,
    resume() {
      queueStored(store.pending());
    },
    adopt(platform, accountId, entries, lease) {
      delivery.resumeAccount(platform, accountId, lease);
      schedules.startAccount(platform, accountId);
      queueStored(entries);
      for (const entry of entries) if (entry.kind === "command") commands.track(entry);
      notices.resume();
      sweepTranscripts();
      questions.start();
    },
    handOver(platform, accountId) {
      schedules.stopAccount(platform, accountId);
      questions.stopAccount(platform, accountId);
      return delivery.haltAccount(platform, accountId);
    },
    release() {
      scheduler.release();
      for (const entry of store.pending()) if (entry.kind === "command") commands.track(entry);
      notices.resume();
      sweepTranscripts();
      questions.start();
    },
    beginStop() {
      stopping.abort();
      intake.beginStop();
      void schedules.stop();
    },
    startSchedules: () => schedules.startAll(),
    schedules,
    async haltDelivery() {
      halt.abort();
      notices.stop();
      questions.close();
      await delivery.halt();
      await views.whenSettled();
    },
    whenCommandsIdle: () => commands.idle(),
    pairing: pairingOps,
    async reloaded() {
      service.resumeRoutes();
      await schedules.refresh();
    },
    get stoppedRoutes() {
      return service.stoppedRoutes;
    },
  };
}
