/**
 * Delivery: a recorded reply's chunks go out one at a time, each recorded as
 * sent before the next, and the entries are forgotten only once the last one
 * is out. A failed send is retried by the one retry policy (`retry.ts`):
 * a platform's retry-after is honoured, a permanent refusal (blocked bot,
 * deleted chat) is never retried. The window: a kill -9 between the platform
 * taking a chunk and the journal recording it resends that one chunk.
 *
 * Files the agent named (`StoredReply.files`) go out after the chunks, each
 * counted by `sent` the same way: downloaded and sent (file-delivery.ts), or
 * the line saying why not.
 *
 * Several machines: an account's sends go out only under its lease. Its halt
 * fires with the lease's signal (not after the hand-over steps queued before
 * it), and each attempt first asks the lease whether it is still valid (a
 * deadline passed while the event loop was held, its timer not yet run). A
 * refused send is a halt: the reply stays pending for the next owner.
 */
import { scheduleIdOf } from "./schedules/message.js";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import type { ServiceClient } from "../../shared/client/index.js";
import type { Random } from "../../shared/random.js";
import type { DaemonConfig } from "../config/schema.js";
import type { JournalEntry, StoredMessage, StoredReply } from "../vocabulary/records.js";
import type { Store } from "../vocabulary/store.js";
import { replyPlaceOf } from "../vocabulary/conversation.js";
import { SendError, type ChatAdapter, type ChatTarget, type InboundMessage, type TextFormat } from "../vocabulary/adapter.js";
import { splitReply } from "./chunking.js";
import { prepareFile } from "./file-delivery.js";
import { errorSummary, StoppingError, type RelayMetrics, type TurnOutcome } from "./relay-types.js";
import { abortReason, AbortedError } from "../../shared/clock.js";
import { retry, type RetryVerdict } from "../helpers/retry.js";
import { adapterKeyOf, type AdapterKey } from "../vocabulary/keys.js";

export interface DeliveryDeps {
  config: DaemonConfig;
  store: Store;
  clock: Clock;
  random: Random;
  logger: Logger;
  metrics: RelayMetrics;
  /** Downloads the files a reply names. */
  client: ServiceClient;
  adapterFor(platform: string, accountId: string): ChatAdapter | undefined;
}

/** What an account's sends answer to on several machines: its lease (one machine has none: always valid). */
export interface AccountLease {
  /** Aborts when the lease ends (lost, expired, released). */
  readonly signal: AbortSignal;
  /** Still held and before its deadline. */
  valid(): boolean;
}

/** An account's halt and whether its lease still lets it reach the platform (ask right before each call). */
export interface AccountGuard {
  readonly signal: AbortSignal;
  mayReach(): boolean;
}

export function targetOf(m: StoredMessage | InboundMessage, replyTo?: string): ChatTarget {
  const named = replyTo ?? m.messageId;
  // A scheduled prompt's id is no platform message: its answer quotes nothing.
  const replyToMessageId = scheduleIdOf({ messageId: named }) === undefined ? named : undefined;
  return { ...replyPlaceOf(m), ...(replyToMessageId ? { replyToMessageId } : {}) };
}

/** The chunks of `text` for this adapter: each measures within its limit as the platform counts it. */
export function chunksFor(adapter: ChatAdapter, text: string, format: TextFormat): string[] {
  return splitReply(text, adapter.limits.maxMessageLength, (chunk) => adapter.measure(chunk, format));
}

/** How the core treats a failed send: the adapter's typed verdict, anything else transient. */
export function classifySendError(error: unknown): RetryVerdict {
  if (error instanceof SendError)
    return error.permanent ? { retry: false } : { retry: true, ...(error.retryAfterMs !== undefined ? { afterMs: error.retryAfterMs } : {}) };
  return { retry: true };
}

export interface Delivery {
  /** Sends the recorded reply's remaining chunks, then forgets its entries. */
  deliver(leaderId: string, outcome?: TurnOutcome): Promise<void>;
  /** Ends entries with the bridge's own words (recorded like any reply), or silently when `text` is undefined. */
  finishWith(entries: JournalEntry[], text: string | undefined, outcome: TurnOutcome): Promise<void>;
  /** A best-effort word that is not part of any turn (busy, attachments off). */
  notify(target: ChatTarget, text: string): Promise<void>;
  /** After the grace period: no further chunk is sent; resolves once sends in progress are recorded. */
  halt(): Promise<void>;
  /** The same for one account (its lease is handed over): no further chunk of its replies; resolves once its sends in progress are recorded. */
  haltAccount(platform: string, accountId: string): Promise<void>;
  /** What the account's platform traffic answers to: the halts (the daemon's, the account's, its lease's end) and its lease's validity. */
  accountGuard(target: { platform: string; accountId: string }): AccountGuard;
  /** The account is this node's again: its replies may be sent (several machines: while `lease` is valid). */
  resumeAccount(platform: string, accountId: string, lease?: AccountLease): void;
}

export function createDelivery(deps: DeliveryDeps): Delivery {
  const { store, clock, random, metrics } = deps;
  const log = deps.logger;
  const policy = deps.config.retry;
  const halted = new AbortController();
  const sendsInProgress = new Set<Promise<unknown>>();
  /**
   * Per account: its own halt (a fresh controller when it comes back), that joined with the
   * daemon's and its lease's, made once per controller (`AbortSignal.any` costs a signal and weak
   * references per call, and a reply asked for it twice per chunk), and whether its lease lets it send.
   */
  type AccountHalt = { controller: AbortController; signal: AbortSignal; mayReach(): boolean };
  const accountHalts = new Map<AdapterKey, AccountHalt>();
  const accountOf = (t: { platform: string; accountId: string }) => adapterKeyOf(t.platform, t.accountId);
  function haltOf(lease: AccountLease | undefined): AccountHalt {
    const controller = new AbortController();
    const signals = lease ? [halted.signal, controller.signal, lease.signal] : [halted.signal, controller.signal];
    return { controller, signal: AbortSignal.any(signals), mayReach: lease ? () => lease.valid() : () => true };
  }
  function accountHalt(target: { platform: string; accountId: string }): AccountHalt {
    const key = accountOf(target);
    let account = accountHalts.get(key);
    if (!account) {
      account = haltOf(undefined);
      accountHalts.set(key, account);
    }
    return account;
  }
  /** Aborted when the daemon halts, or the target's account is handed over or its lease ends. */
  const haltSignal = (target: { platform: string; accountId: string }): AbortSignal => accountHalt(target).signal;
  const sendsOf = new Map<AdapterKey, Set<Promise<unknown>>>();

  type SendResult = "sent" | "failed" | "halted";

  const sendChunk = (instanceId: string, adapter: ChatAdapter, target: ChatTarget, text: string, format: StoredReply["format"]): Promise<SendResult> =>
    sendWithRetry(instanceId, target, () => adapter.send(target, text, { format }));

  /** One file of a reply: downloaded and sent as its kind, or the line saying why not. */
  async function sendFile(instanceId: string, adapter: ChatAdapter, target: ChatTarget, path: string): Promise<SendResult> {
    let prepared: Awaited<ReturnType<typeof prepareFile>>;
    try {
      prepared = await prepareFile({ client: deps.client, signal: haltSignal(target) }, instanceId, path, adapter);
    } catch {
      return "halted"; // only the halt ends a download with an error
    }
    if (!prepared.ok) {
      log.info({ platform: target.platform, chatId: target.chatId, reason: prepared.reason }, "a file of the reply was not sent: the person is told");
      return sendChunk(instanceId, adapter, target, prepared.notice, "plain");
    }
    const { file, files } = prepared;
    return sendWithRetry(instanceId, target, () => files.send(target, file));
  }

  /**
   * One send (a chunk, a file) through the one retry policy. Each attempt first asks the account's
   * lease: past it, the account halts instead (the lease's own timer may not have run yet).
   */
  async function sendWithRetry(instanceId: string, target: ChatTarget, send: () => Promise<unknown>): Promise<SendResult> {
    const account = accountHalt(target);
    const { signal } = account;
    const underLease = () => {
      if (account.mayReach()) return send();
      account.controller.abort();
      return Promise.reject(abortReason(signal));
    };
    try {
      await retry(underLease, {
        clock,
        random,
        maxAttempts: policy.maxAttempts,
        backoff: { baseMs: policy.baseDelayMs, maxMs: policy.maxDelayMs },
        // A halt (this attempt refused by the lease, say) is not retried, nor logged as a failed send.
        classify: (error) => (signal.aborted ? { retry: false } : classifySendError(error)),
        signal,
        onRetry(error, attempt, delayMs) {
          metrics.error("-", "send");
          metrics.retry(instanceId, "send");
          log.warn({ platform: target.platform, attempt, delayMs, err: errorSummary(error) }, "sending failed: retrying");
        },
      });
      return "sent";
    } catch (error) {
      if (signal.aborted || error instanceof AbortedError) return "halted";
      metrics.error("-", "send");
      const permanent = error instanceof SendError && error.permanent;
      log.error(
        { platform: target.platform, accountId: target.accountId, chatId: target.chatId, err: errorSummary(error) },
        permanent ? "the platform refused the reply for good: not retried" : "could not deliver a reply: giving up",
      );
      return "failed";
    }
  }

  async function deliver(leaderId: string, outcome: TurnOutcome = "answered"): Promise<void> {
    const lead = store.get(leaderId);
    if (!lead?.reply) return;
    const { chunks, members, format } = lead.reply;
    const files = lead.reply.files ?? [];
    const instanceId = lead.route.instanceId;
    const last = store.get(members[members.length - 1] ?? leaderId) ?? lead;
    const adapter = deps.adapterFor(lead.message.platform, lead.message.accountId);
    if (!adapter) {
      log.warn({ platform: lead.message.platform, accountId: lead.message.accountId }, "no adapter for this account any more: reply dropped");
      metrics.turn(instanceId, "undeliverable", 0);
      await store.complete(members);
      return;
    }
    const target = targetOf(lead.message, last.message.messageId);
    const account = accountOf(target);
    const total = chunks.length + files.length;
    let finished = false;
    // Counted before the journal drains, so whoever waits for idle sees the turn in the metrics.
    const finish = async () => {
      finished = true;
      metrics.turn(instanceId, outcome, Math.max(0, clock.now() - lead.acceptedAt) / 1000);
      await store.complete(members);
    };
    for (let i = lead.sent; i < total; i++) {
      if (haltSignal(target).aborted) throw new StoppingError();
      const send =
        i < chunks.length ? sendChunk(instanceId, adapter, target, chunks[i] ?? "", format) : sendFile(instanceId, adapter, target, files[i - chunks.length]!);
      // The last piece is recorded by the completion itself, in the same step (one write fewer
      // per reply; the window is the same: a kill between the send and its record).
      const sending = send.then(async (sent) => {
        if (sent === "sent") await (i === total - 1 ? finish() : store.recordSent(leaderId, i + 1));
        return sent;
      });
      const ofAccount = sendsOf.get(account) ?? new Set<Promise<unknown>>();
      sendsOf.set(account, ofAccount);
      sendsInProgress.add(sending);
      ofAccount.add(sending);
      let sent: SendResult;
      try {
        sent = await sending;
      } finally {
        sendsInProgress.delete(sending);
        ofAccount.delete(sending);
      }
      if (sent === "halted") throw new StoppingError(); // stays journaled: the next start sends the rest
      if (sent === "failed") {
        outcome = "undeliverable";
        break; // the platform keeps refusing: give up on the rest rather than block the chat
      }
    }
    if (!finished) await finish();
  }

  async function finishWith(entries: JournalEntry[], text: string | undefined, outcome: TurnOutcome): Promise<void> {
    const lead = entries[0];
    if (!lead) return;
    const ids = entries.map((e) => e.id);
    const adapter = deps.adapterFor(lead.message.platform, lead.message.accountId);
    if (text === undefined || !adapter) {
      metrics.turn(lead.route.instanceId, outcome, Math.max(0, clock.now() - lead.acceptedAt) / 1000);
      await store.complete(ids);
      return;
    }
    await store.recordReply(lead.id, { chunks: chunksFor(adapter, text, "plain"), members: ids, format: "plain" });
    await deliver(lead.id, outcome);
  }

  async function notify(target: ChatTarget, text: string): Promise<void> {
    const adapter = deps.adapterFor(target.platform, target.accountId);
    if (!adapter) return;
    for (const chunk of chunksFor(adapter, text, "plain")) {
      const sent = await sendChunk("-", adapter, target, chunk, "plain");
      if (sent !== "sent") {
        log.warn({ platform: target.platform, accountId: target.accountId }, "could not send a notice");
        return;
      }
    }
  }

  return {
    deliver,
    finishWith,
    notify,
    async halt() {
      halted.abort();
      while (sendsInProgress.size) await Promise.allSettled([...sendsInProgress]);
    },
    async haltAccount(platform, accountId) {
      const key = adapterKeyOf(platform, accountId);
      haltSignal({ platform, accountId }); // makes sure the account has a controller to abort
      accountHalts.get(key)?.controller.abort();
      const sends = sendsOf.get(key);
      while (sends?.size) await Promise.allSettled([...sends]);
    },
    accountGuard(target) {
      const { signal, mayReach } = accountHalt(target);
      return { signal, mayReach };
    },
    resumeAccount(platform, accountId, lease) {
      const key = adapterKeyOf(platform, accountId);
      if (lease) accountHalts.set(key, haltOf(lease));
      else if (accountHalts.get(key)?.controller.signal.aborted) accountHalts.delete(key);
    },
  };
}
