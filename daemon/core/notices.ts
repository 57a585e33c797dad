/**
 * Everything the bridge says to a person in its own words, in one place: the
 * texts, and the rule that keeps them from flooding a chat without ever
 * dropping a message silently. Per chat and kind, the first notice goes out
 * at once; what happens again within `cooldownMs` is counted, and one notice
 * at the end of the cooldown covers all of it, saying how many.
 *
 * Two kinds of coverage:
 * - turns that could not be answered stay journaled until the notice that
 *   covers them is recorded as their reply (a crash before that resumes them:
 *   they are tried again, not forgotten);
 * - messages refused before journaling (queue full on a platform that cannot
 *   redeliver) are counted in a durable key-value record, so a restart still
 *   owes the person the summary.
 */
import { z } from "zod";
import type { Clock, Timer } from "../../shared/clock.js";
import { BoundedMap } from "../../shared/util/bounded-map.js";
import { formatBytes } from "../../shared/util/format-bytes.js";
import type { AdapterStateStore, ChatTarget } from "../vocabulary/adapter.js";
import { parseChatKey, type ChatKey } from "../vocabulary/keys.js";

/** "90 seconds", "10 minutes", "1 minute 30 seconds". */
const formatSeconds = (s: number): string => {
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  if (s < 60) return unit(s, "second");
  const m = Math.floor(s / 60);
  return s % 60 ? `${unit(m, "minute")} ${unit(s % 60, "second")}` : unit(m, "minute");
};

export const noticeText = {
  /** Files not passed on, each with why; `limit` is attachments.maxBytes. */
  attachmentsDropped: (files: { fileName: string; reason: "too_large" | "disabled" | "unavailable" }[], limit: number) =>
    `${files
      .map((f) =>
        f.reason === "too_large"
          ? `"${f.fileName}" is larger than the ${formatBytes(limit)} limit`
          : f.reason === "disabled"
            ? `attachments are off here ("${f.fileName}")`
            : `"${f.fileName}" could not be downloaded`,
      )
      .join("; ")}, so ${files.length === 1 ? "it was" : "they were"} not passed on.`,
  busyOne: "The agent is busy with earlier messages, so this one was not taken. Please send it again in a little while.",
  busyMore: (n: number) =>
    `While the agent was busy, ${n === 1 ? "1 more message" : `${n} more messages`} from you ${n === 1 ? "was" : "were"} not taken. Please send ${n === 1 ? "it" : "them"} again.`,
  failed: (what: string, n: number) =>
    n === 1
      ? `Sorry, your message could not be answered: ${what}. Please try again later.`
      : `Sorry, ${n} of your messages could not be answered: ${what}. Please try again later.`,
  routeStopped: (n: number) =>
    `The agent service refused this bridge's access key, so ${n === 1 ? "this message" : `${n} of your messages`} could not be answered. Messages here cannot be answered until the operator fixes the configuration; the operator has been told.`,
  instanceMissing: (n: number) =>
    `This chat is routed to an agent instance that does not exist, so ${n === 1 ? "your message" : `${n} of your messages`} could not be answered. The bridge's configuration needs fixing; the operator has been told.`,
  internal: "something went wrong in the bridge",
  expired: (n: number, when: string) =>
    `${n === 1 ? "Your message" : `Your ${n} messages`} from ${when} UTC came in while the agent was unavailable and ${n === 1 ? "is" : "are"} now too old to answer. Please send ${n === 1 ? "it" : "them"} again if still needed.`,
  contextReset: "(The earlier conversation could not be found on the service, so this starts a new one: the agent no longer sees what was said before.)",
  emptyAnswer: "(The agent answered without any text.)",
  /** DM pairing (pairing.ts): what a stranger is told, and what the approved person then hears. */
  pairingCode: (channel: string, code: string) =>
    `This agent only talks to people its owner let in. Your pairing code is ${code} (valid for one hour). Ask the owner to approve it: agent-bridge pairing approve ${channel} ${code} (or /approve ${code} in their chat with this bot). What you write before that is not passed on.`,
  pairingWaiting: "Your pairing request is still waiting for the owner's approval. What you write before that is not passed on.",
  pairingFull: "Too many people are waiting for the owner's approval right now. Please try again later.",
  pairingApproved: "The owner approved you: you can talk to the agent now.",
  /** Identity links (identity-links.ts): what /link and /unlink answer. */
  linkCode: (code: string) =>
    `Your link code is ${code} (valid for 10 minutes, once). In a direct chat with this agent on your other app, send: /link ${code}. Your direct chats there and here will then share one conversation.`,
  linked: (other: string) =>
    `Linked with your account on ${other}: from now on your direct chats there and here share one conversation (a new one: what each chat said before stays with it). Group chats stay separate. /unlink undoes it.`,
  linkRefused: (reason: "no_match" | "same" | "linked_elsewhere") =>
    reason === "same"
      ? "That code was made on this app: send it from your other app."
      : reason === "linked_elsewhere"
        ? "One of these accounts is linked by the bridge's owner (in its configuration): only the owner can change that link."
        : "That code matches nothing: it is wrong, was used already, or expired (codes last 10 minutes). Send /link on your other app for a new one.",
  linkDirectOnly: "Linking works in a direct chat with the agent only: group chats are never shared across apps.",
  notLinked: "This chat is not linked with another app.",
  unlinkConfigured: "This account is linked by the bridge's owner (in its configuration): only the owner can undo that.",
  unlinked: (others: readonly string[]) =>
    `Unlinked${others.length ? ` from ${others.join(", ")}` : ""}: each app goes back to its own conversation from before the link. The shared conversation is left as it was (nobody continues it); /new starts a fresh one here.`,
  /** Voice notes that went to the agent as audio only: one line for all of a turn's. */
  notTranscribed: (files: readonly { fileName: string; why: string }[]) =>
    `(${files.map((f) => `Your voice note "${f.fileName}" could not be transcribed (${f.why})`).join("; ")}, so the agent got the audio only.)`,
  notTranscribedWhy: (
    reason: "too_large" | "too_long" | "failed" | "timeout" | "empty",
    limits: { maxBytes: number; maxSeconds: number; timeoutMs: number },
  ): string =>
    reason === "too_large"
      ? `it is larger than the limit of ${formatBytes(limits.maxBytes)}`
      : reason === "too_long"
        ? `it is longer than the limit of ${formatSeconds(limits.maxSeconds)}`
        : reason === "timeout"
          ? `it took longer than ${formatSeconds(Math.ceil(limits.timeoutMs / 1000))}`
          : reason === "empty"
            ? "no speech was recognised"
            : "the transcription service failed",
  uploadRefused: "(Attachments are off for this agent: the bridge's key may not write files, so only your text was passed on.)",
  uploadFailed: (fileName: string) => `(The file ${fileName} could not be passed on.)`,
  /** Files the agent named in its reply that could not be sent to the chat. */
  fileTooBig: (path: string, size: string, limit: string) =>
    `(The file ${path} is ${size}, over this chat's limit of ${limit}: it stays in the agent's workspace.)`,
  fileRefused: (path: string) =>
    `(The agent made ${path}, but the bridge's key may not read files (it needs the \`files\` permission), so it cannot be sent here.)`,
  fileMissing: (path: string) => `(The agent named ${path}, but there is no such file in its workspace.)`,
  fileUnavailable: (path: string) => `(The file ${path} could not be fetched from the agent's workspace.)`,
  fileNotSupported: (path: string) => `(The agent made ${path}; this chat cannot receive files, so it stays in the agent's workspace.)`,
  /** The text of a reply that is only files. */
  filesOnly: (names: readonly string[]) => names.map((n) => `📎 ${n}`).join("\n"),
  commandFailed: "Sorry, that command failed. Please try again.",
  /** Ends a reply shown as it was written when the person stopped it. */
  stoppedMarker: "(stopped)",
  /** Ends a reply shown as it was written when the turn failed (the failure notice follows). */
  interruptedMarker: "(interrupted)",
  /** The answer to /stop. */
  stopped: (stopped: boolean, dropped: number) =>
    `${stopped ? "Stopped the answer in progress." : "No answer was in progress."} ${
      dropped === 0 ? "No queued messages were dropped." : dropped === 1 ? "Dropped 1 queued message." : `Dropped ${dropped} queued messages.`
    }`,
} as const;

/** Why a turn ended without an answer, as the person hears it. */
export type FailureKind = { kind: "failed"; what: string } | { kind: "route_stopped" } | { kind: "instance_missing" };

export function failureText(failure: FailureKind, n: number): string {
  switch (failure.kind) {
    case "failed":
      return noticeText.failed(failure.what, n);
    case "route_stopped":
      return noticeText.routeStopped(n);
    case "instance_missing":
      return noticeText.instanceMissing(n);
  }
}

export interface NoticeDeps {
  clock: Clock;
  cooldownMs: number;
  /** Durable counts of refused-before-journaling messages still owed a notice. */
  owed: AdapterStateStore & { keys(): string[] };
  /** Sends a plain notice (best effort: failures are logged by it, never thrown). */
  send(target: ChatTarget, text: string): Promise<void>;
  /** Finishes journaled entries with one notice as their reply (`failure` says why, for metrics). */
  finish(entryIds: string[], text: string, failure: FailureKind): Promise<void>;
  /** Chats tracked at most (oldest forgotten first). Default 10,000. */
  maxChats?: number;
}

/** What a chat is owed, as kept in the `owed` store (read back after a restart: parsed, never cast). */
const OwedBusySchema = z.object({
  target: z.object({
    platform: z.string(),
    accountId: z.string(),
    chatId: z.string(),
    chatType: z.enum(["direct", "group"]),
    threadId: z.string().exactOptional(),
    // Exact: a target is built without the key when nothing is answered (delivery.ts), as ChatTarget says.
    replyToMessageId: z.string().exactOptional(),
  }) satisfies z.ZodType<ChatTarget>,
  count: z.number().int().nonnegative(),
});
type OwedBusy = z.output<typeof OwedBusySchema>;

interface Deferred {
  failure: FailureKind;
  ids: string[];
  timer: Timer;
}

export interface Notices {
  /** A message refused as busy on a platform that cannot redeliver: told now, or counted for the summary. */
  busy(chatKey: ChatKey, target: ChatTarget): Promise<void>;
  /** Journaled entries that could not be answered: finished with a notice now, or kept until the summary. */
  turnFailed(chatKey: ChatKey, entryIds: string[], failure: FailureKind): Promise<void>;
  /** Sends summaries a previous run still owed (at start). */
  resume(): void;
  /** Cancels timers (deferred entries stay journaled and are retried at the next start). */
  stop(): void;
}

export function createNotices(deps: NoticeDeps): Notices {
  const max = deps.maxChats ?? 10_000;
  const lastTold = new BoundedMap<string, number>(max);
  const busyTimers = new BoundedMap<ChatKey, Timer>(max);
  const deferred = new Map<string, Deferred>();
  /** Aborted by `stop`: nothing more is said or armed (what is owed stays journaled for the next start). */
  const stopped = new AbortController();

  const inCooldown = (key: string): boolean => {
    const last = lastTold.get(key);
    return last !== undefined && deps.clock.now() - last < deps.cooldownMs;
  };
  const untilCooldownEnds = (key: string) => Math.max(0, (lastTold.get(key) ?? 0) + deps.cooldownMs - deps.clock.now());

  /** The chat's owed count; a record that does not parse owes nothing (it cannot be sent anywhere). */
  const owedTo = (chatKey: ChatKey): OwedBusy | undefined => {
    const parsed = OwedBusySchema.safeParse(deps.owed.get<unknown>(chatKey));
    return parsed.success ? parsed.data : undefined;
  };

  async function flushBusy(chatKey: ChatKey): Promise<void> {
    busyTimers.delete(chatKey);
    const owed = owedTo(chatKey);
    if (!owed?.count) return;
    lastTold.set(`busy ${chatKey}`, deps.clock.now());
    await deps.send(owed.target, noticeText.busyMore(owed.count));
    await deps.owed.set(chatKey, undefined);
  }

  function armBusy(chatKey: ChatKey, delay: number): void {
    if (stopped.signal.aborted || busyTimers.has(chatKey)) return;
    busyTimers.set(
      chatKey,
      deps.clock.setTimeout(() => void flushBusy(chatKey).catch(() => undefined), delay),
    );
  }

  function flushDeferred(key: string): Promise<void> {
    const d = deferred.get(key);
    if (!d) return Promise.resolve();
    deferred.delete(key);
    d.timer.cancel();
    lastTold.set(key, deps.clock.now());
    return deps.finish(d.ids, failureText(d.failure, d.ids.length), d.failure);
  }

  return {
    async busy(chatKey, target) {
      const key = `busy ${chatKey}`;
      if (!inCooldown(key)) {
        lastTold.set(key, deps.clock.now());
        // Not awaited: the adapter's hand-over must not wait on our send retries.
        void deps.send(target, noticeText.busyOne).catch(() => undefined);
        return;
      }
      const owed = owedTo(chatKey);
      await deps.owed.set(chatKey, { target, count: (owed?.count ?? 0) + 1 } satisfies OwedBusy);
      armBusy(chatKey, untilCooldownEnds(key));
    },

    async turnFailed(chatKey, entryIds, failure) {
      const key = `${failure.kind} ${chatKey}`;
      const waiting = deferred.get(key);
      if (waiting) {
        waiting.ids.push(...entryIds);
        return;
      }
      if (!inCooldown(key)) {
        lastTold.set(key, deps.clock.now());
        await deps.finish(entryIds, failureText(failure, entryIds.length), failure);
        return;
      }
      if (stopped.signal.aborted) return; // stays journaled: tried again at the next start
      const timer = deps.clock.setTimeout(() => void flushDeferred(key).catch(() => undefined), untilCooldownEnds(key));
      deferred.set(key, { failure, ids: [...entryIds], timer });
    },

    resume() {
      // The owed store is namespaced to notices: every key is a chat.
      for (const stored of deps.owed.keys()) {
        const chatKey = parseChatKey(stored);
        if (chatKey) armBusy(chatKey, 0);
      }
    },

    stop() {
      stopped.abort();
      for (const t of busyTimers.values()) t.cancel();
      busyTimers.clear();
      for (const d of deferred.values()) d.timer.cancel();
      deferred.clear();
    },
  };
}
