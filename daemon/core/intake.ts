/**
 * Intake: from a platform's message to a journaled entry, or a deliberate,
 * stated refusal. The core alone applies the rules here (access, the group
 * mention rule, attachment sizes, routing, dedupe, queue bounds) from the
 * platform-neutral facts the adapter supplies, and says in its answer what
 * the adapter may acknowledge to its platform.
 */
import { hashLinkCode, type IdentityLinks } from "./identity-links.js";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import type { ChannelConfig, DaemonConfig } from "../config/schema.js";
import { DuplicateEntryError } from "../vocabulary/state-errors.js";
import type { JournalEntry, StoredRoute } from "../vocabulary/records.js";
import type { Store } from "../vocabulary/store.js";
import { checkAccess, groupRequiresMention, senderIds } from "./access.js";
import type {
  AcceptOutcome,
  AdmissionAnswer,
  AdmissionQuestion,
  ChatAdapter,
  DroppedAttachment,
  InboundMessage,
  RefusalReason,
} from "../vocabulary/adapter.js";
import { parseCommand } from "./commands.js";
import { targetOf } from "./delivery.js";
import { BoundedMap } from "../../shared/util/bounded-map.js";
import { noticeText, type Notices } from "./notices.js";
import { chatKeyOf, dedupeKeyOf, type DedupeKey } from "../vocabulary/keys.js";
import type { InboundOutcome, RelayMetrics } from "./relay-types.js";
import { hashCode, type Pairing } from "./pairing.js";
import { resolveRoute } from "./routing.js";
import { carriedOverRoute } from "./former-sessions.js";
import { formerConversationOf, listedSettingsId } from "../vocabulary/conversation.js";
import type { Scheduler } from "./scheduler.js";

export interface IntakeDeps {
  config: DaemonConfig;
  clock: Clock;
  store: Store;
  scheduler: Scheduler<string>;
  logger: Logger;
  metrics: RelayMetrics;
  notices: Notices;
  channelFor(accountId: string): ChannelConfig | undefined;
  /** A best-effort word to the person (attachments refused). */
  notify(adapter: ChatAdapter, message: InboundMessage, text: string): void;
  /** A journaled command: run it beside the session queue. */
  onCommand(entry: JournalEntry): void;
  /** A journaled turn's message is in its session's queue; `sessionWasBusy`: a turn of that session was running as it came. */
  onQueued?(entry: JournalEntry, sessionWasBusy: boolean): void;
  /** Approved pairings and strangers' requests (pairing.ts). */
  pairing: Pairing;
  /** People linked across apps (identity-links.ts). */
  links: IdentityLinks;
  /** A tap on a question's button: why it is refused (questions/questions.ts), or undefined to journal it. */
  screenAnswer?(message: InboundMessage, route: StoredRoute): RefusalReason | undefined;
}

/** A message that passed the rules, as it will be journaled. */
interface Accepted {
  key: DedupeKey;
  message: InboundMessage;
  route: StoredRoute;
}

export interface Intake {
  accept(adapter: ChatAdapter, message: InboundMessage): Promise<AcceptOutcome>;
  admit(adapter: ChatAdapter, question: AdmissionQuestion): AdmissionAnswer;
  /** From now on redelivering platforms are deferred; the others are still journaled until the store closes. */
  beginStop(): void;
}

/** How a journaled `/approve` names its code: by hash (pairing.ts#hashCode), never in clear. */
export const HASHED = "sha256:";

export function createIntake(deps: IntakeDeps): Intake {
  const { config, store, scheduler, metrics } = deps;
  const log = deps.logger;
  /** Aborted by `beginStop`: from then on redelivering platforms are deferred. */
  const stopping = new AbortController();
  const warnedNoChannel = new BoundedMap<string, true>(1000);
  const loggedRefusals = new BoundedMap<string, number>(10_000);

  const refused = (platform: string, reason: RefusalReason, counted: InboundOutcome): AcceptOutcome => {
    metrics.inbound(platform, counted);
    return { status: "refused", reason, acknowledge: true };
  };

  /** The rules that do not depend on the message's content: who, where, whether addressed, which route. */
  function screen(
    message: Omit<InboundMessage, "attachments">,
  ): { ok: true; channel: ChannelConfig } | { ok: false; reason: RefusalReason; detail?: string; channel?: ChannelConfig } {
    const channel = deps.channelFor(message.accountId);
    if (!channel) return { ok: false, reason: "no_channel" };
    // Unaddressed group chatter first: it is ignored quietly, whoever wrote it.
    if (message.chatType === "group" && message.mentioned === false) {
      const settingsKey = listedSettingsId(message, channel.access.groups) ?? message.chatId;
      if (groupRequiresMention(channel, settingsKey)) return { ok: false, reason: "not_mentioned" };
    }
    const decision = checkAccess(channel.access, message);
    if (decision.allowed) return { ok: true, channel };
    if (!decision.pairable) return { ok: false, reason: "access", detail: decision.reason };
    if (deps.pairing.isApproved(channel.id, senderIds(message))) return { ok: true, channel };
    return { ok: false, reason: "pairing", channel };
  }

  function logRefusal(message: Omit<InboundMessage, "attachments">, reason: RefusalReason, detail?: string): void {
    const ids = { platform: message.platform, accountId: message.accountId, chatId: message.chatId, messageId: message.messageId };
    if (reason === "no_channel") {
      if (!warnedNoChannel.has(message.accountId)) {
        warnedNoChannel.set(message.accountId, true);
        log.warn({ accountId: message.accountId }, "no channel config for this account: its messages are refused (no access rules)");
      }
    } else if (reason === "access") {
      // At info, naming the sender: this is how an operator finds the id to allow (README, Telegram step 3).
      // Once an hour per sender at info; repeats at debug, so a persistent stranger cannot flood the log.
      const who = `${message.platform} ${message.accountId} ${message.userId}`;
      const last = loggedRefusals.get(who);
      const now = deps.clock.now();
      const level = last === undefined || now - last > 60 * 60 * 1000 ? "info" : "debug";
      if (level === "info") loggedRefusals.set(who, now);
      log[level](
        {
          ...ids,
          chatType: message.chatType,
          userId: message.userId,
          ...(message.userAliases?.length ? { userAliases: message.userAliases } : {}),
          userName: message.userName,
          reason: detail,
        },
        `message from ${message.userId} refused by the access rules (${detail ?? "not allowed"}): add this id to the channel's access list to let them in`,
      );
    } else if (reason === "not_mentioned") {
      log.debug(ids, "group message does not address the bot: ignored");
    }
  }

  async function accept(adapter: ChatAdapter, tapOrMessage: InboundMessage): Promise<AcceptOutcome> {
    // A tap is keyed by its question: a double tap or a platform's retry is one answer.
    const message = tapOrMessage.answers ? { ...tapOrMessage, messageId: `answer:${tapOrMessage.answers.questionId}` } : tapOrMessage;
    if (stopping.signal.aborted && adapter.redelivers) {
      metrics.inbound(message.platform, "deferred");
      return { status: "deferred", reason: "stopping", acknowledge: false };
    }
    const ids = { platform: message.platform, accountId: message.accountId, chatId: message.chatId, messageId: message.messageId };
    const screened = screen(message);
    if (!screened.ok && screened.reason === "pairing" && screened.channel) {
      // Nothing of what a stranger writes is kept: only their request, answered with a code.
      await askToPair(adapter, message, screened.channel);
      return refused(message.platform, "pairing", "denied");
    }
    if (!screened.ok) {
      logRefusal(message, screened.reason, screened.detail);
      return refused(message.platform, screened.reason, screened.reason === "not_mentioned" ? "not_mentioned" : "denied");
    }
    const route = resolveRoute(config, message);
    if (!route) {
      log.info({ ...ids }, "no route matches this message: dropped");
      return refused(message.platform, "no_route", "unrouted");
    }
    const key = dedupeKeyOf(message);
    const former = formerConversationOf(message);
    // A redelivery across the upgrade to the one thread rule was journaled under the former chat.
    if (store.has(key) || (former && store.has(dedupeKeyOf(former)))) return duplicate(message);
    const { kept, dropped } = keepAttachments(message);
    // Files not passed on are told once the message is journaled (or refused), so a redelivery does not say it twice.
    const tellDropped = () => {
      if (dropped.length) deps.notify(adapter, message, noticeText.attachmentsDropped(dropped, config.attachments.maxBytes));
    };
    if (!kept.text.trim() && !kept.attachments?.length) {
      tellDropped();
      return refused(message.platform, "empty", "empty");
    }
    const command = kept.attachments?.length ? undefined : parseCommand(kept.text);
    // A pairing code is a secret: the journal keeps only its hash.
    // A pairing or link code is a secret: the journal keeps only its hash.
    const text =
      command?.name === "approve" && command.args
        ? `/approve ${HASHED}${hashCode(screened.channel.id, command.args)}`
        : command?.name === "link" && command.args
          ? `/link ${HASHED}${hashLinkCode(command.args)}`
          : kept.text;
    // A linked person's direct messages share one conversation across their apps (identity-links.ts).
    const linked = await deps.links.sessionBaseFor(message);
    const sessionRoute = linked ? { ...route, sessionBase: linked } : await carriedOverRoute({ store, log }, message, route);
    const accepted = { key, message: { ...kept, text }, route: sessionRoute };
    const tapRefused = message.answers && deps.screenAnswer?.(message, accepted.route);
    if (tapRefused) return refused(message.platform, tapRefused, "denied");
    if (command) return journalCommand(accepted, tellDropped);
    return queueTurn(adapter, accepted, tellDropped);
  }

  /** A stranger in a direct chat on a pairing channel: a code (or why none), said in their chat. */
  async function askToPair(adapter: ChatAdapter, message: InboundMessage, channel: ChannelConfig): Promise<void> {
    const answer = await deps.pairing.request(channel.id, message);
    if (answer.kind === "quiet") return;
    const text =
      answer.kind === "code" ? noticeText.pairingCode(channel.id, answer.code) : answer.kind === "waiting" ? noticeText.pairingWaiting : noticeText.pairingFull;
    deps.notify(adapter, message, text);
  }

  /** The message as it will be journaled (only the attachments within the rules), and the files not passed on. */
  function keepAttachments(message: InboundMessage): { kept: InboundMessage; dropped: DroppedAttachment[] } {
    // Files not passed on: the adapter's (admission, downloads) and the core's own check of what arrived.
    const dropped: DroppedAttachment[] = [...(message.droppedAttachments ?? [])];
    const { droppedAttachments: _told, attachments, ...rest } = message;
    if (!attachments?.length) return { kept: rest, dropped };
    const { enabled, maxBytes } = config.attachments;
    const kept = attachments.filter((a) => enabled && a.data.length <= maxBytes);
    for (const a of attachments) if (!kept.includes(a)) dropped.push({ fileName: a.fileName, reason: enabled ? "too_large" : "disabled" });
    return { kept: kept.length ? { ...rest, attachments: kept } : rest, dropped };
  }

  /** A command: journaled, then run beside the session queue (commands.ts). */
  /** Accepted before (a redelivery, or another node took it): acknowledged, nothing more. */
  function duplicate(message: InboundMessage): AcceptOutcome {
    log.debug({ platform: message.platform, accountId: message.accountId, chatId: message.chatId, messageId: message.messageId }, "duplicate message ignored");
    metrics.inbound(message.platform, "duplicate");
    return { status: "duplicate", acknowledge: true };
  }

  async function journalCommand(accepted: Accepted, tellDropped: () => void): Promise<AcceptOutcome> {
    let entry: JournalEntry;
    try {
      entry = await store.add({ kind: "command", ...accepted });
    } catch (error) {
      if (error instanceof DuplicateEntryError) return duplicate(accepted.message);
      throw error;
    }
    tellDropped();
    metrics.inbound(accepted.message.platform, "command");
    deps.onCommand(entry);
    return { status: "accepted", acknowledge: true };
  }

  /** A turn's message: a waiting slot in its session's queue, then the journal; beyond the queue's bounds it is left with the platform or refused with a notice. */
  async function queueTurn(adapter: ChatAdapter, accepted: Accepted, tellDropped: () => void): Promise<AcceptOutcome> {
    const { message: msg, route } = accepted;
    const ids = { platform: msg.platform, accountId: msg.accountId, chatId: msg.chatId, messageId: msg.messageId };
    const slot = scheduler.reserve(route.instanceId, route.sessionBase);
    if (!slot.ok) {
      if (adapter.redelivers) {
        // Left unacknowledged: the platform delivers it again, by when the queue has room.
        log.info({ ...ids, reason: slot.reason }, "queue full: message left with the platform for now");
        metrics.inbound(msg.platform, "deferred");
        return { status: "deferred", reason: "busy", acknowledge: false };
      }
      log.warn({ ...ids, reason: slot.reason }, "queue full: message not taken (the person is told)");
      metrics.inbound(msg.platform, "busy");
      await deps.notices.busy(chatKeyOf(msg), targetOf(msg));
      tellDropped();
      return { status: "refused", reason: "busy", acknowledge: true };
    }
    let entry: JournalEntry;
    try {
      entry = await store.add({ kind: "turn", ...accepted });
    } catch (error) {
      slot.cancel();
      if (error instanceof DuplicateEntryError) return duplicate(msg);
      throw error;
    }
    tellDropped();
    metrics.inbound(msg.platform, "accepted");
    const busy = scheduler.depth(route.instanceId, route.sessionBase).sessionBusy;
    slot.submit(entry.id);
    deps.onQueued?.(entry, busy);
    return { status: "accepted", acknowledge: true };
  }

  function admit(_adapter: ChatAdapter, question: AdmissionQuestion): AdmissionAnswer {
    const screened = screen(question.message);
    if (!screened.ok || !resolveRoute(config, question.message))
      return { allowed: false, attachments: question.attachmentSizes.map(() => ({ fetch: false, reason: "disabled" })) };
    const { enabled, maxBytes } = config.attachments;
    return {
      allowed: true,
      attachments: question.attachmentSizes.map((size) =>
        !enabled
          ? { fetch: false, reason: "disabled" }
          : size !== undefined && size > maxBytes
            ? { fetch: false, reason: "too_large" }
            : { fetch: true, maxBytes },
      ),
    };
  }

  return {
    accept,
    admit,
    beginStop() {
      stopping.abort();
    },
  };
}
