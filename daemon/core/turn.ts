/**
 * A turn: one or more journaled messages of a session (several when a burst
 * was merged, the first one leading) answered by one reply. `runTurn` reads
 * as the steps a turn goes through:
 *
 *   1. finish a reply recorded before a restart (only delivery is left);
 *   2. open the turn (its adapter gone: the messages are dropped);
 *   3. answer messages too old to answer with a notice;
 *   4. a route the service refused: say so;
 *   5. a session whose reset moment passed starts a fresh chain (session-reset.ts);
 *   6. open the reply's view (stream mode, typing);
 *   7. ask the service, its voice notes transcribed first (voice-notes.ts; `/stop` aborts the call);
 *   8. settle: compose the reply, move the session chain, deliver.
 *
 * Each step is a function of its own below. The pure decisions (which
 * entries expired, the reply's text, the chain's next state) are exported
 * for their unit tests.
 */
import { posix } from "node:path";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import type { DaemonConfig } from "../config/schema.js";
import type { JournalEntry, SessionState, StoredReply } from "../vocabulary/records.js";
import type { Store } from "../vocabulary/store.js";
import type { ChatAdapter } from "../vocabulary/adapter.js";
import { chunksFor, targetOf, type Delivery } from "./delivery.js";
import { chatKeyOf, sessionKeyOf, type SessionKey } from "../vocabulary/keys.js";
import { noticeText, type Notices } from "./notices.js";
import { extractReplyFiles } from "./reply-files.js";
import { resetDue, resetPolicyOf } from "./session-reset.js";
import { StoppingError, TurnInterruptedError, TurnStoppedError, type RelayMetrics } from "./relay-types.js";
import type { QueueMode } from "../vocabulary/config-fields.js";
import { startTyping, type ReplyView, type ReplyViews } from "./reply-view.js";
import type { Turn } from "./scheduler.js";
import type { CallOutcome, ServiceCalls } from "./service-call.js";
import type { VoiceNotes } from "./voice-notes.js";
import { scheduleIdOf } from "./schedules/message.js";
import { answerUnofferedCalls, buttonsConfigOf, composeInput, sortCalls, withQuestionText, type InputPlan, type Questions } from "./questions/questions.js";

export interface TurnDeps {
  config: DaemonConfig;
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: RelayMetrics;
  service: ServiceCalls;
  delivery: Delivery;
  notices: Notices;
  views: ReplyViews;
  stoppable: StoppableTurns;
  /** The turn's voice notes as transcripts (voice-notes.ts). */
  voiceNotes: VoiceNotes;
  adapterFor(platform: string, accountId: string): ChatAdapter | undefined;
  /** True once the daemon stops: no new service call starts. */
  stopping(): boolean;
  /** The queue mode of the entry's chat, route and channel (queue-mode.ts). */
  queueModeOf(entry: JournalEntry): QueueMode;
  /** An interrupted turn's entries back at the head of their session, to be answered with the message that interrupted them. */
  putBack(entries: readonly JournalEntry[]): void;
  /** The agent's questions with buttons (core/questions/). */
  questions: Questions;
}

/** The turns in flight that `/stop` can abort, by session key (at most one per session: the scheduler runs a session's turns one at a time). */
export class StoppableTurns {
  readonly #running = new Map<SessionKey, AbortController>();

  /** Registers the session's turn; `end` it when the turn is over. */
  begin(key: SessionKey): { signal: AbortSignal; end(): void } {
    const stop = new AbortController();
    this.#running.set(key, stop);
    return {
      signal: stop.signal,
      end: () => {
        if (this.#running.get(key) === stop) this.#running.delete(key);
      },
    };
  }

  /** Aborts the session's turn in flight with `TurnStoppedError` (/stop), or `TurnInterruptedError` (a newer message); false when none runs. */
  stop(key: SessionKey, why: "stop" | "interrupt" = "stop"): boolean {
    const running = this.#running.get(key);
    running?.abort(why === "stop" ? new TurnStoppedError() : new TurnInterruptedError());
    return !!running;
  }
}

/** A turn being answered: what its steps share. */
interface OpenTurn {
  readonly entries: JournalEntry[];
  readonly lead: JournalEntry;
  readonly adapter: ChatAdapter;
  /** When the turn started (clock time). */
  readonly started: number;
  /** The bridge's lines shown before the answer (a reset, files that could not be passed on), added to by the steps. */
  readonly notes: string[];
  readonly logCtx: Record<string, unknown>;
}

/** What asking the service came to. */
type Asked =
  | { kind: "stopped" }
  | { kind: "interrupted" }
  | { kind: "nothing_to_send"; notes: string[] }
  | { kind: "answered"; outcome: CallOutcome; notes: string[]; plan: InputPlan };

/** Runs one turn the scheduler started (its items are journal entry ids). Throws when the daemon stops or the journal closes (expected), or on a fault the scheduler logs. */
export async function runTurn(turn: Turn<string>, deps: TurnDeps): Promise<void> {
  const entries = turn.items.map((id) => deps.store.get(id)).filter((e): e is JournalEntry => !!e);
  const lead = entries[0];
  if (!lead) return;
  if (lead.reply) {
    await finishRecordedReply(lead, lead.reply, deps);
    // A question asked by this reply, shown and its expiry armed if the restart came before.
    return deps.questions.afterReply(lead, targetOf(lead.message), undefined);
  }
  if (deps.stopping()) throw new StoppingError();
  const opened = await openTurn(entries, deps);
  const fresh = opened && (await answerExpired(opened, deps));
  if (!fresh) return;
  if (deps.service.stoppedRoutes.has(fresh.lead.route.ruleIndex)) return failTurn(fresh, { kind: "route_stopped" }, deps);
  // A session no account owns (a linked person's, on several machines) is this node's alone until the turn is over.
  const release = await deps.store.holdSession?.(sessionKeyOf(fresh.lead.route), fresh.lead.message);
  try {
    await answer(fresh, deps);
  } finally {
    await release?.();
  }
}

/** Steps 5 to 8, on a session this node may move. */
async function answer(fresh: OpenTurn, deps: TurnDeps): Promise<void> {
  await resetIfDue(fresh, deps);
  // Step 6. The reply answers the turn's last message.
  const view = deps.views.open(fresh.adapter, fresh.lead, targetOf(fresh.lead.message, fresh.entries.at(-1)!.message.messageId), fresh.logCtx);
  const asked = await askService(fresh, view, deps);
  await settleTurn(fresh, view, asked, deps);
  // The reply is recorded (or the turn given up): the service is not asked with these transcripts again.
  await deps.voiceNotes.forget(fresh.entries);
}

/** Step 1. Answered before a restart: only delivery is left (a streamed reply finishes the messages its preview started). */
function finishRecordedReply(lead: JournalEntry, reply: StoredReply, deps: TurnDeps): Promise<void> {
  const adapter = deps.adapterFor(lead.message.platform, lead.message.accountId);
  if (lead.preview && reply.text !== undefined && adapter?.edits) {
    return deps.views.finishPreview(lead, deps.views.preview(adapter, lead), reply.text);
  }
  return deps.delivery.deliver(lead.id);
}

/** Step 2. The turn's adapter and log context; without an adapter (its account is gone) the messages are dropped. */
async function openTurn(entries: JournalEntry[], deps: TurnDeps): Promise<OpenTurn | undefined> {
  const lead = entries[0]!;
  const { message: msg, route } = lead;
  const logCtx = { platform: msg.platform, accountId: msg.accountId, chatId: msg.chatId, instanceId: route.instanceId, entries: entries.length };
  const adapter = deps.adapterFor(msg.platform, msg.accountId);
  if (adapter) return { entries, lead, adapter, started: deps.clock.now(), notes: [], logCtx };
  deps.logger.warn(logCtx, "no adapter for this account any more: turn dropped");
  deps.metrics.turn(route.instanceId, "undeliverable", 0);
  await deps.store.complete(entries.map((e) => e.id));
  return undefined;
}

/** The entries accepted more than `maxAgeMs` before `now` (none when `maxAgeMs` is 0: no limit). */
export function expiredEntries<E extends { acceptedAt: number }>(entries: readonly E[], now: number, maxAgeMs: number): E[] {
  return maxAgeMs > 0 ? entries.filter((e) => now - e.acceptedAt > maxAgeMs) : [];
}

/** Step 3. Too old to answer (the daemon was down, or the queue was stuck): say so rather than answer stale. The turn goes on with the rest, if any. */
async function answerExpired(turn: OpenTurn, deps: TurnDeps): Promise<OpenTurn | undefined> {
  const expired = expiredEntries(turn.entries, turn.started, deps.config.queue.maxTurnAgeMs);
  if (!expired.length) return turn;
  deps.logger.info({ ...turn.logCtx, expired: expired.length }, "pending messages too old: not answered");
  const { lead, adapter } = turn;
  // A reply half shown before the daemon went down is closed, not left looking unfinished.
  if (lead.preview && expired.includes(lead) && adapter.edits) {
    await deps.views.end(lead.id, { preview: deps.views.preview(adapter, lead), writer: undefined }, noticeText.interruptedMarker);
  }
  const when = new Date(expired[0]!.message.sentAt).toISOString().replace("T", " ").slice(0, 16);
  await deps.delivery.finishWith(expired, noticeText.expired(expired.length, when), "expired");
  const entries = turn.entries.filter((e) => !expired.includes(e));
  return entries.length ? { ...turn, entries } : undefined;
}

/** Step 5. The session's reset moment has passed since its last turn: a fresh chain, as /new makes, and a line saying so before the answer. */
async function resetIfDue(turn: OpenTurn, deps: TurnDeps): Promise<void> {
  const { lead } = turn;
  const policy = resetPolicyOf(deps.config, lead.route.ruleIndex, lead.message.accountId);
  const key = sessionKeyOf(lead.route);
  const current = deps.store.session(key);
  const reason = resetDue(policy, current.lastTurnAt, lead.acceptedAt);
  if (!reason) return;
  await deps.store.setSession(key, { generation: current.generation + 1 });
  deps.logger.info({ ...turn.logCtx, reason }, "session reset");
  if (policy?.notice) turn.notes.push(policy.notice);
}

/** Steps 4 and 8: the turn ends without an answer, told by the notices (coalesced per chat). */
function failTurn(turn: OpenTurn, failure: Parameters<Notices["turnFailed"]>[2], deps: TurnDeps): Promise<void> {
  return deps.notices.turnFailed(
    chatKeyOf(turn.lead.message),
    turn.entries.map((e) => e.id),
    failure,
  );
}

/** Step 7. The service call, with typing shown meanwhile; `/stop` aborts it. */
async function askService(turn: OpenTurn, view: ReplyView, deps: TurnDeps): Promise<Asked> {
  const route = turn.lead.route;
  const stoppable = deps.stoppable.begin(sessionKeyOf(route));
  // A scheduled prompt may end in silence: nobody is shown the agent typing for it.
  const typing = scheduledOnly(turn.entries) ? { stop() {} } : startTyping(turn.adapter, view.target, deps.clock, deps.config.queue.typingDelayMs);
  const notes = turn.notes;
  try {
    const transcripts = await deps.voiceNotes.transcribe(turn.entries, notes, turn.logCtx);
    // Several messages in a collected (or interrupted) turn are numbered, so the agent sees each.
    const numbered = turn.entries.length > 1 && deps.queueModeOf(turn.lead) !== "followup";
    // An open question: a tap or a typed reply answers it as the call's output (core/questions/).
    const plan = deps.questions.plan(route, turn.entries);
    const text = plan.textEntries.length ? await deps.service.buildInput(plan.textEntries, route, notes, transcripts, { numbered }) : undefined;
    const input = composeInput(plan, text);
    if (input === undefined) return { kind: "nothing_to_send", notes };
    const tools = deps.questions.toolsFor(route, turn.lead.message.accountId);
    const options = { signal: stoppable.signal, ...(view.onText ? { onText: view.onText } : {}), ...(tools.length ? { tools } : {}) };
    const first = await deps.service.call(route, input, turn.logCtx, options);
    const offered = buttonsConfigOf(deps.config, route.ruleIndex, turn.lead.message.accountId).tools;
    const outcome = await answerUnofferedCalls(
      first,
      offered,
      async (answer, outputs) => {
        const key = sessionKeyOf(route);
        const moved = nextSessionState(deps.store.session(key), answer, turn.entries.at(-1)!.acceptedAt);
        if (!moved) return undefined;
        await deps.store.setSession(key, moved);
        return deps.service.call(route, outputs, turn.logCtx, { signal: stoppable.signal, ...(tools.length ? { tools } : {}) });
      },
      deps.logger,
      turn.logCtx,
    );
    return { kind: "answered", outcome, notes, plan };
  } catch (error) {
    if (error instanceof TurnStoppedError) return { kind: "stopped" };
    if (error instanceof TurnInterruptedError) return { kind: "interrupted" };
    throw error;
  } finally {
    typing.stop();
    stoppable.end();
  }
}

/** Step 8. What the call came to, said in the chat and recorded. */
async function settleTurn(turn: OpenTurn, view: ReplyView, asked: Asked, deps: TurnDeps): Promise<void> {
  const { lead, entries, logCtx } = turn;
  if (asked.kind === "stopped") {
    // /stop: the text so far stays, marked as stopped, and the messages are forgotten.
    deps.logger.info(logCtx, "turn stopped by the person");
    await deps.views.end(lead.id, view, noticeText.stoppedMarker);
    deps.metrics.turn(lead.route.instanceId, "failed", Math.max(0, deps.clock.now() - lead.acceptedAt) / 1000);
    return deps.store.complete(entries.map((e) => e.id));
  }
  if (asked.kind === "interrupted") {
    // A newer message came (queue mode interrupt): the text so far stays, marked as stopped, and the
    // messages go again with the newer ones, so each is in the conversation once.
    deps.logger.info(logCtx, "turn interrupted by a newer message");
    await deps.views.end(lead.id, view, noticeText.stoppedMarker);
    return deps.putBack(entries);
  }
  if (asked.kind === "nothing_to_send") {
    // Nothing could be passed on (every file failed): say what happened.
    await deps.views.end(lead.id, view, noticeText.interruptedMarker);
    return deps.delivery.finishWith(entries, asked.notes.join("\n") || undefined, "failed");
  }
  const { outcome, notes, plan } = asked;
  if (!outcome.ok) {
    await deps.views.end(lead.id, view, noticeText.interruptedMarker);
    deps.logger.warn({ ...logCtx, reason: outcome.reason, requestId: outcome.requestId }, "turn gave up");
    if (notes.length) await deps.delivery.notify(view.target, notes.join("\n\n"));
    return failTurn(turn, outcome.failure, deps);
  }
  await deliverAnswer(turn, view, outcome, notes, deps);
  await deps.questions.afterReply(lead, view.target, plan.answer);
}

/** The reply's text: the bridge's notes (a context reset first), then the agent's answer. */
export function composeReply(answer: { text: string; contextReset: boolean }, notes: readonly string[]): string {
  const all = answer.contextReset ? [noticeText.contextReset, ...notes] : notes;
  const body = answer.text.trim() ? answer.text : noticeText.emptyAnswer;
  return all.length ? `${all.join("\n\n")}\n\n${body}` : body;
}

/** The reply's text and the workspace files it names (reply-files.ts), when files go back to the chat; a reply that is only files lists their names. */
export function replyWithFiles(
  answer: { text: string; contextReset: boolean },
  notes: readonly string[],
  sendBack: boolean,
): { text: string; files: string[] } {
  if (!sendBack) return { text: composeReply(answer, notes), files: [] };
  const { text, files } = extractReplyFiles(answer.text);
  const said = text || (files.length ? noticeText.filesOnly(files.map((f) => posix.basename(f))) : answer.text);
  return { text: composeReply({ ...answer, text: said }, notes), files };
}

/**
 * The session chain after an answer: it moves on to the answer's response
 * only if nobody started a new conversation meanwhile (/new during the turn
 * bumps the generation); undefined leaves it as it is.
 */
export function nextSessionState(
  current: SessionState,
  answer: { responseId?: string; sessionId: string; generation: number },
  at: number,
): SessionState | undefined {
  if (!answer.responseId || current.generation !== answer.generation) return undefined;
  return { generation: current.generation, lastResponseId: answer.responseId, sessionId: answer.sessionId, lastTurnAt: at };
}

/** Whether every message of the turn is a scheduled prompt (no person is waiting for this answer). */
const scheduledOnly = (entries: readonly JournalEntry[]): boolean => entries.every((e) => scheduleIdOf(e.message) !== undefined);

/** The silent word of the turn's schedule when the answer is exactly it (a scheduled prompt with nothing to say); else undefined. Pure. */
export function silentAnswer(config: Pick<DaemonConfig, "schedules">, entries: readonly JournalEntry[], text: string): string | undefined {
  if (!scheduledOnly(entries)) return undefined;
  const id = scheduleIdOf(entries[0]!.message);
  const word = config.schedules.find((s) => s.id === id)?.silentWord;
  return word && text.trim() === word ? id : undefined;
}

/** Step 8, answered: the reply recorded with the chain's move in one write, then shown or delivered. */
async function deliverAnswer(turn: OpenTurn, view: ReplyView, answer: Extract<CallOutcome, { ok: true }>, notes: string[], deps: TurnDeps): Promise<void> {
  const { lead, entries, adapter } = turn;
  const { store } = deps;
  const silentSchedule = silentAnswer(deps.config, entries, answer.text);
  if (silentSchedule !== undefined) return keepSilent(turn, answer, silentSchedule, deps);
  const key = sessionKeyOf(lead.route);
  const moved = nextSessionState(store.session(key), answer, entries.at(-1)!.acceptedAt);
  // A question the agent asked is recorded with the chain's move; without buttons its options are part of the reply.
  const asked = sortCalls(answer.calls, buttonsConfigOf(deps.config, lead.route.ruleIndex, lead.message.accountId).tools);
  const state = moved && deps.questions.opened(lead, moved, asked);
  const said = { ...answer, text: withQuestionText(answer.text, state?.question, adapter) };
  const { text, files } = replyWithFiles(said, notes, deps.config.replyFiles.enabled);
  const chunks = chunksFor(adapter, text, "markdown");
  const { preview, writer } = view;
  const reply = { chunks, members: entries.map((e) => e.id), format: "markdown" as const, ...(preview ? { text } : {}), ...(files.length ? { files } : {}) };
  await store.recordReply(lead.id, reply, state && { key, state });
  deps.logger.debug({ ...turn.logCtx, chunks: chunks.length, ms: deps.clock.now() - turn.started }, "turn answered");
  if (preview) return deps.views.finishPreview(store.get(lead.id) ?? lead, preview, text);
  if (writer && (await writer.finish(text))) {
    await store.recordSent(lead.id, chunks.length);
    if (files.length) return deps.delivery.deliver(lead.id); // the files, then the entries are done
    deps.metrics.turn(lead.route.instanceId, "answered", Math.max(0, deps.clock.now() - lead.acceptedAt) / 1000);
    return store.complete(entries.map((e) => e.id));
  }
  return deps.delivery.deliver(lead.id);
}

/** A scheduled prompt answered with its silent word: the conversation moves on, nothing is sent. */
async function keepSilent(turn: OpenTurn, answer: Extract<CallOutcome, { ok: true }>, schedule: string, deps: TurnDeps): Promise<void> {
  const { lead, entries } = turn;
  const key = sessionKeyOf(lead.route);
  const state = nextSessionState(deps.store.session(key), answer, entries.at(-1)!.acceptedAt);
  const members = entries.map((e) => e.id);
  await deps.store.recordReply(lead.id, { chunks: [], members, format: "markdown" }, state && { key, state });
  deps.logger.info({ ...turn.logCtx, schedule }, "scheduled prompt answered with its silent word: nothing sent");
  deps.metrics.scheduled(schedule, "silent");
  deps.metrics.turn(lead.route.instanceId, "answered", Math.max(0, deps.clock.now() - lead.acceptedAt) / 1000);
  await deps.store.complete(members);
}
