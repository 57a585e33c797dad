/**
 * A chat platform in a test: `inject` hands the core a message as a platform
 * would (resolving once the core journaled it), `send` records what the core
 * answers, and `waitForReplies` awaits them. Sends can be made to fail.
 */
import {
  rawLength,
  SendError,
  type AcceptOutcome,
  type AdapterLimits,
  type AdapterStatusEvent,
  type ChatAdapter,
  type ChatTarget,
  type InboundMessage,
  type InboundSink,
  type SendOptions,
} from "../../daemon/vocabulary/adapter.js";

export interface SentMessage {
  target: ChatTarget;
  text: string;
  format: SendOptions["format"];
}

export interface FakeAdapterOptions {
  platform?: string;
  accountId?: string;
  maxMessageLength?: number;
  typingRefreshMs?: number;
  /** Whether the fake platform redelivers what was not acknowledged (default false). */
  redelivers?: boolean;
}

export type InjectInput = Partial<InboundMessage> & { text: string };

export interface FakeChatAdapter extends ChatAdapter {
  readonly sent: SentMessage[];
  readonly typing: ChatTarget[];
  readonly statuses: AdapterStatusEvent[];
  readonly running: boolean;
  /**
   * Delivers a message to the core. Defaults: a direct chat whose id is the
   * user id ("alice"), a fresh message id. Resolves with the message once accepted.
   */
  inject(input: InjectInput): Promise<InboundMessage>;
  /** Messages sent to a chat so far. */
  repliesTo(chatId: string): SentMessage[];
  /** Resolves once at least `count` messages were sent to the chat (rejects after `timeoutMs`). */
  waitForReplies(chatId: string, count: number, timeoutMs?: number): Promise<SentMessage[]>;
  /** What `accept` answered, per injected message, in order. */
  readonly outcomes: AcceptOutcome[];
  /** Makes the next `n` sends reject, as a platform outage would (a plain Error, or the given SendError fields). */
  failNextSends(n: number, error?: { permanent: boolean; retryAfterMs?: number }): void;
  /** Send attempts so far, failed ones included. */
  readonly sendAttempts: number;
  /** After `n` more sends succeed, further sends hang (a process about to die mid-reply). */
  hangAfter(n: number): void;
}

let counter = 0;

export function createFakeAdapter(options: FakeAdapterOptions = {}): FakeChatAdapter {
  const platform = options.platform ?? "fake";
  const accountId = options.accountId ?? "fake";
  const limits: AdapterLimits = {
    maxMessageLength: options.maxMessageLength ?? 4096,
    typingRefreshMs: options.typingRefreshMs ?? 0,
  };
  const sent: SentMessage[] = [];
  const typing: ChatTarget[] = [];
  const statuses: AdapterStatusEvent[] = [];
  const waiters = new Set<() => void>();
  let sink: InboundSink | undefined;
  let failures = 0;
  let failWith: { permanent: boolean; retryAfterMs?: number } | undefined;
  let attempts = 0;
  const outcomes: AcceptOutcome[] = [];
  let untilHang = Number.POSITIVE_INFINITY;

  const wake = () => {
    for (const w of [...waiters]) w();
  };

  const adapter: FakeChatAdapter = {
    platform,
    accountId,
    limits,
    redelivers: options.redelivers ?? false,
    outcomes,
    get sendAttempts() {
      return attempts;
    },
    measure: rawLength,
    sent,
    typing,
    statuses,
    get running() {
      return sink !== undefined;
    },
    async start(s) {
      sink = s;
      s.status({ state: "connected" });
    },
    async stop() {
      if (!sink) return;
      sink.status({ state: "stopped" });
      sink = undefined;
    },
    async send(target, text, opts) {
      if (untilHang <= 0) return new Promise<void>(() => undefined);
      untilHang--;
      attempts++;
      if (failures > 0) {
        failures--;
        if (failWith) throw new SendError("fake platform: send refused", failWith);
        throw new Error("fake platform: send failed");
      }
      if (text.length > limits.maxMessageLength) throw new Error(`fake platform: message of ${text.length} > ${limits.maxMessageLength}`);
      sent.push({ target, text, format: opts.format });
      wake();
    },
    async sendTyping(target) {
      typing.push(target);
    },
    async inject(input) {
      if (!sink) throw new Error("fake adapter not started");
      const userId = input.userId ?? "alice";
      const message: InboundMessage = {
        platform,
        accountId,
        chatId: userId,
        chatType: "direct",
        userId,
        messageId: `m${++counter}`,
        sentAt: Date.now(),
        ...input,
      };
      outcomes.push(await sink.accept(message));
      return message;
    },
    repliesTo: (chatId) => sent.filter((m) => m.target.chatId === chatId),
    waitForReplies(chatId, count, timeoutMs = 15_000) {
      return new Promise<SentMessage[]>((resolve, reject) => {
        const check = () => {
          const got = adapter.repliesTo(chatId);
          if (got.length < count) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(got);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `chat ${chatId}: ${adapter.repliesTo(chatId).length} of ${count} replies after ${timeoutMs} ms: ${JSON.stringify(adapter.repliesTo(chatId).map((m) => m.text.slice(0, 80)))}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    failNextSends(n, error) {
      failures = n;
      failWith = error;
    },
    hangAfter(n) {
      untilHang = n;
    },
  };
  return adapter;
}
