/**
 * Questions with buttons at run time (docs/bridge.md, "Buttons"): the agent's
 * call to a bridge tool becomes an open question in its session's state, the
 * person's tap (or typed reply) becomes the call's `function_call_output` on
 * the same chain, and an unanswered question expires. The turn, intake and
 * commands call the small hooks here; the pure steps are in tools.ts.
 *
 * Exactly once: a tap is an inbound message keyed by its question
 * (`answer:<id>`), so the journal's dedupe makes a double tap or a platform's
 * retry one answer, and the first answer (a tap, a typed reply, the expiry)
 * closes the question for every later one.
 */
import type { Logger } from "pino";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { DaemonConfig, ChannelConfig } from "../../config/schema.js";
import type { ButtonsConfig } from "../../vocabulary/config-fields.js";
import type { ChatAdapter, ChatTarget, InboundMessage, RefusalReason } from "../../vocabulary/adapter.js";
import { sessionKeyOf, type SessionKey } from "../../vocabulary/keys.js";
import type { JournalEntry, OpenQuestion, SessionState, StoredRoute } from "../../vocabulary/records.js";
import type { StateWrite, Store } from "../../vocabulary/store.js";
import type { QuestionEvent } from "../relay-types.js";
import {
  answerOutput,
  closedOutput,
  type FunctionCall,
  questionOf,
  questionText,
  readAnswer,
  toolDeclarations,
  type FunctionToolDeclaration,
} from "./tools.js";

/** One input item of a responses call (a tool's output, or the person's message). */
export type InputItem = { type: "function_call_output"; call_id: string; output: string } | { role: "user"; content: string };

/** The kv namespace indexing open questions by id (for expiry after a restart): where each one's session is. */
export const QUESTIONS_NAMESPACE = "questions";
const INDEX = QUESTIONS_NAMESPACE;
/**
 * An index key, `<platform>\0<account>\0<question id>`: on several machines
 * each lives with its account and moves with its lease (state/cluster-store.ts).
 */
const indexKey = (chat: Pick<InboundMessage, "platform" | "accountId">, id: string): string => `${chat.platform}\u0000${chat.accountId}\u0000${id}`;
/** The question id of an index key (a key written before accounts were named in it is the id itself). */
const idOfIndexKey = (key: string): string => key.split("\u0000")[2] ?? key;
interface IndexEntry {
  key: string;
  expiresAt: number;
  /** As the question's chat was named, its group aliases and former name too: the expiry goes through intake's access check (a guild's settings, a thread's listed by its former id). */
  chat: Pick<InboundMessage, "platform" | "accountId" | "chatId" | "chatType" | "userId" | "formerly"> & { threadId?: string; groupAliases?: string[] };
}

/**
 * The index writes that move an open question's expiry with its session (core/former-sessions.ts):
 * its session key and its chat as the thread's messages name it now, so the expiry closes the
 * question where it lives and is the same message as a tap in the thread. Its index key (platform,
 * account, id) stays, and so does its armed timer: the expiry reads its entry when it fires.
 */
export function questionExpiryMoved(
  store: Pick<Store, "kv">,
  questionId: string,
  key: SessionKey,
  chat: Pick<InboundMessage, "chatId" | "chatType" | "threadId" | "formerly">,
): StateWrite[] {
  const kv = store.kv(INDEX);
  return kv
    .keys()
    .filter((k) => idOfIndexKey(k) === questionId)
    .flatMap((k): StateWrite[] => {
      const entry = kv.get<IndexEntry>(k);
      if (!entry) return [];
      const { threadId: _former, formerly: _before, ...rest } = entry.chat;
      const moved: IndexEntry = {
        ...entry,
        key,
        chat: {
          ...rest,
          chatId: chat.chatId,
          chatType: chat.chatType,
          ...(chat.threadId ? { threadId: chat.threadId } : {}),
          ...(chat.formerly ? { formerly: chat.formerly } : {}),
        },
      };
      return [{ namespace: INDEX, key: k, value: moved }];
    });
}

export interface QuestionMetrics {
  question(event: QuestionEvent): void;
}

export interface QuestionsDeps {
  config: () => DaemonConfig;
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics?: QuestionMetrics;
  adapterFor(platform: string, accountId: string): ChatAdapter | undefined;
  channelFor(accountId: string): ChannelConfig | undefined;
  /** Hands the bridge's own closing of an expired question to intake, like a tap. */
  inject(message: InboundMessage): Promise<void>;
  /** Makes a question id. */
  newId(): string;
}

/** What a turn's entries come to when its session may have a question open. */
export interface InputPlan {
  /** The output that answers the open question (it is closed by the turn's answer). */
  answer?: { question: OpenQuestion; output: string; shown: string };
  /** The entries whose text (and files) go to the agent as the person's message. */
  textEntries: JournalEntry[];
}

/** The buttons settings of a route and channel: each key from the route, else the channel, else the top level. */
export function buttonsConfigOf(config: DaemonConfig, ruleIndex: number, accountId: string): ButtonsConfig {
  const route = config.routes[ruleIndex]?.buttons;
  const channel = config.channels.find((c) => c.id === accountId)?.buttons;
  return {
    tools: route?.tools ?? channel?.tools ?? config.buttons.tools,
    expireMinutes: route?.expireMinutes ?? channel?.expireMinutes ?? config.buttons.expireMinutes,
    answeredBy: route?.answeredBy ?? channel?.answeredBy ?? config.buttons.answeredBy,
  };
}

/** The tap's dedupe id: one per question, whoever taps and however often. */
export const answerMessageId = (questionId: string): string => `answer:${questionId}`;

/** Pure: what the turn's entries come to, given the session's open question. */
export function planInput(question: OpenQuestion | undefined, entries: readonly JournalEntry[]): InputPlan {
  const typed = entries.filter((e) => !e.message.answers);
  if (!question) return { textEntries: typed };
  const tap = entries.find((e) => e.message.answers?.questionId === question.id);
  const by = (e: JournalEntry) => e.message.userName ?? e.message.userId;
  if (question.closed === "stopped") return { answer: { question, output: closedOutput.stopped, shown: "" }, textEntries: typed };
  if (tap?.message.answers?.closed === "expired")
    return { answer: { question, output: closedOutput.expired, shown: "No answer in time." }, textEntries: typed };
  if (tap) {
    const read = readAnswer({ options: question.options, allowText: false }, tap.message.text);
    if (read.kind !== "none") {
      return {
        answer: { question, output: answerOutput(question, read), shown: `${question.options[read.kind === "option" ? read.index : 0]}: chosen by ${by(tap)}` },
        textEntries: typed,
      };
    }
  }
  // A typed reply: an option's number or text, or free text where allowed, answers; anything else closes the question and goes on as a message.
  const only = typed.length === 1 && !typed[0]!.message.attachments?.length ? typed[0] : undefined;
  const read = only ? readAnswer(question, only.message.text) : ({ kind: "none" } as const);
  if (only && read.kind !== "none") {
    const shown = read.kind === "option" ? question.options[read.index]! : only.message.text.trim();
    return { answer: { question, output: answerOutput(question, read), shown: `${shown}: answered by ${by(only)}` }, textEntries: [] };
  }
  return { answer: { question, output: closedOutput.wroteInstead, shown: "Not answered: a message came instead." }, textEntries: typed };
}

/** Pure: the call's input: the answer's outputs first (the question's, then its answer's other calls'), then the person's text. */
export function composeInput(plan: InputPlan, text: string | undefined): string | InputItem[] | undefined {
  if (!plan.answer) return text;
  const q = plan.answer.question;
  const items: InputItem[] = [
    { type: "function_call_output", call_id: q.callId, output: plan.answer.output },
    ...q.otherOutputs.map((o) => ({ type: "function_call_output" as const, call_id: o.callId, output: o.output })),
  ];
  if (text !== undefined) items.push({ role: "user", content: text });
  return items;
}

/** Pure: an answer's calls: at most one question (the first), and an output at once for every other call. */
export function sortCalls(
  calls: readonly FunctionCall[],
  offered: ButtonsConfig["tools"],
): { question?: ReturnType<typeof questionOf> & { ok: true }; outputs: { callId: string; output: string }[] } {
  const outputs: { callId: string; output: string }[] = [];
  let question: (ReturnType<typeof questionOf> & { ok: true }) | undefined;
  for (const call of calls) {
    const read = questionOf(call, offered);
    if (!read.ok) outputs.push({ callId: call.callId, output: read.output });
    else if (question) outputs.push({ callId: call.callId, output: "Error: one question at a time; ask this one after the first is answered." });
    else question = read;
  }
  return { ...(question ? { question } : {}), outputs };
}

export interface Questions {
  /** The tool declarations for a turn of this route and account (empty: none offered). */
  toolsFor(route: StoredRoute, accountId: string): FunctionToolDeclaration[];
  /** Intake's check of a tap: why it is refused (the question is closed, or not this person's to answer), or undefined to journal it. */
  screen(message: InboundMessage, route: StoredRoute): RefusalReason | undefined;
  /** What the turn's entries come to (see `planInput`). */
  plan(route: StoredRoute, entries: readonly JournalEntry[]): InputPlan;
  /** The session state after an answer that asked `asked` (undefined: none): the question recorded, its expiry armed. */
  opened(lead: JournalEntry, state: SessionState, asked: ReturnType<typeof sortCalls>): SessionState;
  /** After the reply: the question shown with buttons where the adapter has them, the answered one's buttons replaced by its outcome. */
  afterReply(lead: JournalEntry, target: ChatTarget, answered: InputPlan["answer"]): Promise<void>;
  /** /new left `question` behind with its chain: its buttons go, its expiry is forgotten (the new chain never hears of it). */
  abandon(entry: JournalEntry, question: OpenQuestion | undefined): Promise<void>;
  /** /stop: the open question closes; the next message tells the agent so. */
  stop(route: StoredRoute): Promise<void>;
  /** Arms the expiry of every open question (at start). */
  start(): void;
  /** This node no longer holds the account: its questions' expiries are the next owner's (it arms them on adopt). */
  stopAccount(platform: string, accountId: string): void;
  close(): void;
}

export function createQuestions(deps: QuestionsDeps): Questions {
  const { store, clock, logger: log } = deps;
  /** Each armed question's expiry, with the account it belongs to (a hand-over disarms that account's). */
  const timers = new Map<string, { timer: Timer; platform: string; accountId: string }>();
  const index = () => store.kv(INDEX);

  /** Cancels a question's expiry and forgets its timer (answered, stopped, abandoned). */
  const disarm = (id: string) => {
    timers.get(id)?.timer.cancel();
    timers.delete(id);
  };

  /** `key`: the index key the entry is kept under (its removal when the question is gone). */
  const arm = (id: string, entry: IndexEntry, key = indexKey(entry.chat, id)) => {
    disarm(id);
    const timer = clock.setTimeout(() => void expire(id, entry, key), Math.max(0, entry.expiresAt - clock.now()));
    timers.set(id, { timer, platform: entry.chat.platform, accountId: entry.chat.accountId });
  };

  async function expire(id: string, armed: IndexEntry, key: string): Promise<void> {
    timers.delete(id);
    // As the index has it now: a session moved to its thread's new key took its question's entry along (questionExpiryMoved).
    const entry = index().get<IndexEntry>(key) ?? armed;
    const q = store.session(entry.key as SessionKey).question;
    if (q?.id !== id || q.closed) {
      await index().set(key, undefined);
      return;
    }
    log.info({ platform: entry.chat.platform, chatId: entry.chat.chatId, questionId: id }, "question expired unanswered");
    try {
      await deps.inject({
        ...entry.chat,
        messageId: answerMessageId(id),
        text: "(no answer)",
        sentAt: clock.now(),
        answers: { questionId: id, closed: "expired" },
      });
    } catch (error) {
      log.warn({ questionId: id, err: String(error) }, "could not close an expired question: trying again in a minute");
      arm(id, { ...entry, expiresAt: clock.now() + 60_000 }, key);
    }
  }

  const viewOf = (q: OpenQuestion) => ({ id: q.id, text: q.text, options: q.options, allowText: q.allowText });

  return {
    toolsFor(route, accountId) {
      return toolDeclarations(buttonsConfigOf(deps.config(), route.ruleIndex, accountId).tools);
    },

    screen(message, route) {
      const answers = message.answers;
      if (!answers) return undefined;
      const q = store.session(sessionKeyOf(route)).question;
      if (!q || q.id !== answers.questionId || q.closed) return "closed";
      if (answers.closed) return undefined;
      const { answeredBy } = buttonsConfigOf(deps.config(), route.ruleIndex, message.accountId);
      const ids = [message.userId, ...(message.userAliases ?? [])];
      const mayAnswer =
        message.chatType === "direct" ||
        answeredBy === "members" ||
        (answeredBy === "asker" && ids.includes(q.askerId)) ||
        (answeredBy === "owners" && (deps.channelFor(message.accountId)?.access.owners ?? []).some((o) => ids.includes(o)));
      if (mayAnswer) return undefined;
      deps.metrics?.question("refused_tap");
      return "not_yours";
    },

    plan(route, entries) {
      return planInput(store.session(sessionKeyOf(route)).question, entries);
    },

    opened(lead, state, asked) {
      if (asked.outputs.length) deps.metrics?.question("unknown_tool");
      if (!asked.question) return state;
      const m = lead.message;
      const { expireMinutes } = buttonsConfigOf(deps.config(), lead.route.ruleIndex, m.accountId);
      const now = clock.now();
      const question: OpenQuestion = {
        ...asked.question.question,
        id: deps.newId(),
        askerId: m.userId,
        askedAt: now,
        expiresAt: now + expireMinutes * 60_000,
        otherOutputs: asked.outputs,
      };
      deps.metrics?.question("asked");
      return { ...state, question };
    },

    async afterReply(lead, target, answered) {
      const m = lead.message;
      const key = sessionKeyOf(lead.route);
      if (answered) {
        const out = answered.output;
        deps.metrics?.question(
          out === closedOutput.expired ? "expired" : out === closedOutput.stopped || out === closedOutput.wroteInstead ? "closed" : "answered",
        );
        await index().set(indexKey(m, answered.question.id), undefined);
        disarm(answered.question.id);
        const adapter = deps.adapterFor(m.platform, m.accountId);
        if (answered.question.messageId && adapter?.buttons && answered.shown) {
          await adapter.buttons
            .close(target, answered.question.messageId, viewOf(answered.question), `${answered.question.text}\n${answered.shown}`)
            .catch((error: unknown) => log.debug({ err: String(error) }, "could not take a question's buttons away"));
        }
      }
      const q = store.session(key).question;
      if (!q || q.closed || q.messageId || index().get(indexKey(m, q.id))) return;
      const entry: IndexEntry = {
        key,
        expiresAt: q.expiresAt,
        chat: {
          platform: m.platform,
          accountId: m.accountId,
          chatId: m.chatId,
          chatType: m.chatType,
          userId: q.askerId,
          ...(m.threadId ? { threadId: m.threadId } : {}),
          ...(m.groupAliases?.length ? { groupAliases: m.groupAliases } : {}),
          ...(m.formerly ? { formerly: { chatId: m.formerly.chatId, ...(m.formerly.threadId !== undefined ? { threadId: m.formerly.threadId } : {}) } } : {}),
        },
      };
      await index().set(indexKey(m, q.id), entry);
      arm(q.id, entry);
      const adapter = deps.adapterFor(m.platform, m.accountId);
      if (!adapter?.buttons) return;
      try {
        const receipt = await adapter.buttons.ask(target, viewOf(q));
        const current = store.session(key);
        if (receipt?.messageId && current.question?.id === q.id) await store.setSession(key, { ...current, question: { ...q, messageId: receipt.messageId } });
      } catch (error) {
        log.warn(
          { platform: m.platform, chatId: m.chatId, err: String(error) },
          "could not show a question's buttons: it can be answered by typing its number",
        );
        // The reply already carries nothing of the question: say it as text so the person can answer.
        await adapter.send(target, questionText(q), { format: "plain" }).catch(() => {});
      }
    },

    async abandon(entry, question) {
      if (!question) return;
      disarm(question.id);
      const m = entry.message;
      await index().set(indexKey(m, question.id), undefined);
      const adapter = deps.adapterFor(m.platform, m.accountId);
      if (!question.messageId || !adapter?.buttons) return;
      const target: ChatTarget = {
        platform: m.platform,
        accountId: m.accountId,
        chatId: m.chatId,
        chatType: m.chatType,
        ...(m.threadId ? { threadId: m.threadId } : {}),
      };
      await adapter.buttons
        .close(target, question.messageId, viewOf(question), `${question.text}\nClosed: a new conversation started.`)
        .catch((error: unknown) => log.debug({ err: String(error) }, "could not take a question's buttons away"));
    },

    async stop(route) {
      const key = sessionKeyOf(route);
      const state = store.session(key);
      if (!state.question || state.question.closed) return;
      await store.setSession(key, { ...state, question: { ...state.question, closed: "stopped" } });
      const id = state.question.id;
      for (const k of index().keys()) if (idOfIndexKey(k) === id) await index().set(k, undefined);
      disarm(id);
    },

    start() {
      const kv = index();
      for (const key of kv.keys()) {
        const entry = kv.get<IndexEntry>(key);
        if (entry) arm(idOfIndexKey(key), entry, key);
      }
    },

    stopAccount(platform, accountId) {
      for (const [id, t] of timers) if (t.platform === platform && t.accountId === accountId) disarm(id);
    },

    close() {
      for (const t of timers.values()) t.timer.cancel();
      timers.clear();
    },
  };
}

/** The question as text after the agent's words, for an adapter without buttons (the terminal, WhatsApp). */
export function withQuestionText(reply: string, q: OpenQuestion | undefined, adapter: ChatAdapter): string {
  return q && !adapter.buttons ? `${reply}\n\n${questionText(q)}` : reply;
}

/** At most this many answers in a row made only of calls the bridge answers with an error: then the chain is left as it is. */
const MAX_ERROR_ROUNDS = 3;

/**
 * An answer whose calls are all to tools the bridge does not offer (or bad
 * ones) gets an error output for each at once, so the chain never waits on
 * them; the agent's next answer is taken in its place, its text after the
 * first's. `callAgain` sends the outputs on the chain moved to `answer`.
 */
export async function answerUnofferedCalls<O extends { ok: true; text: string; calls: FunctionCall[]; contextReset: boolean } | { ok: false }>(
  first: O,
  offered: ButtonsConfig["tools"],
  callAgain: (answer: O & { ok: true }, outputs: InputItem[]) => Promise<O | undefined>,
  log: Logger,
  logCtx: Record<string, unknown>,
): Promise<O> {
  let outcome = first;
  for (let round = 0; outcome.ok && round < MAX_ERROR_ROUNDS; round++) {
    const ok = outcome as O & { ok: true };
    const sorted = sortCalls(ok.calls, offered);
    if (sorted.question || !sorted.outputs.length) break;
    log.warn({ ...logCtx, tools: ok.calls.map((c) => c.name) }, "the agent called tools the bridge does not offer: answered with an error");
    const next = await callAgain(
      ok,
      sorted.outputs.map((o) => ({ type: "function_call_output", call_id: o.callId, output: o.output })),
    );
    if (!next) break;
    if (!next.ok) return next;
    const nextOk = next as O & { ok: true };
    outcome = { ...nextOk, text: [ok.text, nextOk.text].filter((t) => t.trim()).join("\n\n"), contextReset: ok.contextReset || nextOk.contextReset };
  }
  return outcome;
}
