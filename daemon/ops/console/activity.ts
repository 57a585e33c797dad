/**
 * What the operator's console shows of the traffic: the chats seen since
 * this node started (bounded), each with its route and its last turns, and
 * a live feed of events (a message accepted, its reply known, its reply
 * delivered with the latency, queue depths, channel states, pairing
 * changes). Fed by the observed store (observed-store.ts) and the daemon;
 * read by the console's API. Message text lives here in memory only, for
 * the operator who opens a chat; events never carry it.
 */
import type { Clock } from "../../../shared/clock.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import { readAnswer } from "../../core/questions/tools.js";
import { chatKeyOf, type ChatKey } from "../../vocabulary/keys.js";
import type { JournalEntry, SessionState, StoredReply, StoredRoute } from "../../vocabulary/records.js";

/** A chat as the console names it (no text). */
export interface ChatRef {
  key: ChatKey;
  platform: string;
  accountId: string;
  chatId: string;
  chatType: "direct" | "group";
  /** A forum topic of the chat, its own conversation. */
  threadId?: string;
}

export type ActivityEvent =
  | { type: "accepted"; at: number; chat: ChatRef; instance: string; entry: string; kind: "turn" | "command" }
  | { type: "replied"; at: number; chat: ChatRef; instance: string; entry: string; latencyMs: number }
  | { type: "delivered"; at: number; chat: ChatRef; instance: string; entry: string; latencyMs: number }
  | { type: "queue"; at: number; instance: string; waiting: number; running: number }
  | { type: "channel"; at: number; channel: string; platform: string; state: string }
  | { type: "pairing"; at: number }
  /** A reload was applied or refused (the overview reads it anew). */
  | { type: "config"; at: number }
  | { type: "session"; at: number; chat: ChatRef; by: string };

/** One turn of a chat as the operator sees it when they open the chat. */
export interface TurnRecord {
  /** The journal entry that led the turn. */
  entry: string;
  acceptedAt: number;
  userName: string | undefined;
  text: string;
  reply: string | undefined;
  deliveredAt: number | undefined;
  latencyMs: number | undefined;
  /** The question the agent asked with its reply (the bridge's buttons); `settled` once a later message answered or passed it. */
  question?: { id: string; text: string; options: string[]; allowText: boolean; settled?: boolean };
  /** This message answered a question: its text (the option chosen, or the words typed). */
  answers?: string;
}

export interface ChatRecord extends ChatRef {
  route: Pick<StoredRoute, "instanceId" | "sessionBase" | "ruleIndex">;
  lastAt: number;
  turns: TurnRecord[];
}

/** Chats kept (the least recently active go first) and turns kept per chat. */
const MAX_CHATS = 1000;
const TURNS_PER_CHAT = 20;
/** Latencies kept for the overview's median. */
const LATENCY_WINDOW = 200;
const MINUTE = 60_000;
/** What the overview plots: the last hour, at most HISTORY_POINTS points a series (the oldest go first). */
const HISTORY_MS = 60 * MINUTE;
const HISTORY_POINTS = 720;

/** A plotted point: when (epoch ms) and the value then. */
export type Point = [at: number, value: number];
export interface ActivityHistory {
  turnsPerMinute: Point[];
  latencyMs: Point[];
  queueDepth: Point[];
}

export const chatRefOf = (m: JournalEntry["message"]): ChatRef => ({
  key: chatKeyOf(m),
  platform: m.platform,
  accountId: m.accountId,
  chatId: m.chatId,
  chatType: m.chatType,
  ...(m.threadId !== undefined ? { threadId: m.threadId } : {}),
});

export class ActivityFeed {
  readonly #clock: Clock;
  /** Chats by key, least recently active first (re-inserted on activity); at most MAX_CHATS. */
  readonly #chats = new BoundedMap<ChatKey, ChatRecord>(MAX_CHATS);
  /** Every listener gets every event in order; removed by the function `subscribe` returns. */
  readonly #listeners = new Set<(event: ActivityEvent) => void>();
  /**
   * When each turn of the last minute was delivered, oldest first from `#deliveredStart`: a queue,
   * so dropping the old is a step of an index, not a copy of the minute's times on every delivery
   * (at hundreds of turns a second that copy was a tenth of the relay's CPU).
   */
  #deliveredTimes: number[] = [];
  #deliveredStart = 0;
  /** The latest delivery latencies (ms), oldest first; at most LATENCY_WINDOW. */
  #latencies: number[] = [];
  /** The overview's plots: a point per delivered turn (turns per minute, latency) and per queue move (depth over every instance). */
  readonly #history: ActivityHistory = { turnsPerMinute: [], latencyMs: [], queueDepth: [] };
  /** Each instance's last queue depth (waiting and in flight), summed for the queue plot. */
  readonly #queueDepths = new Map<string, number>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Turn events are built only while someone listens (the console's stream): three objects a turn otherwise made for nobody. */
  subscribe(listener: (event: ActivityEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(event: ActivityEvent): void {
    if (event.type === "queue") {
      this.#queueDepths.set(event.instance, event.waiting + event.running);
      this.#plot(
        this.#history.queueDepth,
        event.at,
        [...this.#queueDepths.values()].reduce((a, b) => a + b, 0),
      );
    }
    for (const listener of this.#listeners) listener(event);
  }

  /** Pairing requests or approvals changed (a view reloads them; what changed is not said). */
  pairingChanged(): void {
    this.emit({ type: "pairing", at: this.#clock.now() });
  }

  /** An entry was journaled: its chat is (again) the most recent, and a turn starts waiting. */
  accepted(entry: JournalEntry): void {
    const chat = this.#touch(entry);
    if (entry.kind === "turn") {
      const answered = this.#answerOf(chat, entry);
      chat.turns.push({
        entry: entry.id,
        acceptedAt: entry.acceptedAt,
        userName: entry.message.userName,
        text: answered?.text ?? entry.message.text,
        reply: undefined,
        deliveredAt: undefined,
        latencyMs: undefined,
        ...(answered ? { answers: answered.question } : {}),
      });
      if (chat.turns.length > TURNS_PER_CHAT) chat.turns.shift();
    }
    if (this.#listeners.size)
      this.emit({
        type: "accepted",
        at: this.#clock.now(),
        chat: chatRefOf(entry.message),
        instance: entry.route.instanceId,
        entry: entry.id,
        kind: entry.kind,
      });
  }

  /** A turn's reply is known (journaled before it is sent). Messages merged into the turn join its text. */
  replied(lead: JournalEntry, reply: StoredReply, members: readonly JournalEntry[], session?: SessionState): void {
    const turn = this.#turnOf(lead);
    if (turn) {
      turn.reply = reply.text ?? reply.chunks.join("");
      if (!turn.answers) turn.text = members.map((m) => m.message.text).join("\n") || turn.text;
      // The session's open question, written with this reply, is the one it asked (unless an earlier turn shows it already).
      const question = session?.question;
      const chat = this.#chats.get(chatKeyOf(lead.message));
      if (question && !question.closed && !chat?.turns.some((t) => t.question?.id === question.id)) {
        turn.question = { id: question.id, text: question.text, options: [...question.options], allowText: question.allowText };
      }
    }
    const latencyMs = Math.max(0, this.#clock.now() - lead.acceptedAt);
    if (this.#listeners.size)
      this.emit({ type: "replied", at: this.#clock.now(), chat: chatRefOf(lead.message), instance: lead.route.instanceId, entry: lead.id, latencyMs });
  }

  /** Entries were completed (delivered, or given up): a turn's latency counts once, for its leader. */
  completed(entries: readonly JournalEntry[]): void {
    const now = this.#clock.now();
    for (const entry of entries) {
      if (entry.leader !== undefined || entry.kind !== "turn") continue;
      const latencyMs = Math.max(0, now - entry.acceptedAt);
      const turn = this.#turnOf(entry);
      if (turn) {
        turn.deliveredAt = now;
        turn.latencyMs = latencyMs;
      }
      this.#deliveredTimes.push(now);
      this.#latencies.push(latencyMs);
      if (this.#latencies.length > LATENCY_WINDOW) this.#latencies.shift();
      this.#plot(this.#history.turnsPerMinute, now, this.turnsPerMinute());
      this.#plot(this.#history.latencyMs, now, latencyMs);
      if (this.#listeners.size)
        this.emit({ type: "delivered", at: now, chat: chatRefOf(entry.message), instance: entry.route.instanceId, entry: entry.id, latencyMs });
    }
  }

  /** Turns delivered in the last minute. */
  turnsPerMinute(): number {
    const since = this.#clock.now() - MINUTE;
    const times = this.#deliveredTimes;
    let start = this.#deliveredStart;
    while (start < times.length && times[start]! <= since) start++;
    // The dropped head is let go once it is most of the array.
    if (start > 1024 && start * 2 > times.length) {
      this.#deliveredTimes = times.slice(start);
      start = 0;
    }
    this.#deliveredStart = start;
    return this.#deliveredTimes.length - start;
  }

  /** The median of the latest delivery latencies, or undefined before the first. */
  medianLatencyMs(): number | undefined {
    if (!this.#latencies.length) return undefined;
    const sorted = [...this.#latencies].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  }

  /** The last hour of each plotted series, oldest first (copies). */
  history(): ActivityHistory & { now: number } {
    const now = this.#clock.now();
    const since = now - HISTORY_MS;
    const recent = (points: Point[]) => points.filter(([at]) => at > since).map(([at, v]): Point => [at, v]);
    return {
      now,
      turnsPerMinute: recent(this.#history.turnsPerMinute),
      latencyMs: recent(this.#history.latencyMs),
      queueDepth: recent(this.#history.queueDepth),
    };
  }

  #plot(series: Point[], at: number, value: number): void {
    series.push([at, value]);
    const since = at - HISTORY_MS;
    while (series.length > HISTORY_POINTS || (series.length > 0 && series[0]![0] <= since)) series.shift();
  }

  /** Chats, most recently active first. */
  chats(): ChatRecord[] {
    return [...this.#chats.values()].reverse();
  }

  chat(key: ChatKey): ChatRecord | undefined {
    return this.#chats.get(key);
  }

  #touch(entry: JournalEntry): ChatRecord {
    const key = chatKeyOf(entry.message);
    const known = this.#chats.get(key);
    const { instanceId, sessionBase, ruleIndex } = entry.route;
    const chat: ChatRecord = {
      ...chatRefOf(entry.message),
      route: { instanceId, sessionBase, ruleIndex },
      lastAt: entry.acceptedAt,
      turns: known?.turns ?? [],
    };
    this.#chats.set(key, chat);
    return chat;
  }

  /**
   * What `entry` answers, read as the core reads it (a tap names its question;
   * a typed reply answers the chat's open question by number, option or,
   * where allowed, any text), if the console saw the question asked: the
   * question's text and the answer's words.
   */
  #answerOf(chat: ChatRecord, entry: JournalEntry): { question: string; text: string } | undefined {
    const tapped = entry.message.answers?.questionId;
    const question = tapped !== undefined ? chat.turns.find((t) => t.question?.id === tapped)?.question : chat.turns.findLast((t) => t.question)?.question;
    if (!question || (tapped === undefined && question.settled)) return undefined;
    question.settled = true;
    const read = readAnswer(question, entry.message.text);
    if (read.kind === "none") return undefined;
    return { question: question.text, text: read.kind === "option" ? (question.options[read.index] ?? entry.message.text) : read.text };
  }

  #turnOf(entry: JournalEntry): TurnRecord | undefined {
    return this.#chats.get(chatKeyOf(entry.message))?.turns.find((t) => t.entry === entry.id);
  }
}
