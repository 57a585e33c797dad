/**
 * The relay: from an accepted chat message to its delivered reply.
 *
 *   intake    access check, route, dedupe, bounds, journal (then the adapter may ack)
 *   turn      session continuity, attachments, the service call with retries
 *             and fault handling, the reply recorded before any chunk is sent
 *   delivery  chunks sent one at a time, progress recorded per chunk, the
 *             entry forgotten only when the last chunk is out
 *   commands  beside the session queue, answered at once
 *
 * Every outcome a person should know of (gave up, busy, access refused by the
 * service, context reset, attachments off) is said in the chat, and failure
 * notices are rate-limited per chat by `retry.errorCooldownMs`.
 */
import { readFile } from "node:fs/promises";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import { ServiceError, type ServiceClient } from "../../shared/client/index.js";
import { hex, type Random } from "../../shared/random.js";
import type { ResponseRequest } from "../../shared/schemas/responses.js";
import type { ChannelConfig, DaemonConfig } from "../config/schema.js";
import { dedupeKey, type JournalEntry, type SessionState, type StoredMessage, type StoredReply, type StoredRoute, type Store } from "../state/store.js";
import { checkAccess } from "./access.js";
import type { ChatAdapter, ChatTarget, InboundMessage } from "./adapter.js";
import { splitReply } from "./chunking.js";
import { parseCommand, runCommand, type CommandName } from "./commands.js";
import { replyTextOf, responseIdOf } from "./reply.js";
import { resolveRoute, sessionIdFor } from "./routing.js";
import type { Scheduler, Turn } from "./scheduler.js";

/** What the relay reports; the daemon maps it onto prom-client. */
export interface RelayMetrics {
  inbound(platform: string, outcome: "accepted" | "duplicate" | "denied" | "unrouted" | "busy" | "command" | "empty"): void;
  /** seconds: from acceptance to the last chunk sent. */
  turn(instanceId: string, outcome: "answered" | "failed" | "expired" | "route_stopped" | "undeliverable", seconds: number): void;
  retry(instanceId: string, reason: "network" | "server" | "not_running" | "context_reset" | "send"): void;
  /** route: the rule index, or "-" when none applies. */
  error(route: string, kind: string): void;
}

const noMetrics: RelayMetrics = { inbound() {}, turn() {}, retry() {}, error() {} };

export interface RelayDeps {
  config: DaemonConfig;
  store: Store;
  client: ServiceClient;
  scheduler: Scheduler<string>;
  clock: Clock;
  random: Random;
  logger: Logger;
  metrics?: RelayMetrics;
  adapterFor(platform: string, accountId: string): ChatAdapter | undefined;
  /** The channel config of an adapter account (its access rules), if the config has one. */
  channelFor(accountId: string): ChannelConfig | undefined;
}

export class StoppingError extends Error {
  override readonly name = "StoppingError";
  readonly status = 503;
  constructor() {
    super("The daemon is stopping.");
  }
}

/** Exponential backoff with equal jitter: half fixed, half random, capped. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random: Random): number {
  const full = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(full / 2 + (random.float() * full) / 2);
}

export function targetOf(m: StoredMessage | InboundMessage, replyTo?: string): ChatTarget {
  const replyToMessageId = replyTo ?? m.messageId;
  return {
    platform: m.platform,
    accountId: m.accountId,
    chatId: m.chatId,
    chatType: m.chatType,
    ...(replyToMessageId ? { replyToMessageId } : {}),
  };
}

const chatKeyOf = (m: Pick<StoredMessage, "platform" | "accountId" | "chatId">) => JSON.stringify([m.platform, m.accountId, m.chatId]);

/** A person's session state is per instance: a response id means nothing to another instance. */
export const sessionKeyOf = (route: Pick<StoredRoute, "instanceId" | "sessionBase">) => `${route.instanceId} ${route.sessionBase}`;

/** Path components the files API accepts as they are. */
const pathPart = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_").slice(0, 100) || "_";

type CallOutcome =
  | { ok: true; text: string; responseId?: string; sessionId: string; generation: number; contextReset: boolean }
  | { ok: false; reason: string; notice?: string };

export interface Relay {
  /** The `InboundSink.accept` of one adapter. */
  accept(adapter: ChatAdapter, message: InboundMessage): Promise<void>;
  /** The scheduler's `run`. */
  runTurn(turn: Turn<string>): Promise<void>;
  /** Queues the turns the journal still holds (after a restart), in order. */
  resume(): void;
  /** Runs the commands the journal still holds (once adapters can send). */
  resumeCommands(): void;
  /** Stops taking messages and starting service calls (in-flight ones may finish). */
  beginStop(): void;
  /** After the grace period: no further chunk is sent; resolves once sends in progress are recorded. */
  haltDelivery(): Promise<void>;
  /** Commands in flight (they run beside the scheduler). */
  whenCommandsIdle(): Promise<void>;
  /** Routes the service refused (401/403), by rule index. */
  readonly stoppedRoutes: ReadonlyMap<number, string>;
}

export function createRelay(deps: RelayDeps): Relay {
  const { config, store, client, scheduler, clock, random } = deps;
  const log = deps.logger;
  const metrics = deps.metrics ?? noMetrics;
  const retry = config.retry;

  let stopping = false;
  let halted = false;
  const abort = new AbortController();
  const sendsInProgress = new Set<Promise<unknown>>();
  const commandsInFlight = new Set<Promise<unknown>>();

  const lastNotice = new Map<string, number>();
  const stoppedRoutes = new Map<number, string>();
  const toldRouteStopped = new Set<string>();
  const startRefused = new Set<string>();
  const instanceWaits = new Map<string, Promise<"running" | "retry" | "failed">>();
  const warnedNoChannel = new Set<string>();

  /** Waits, but wakes (rejecting) when the daemon stops. */
  const sleep = (ms: number) =>
    new Promise<void>((resolve, reject) => {
      if (abort.signal.aborted) return reject(new StoppingError());
      const timer = clock.setTimeout(() => {
        abort.signal.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        timer.cancel();
        reject(new StoppingError());
      };
      abort.signal.addEventListener("abort", onAbort, { once: true });
    });

  /** True (and starts the cooldown) if this chat may be told of a failure now. */
  const mayNotify = (chatKey: string, kind = "error"): boolean => {
    const key = `${kind} ${chatKey}`;
    const now = clock.now();
    const last = lastNotice.get(key);
    if (last !== undefined && now - last < retry.errorCooldownMs) return false;
    lastNotice.set(key, now);
    return true;
  };

  /** A best-effort word to the person that is not part of any turn (busy, attachments off). */
  const notify = (adapter: ChatAdapter, target: ChatTarget, text: string) => {
    adapter.send(target, text, { format: "plain" }).catch((error: unknown) => {
      log.warn({ platform: target.platform, accountId: target.accountId, err: errorSummary(error) }, "could not send a notice");
    });
  };

  // ---------------------------------------------------------------- intake

  async function accept(adapter: ChatAdapter, message: InboundMessage): Promise<void> {
    if (stopping) throw new StoppingError(); // not acknowledged: the platform delivers it again later
    const ids = { platform: message.platform, accountId: message.accountId, chatId: message.chatId, messageId: message.messageId };
    const channel = deps.channelFor(message.accountId);
    if (!channel) {
      if (!warnedNoChannel.has(message.accountId)) {
        warnedNoChannel.add(message.accountId);
        log.warn({ accountId: message.accountId }, "no channel config for this account: its messages are refused (no access rules)");
      }
      metrics.inbound(message.platform, "denied");
      return;
    }
    const decision = checkAccess(channel.access, message);
    if (!decision.allowed) {
      log.debug({ ...ids, userId: message.userId, reason: decision.reason }, "message refused by access rules");
      metrics.inbound(message.platform, "denied");
      return;
    }
    const route = resolveRoute(config, message);
    if (!route) {
      log.info({ ...ids }, "no route matches this message: dropped");
      metrics.inbound(message.platform, "unrouted");
      return;
    }
    const key = dedupeKey(message);
    if (store.has(key)) {
      log.debug({ ...ids }, "duplicate message ignored");
      metrics.inbound(message.platform, "duplicate");
      return;
    }

    let msg = message;
    if (msg.attachments?.length) {
      const allowed = config.attachments.enabled ? msg.attachments.filter((a) => a.data.length <= config.attachments.maxBytes) : [];
      if (allowed.length < msg.attachments.length) {
        const why = config.attachments.enabled
          ? `A file was larger than ${Math.floor(config.attachments.maxBytes / 1024 / 1024)} MiB and was not passed on.`
          : "Attachments are turned off here, so files are not passed on to the agent.";
        notify(adapter, targetOf(msg), why);
        msg = { ...msg, attachments: allowed };
      }
      if (!msg.attachments?.length && !msg.text.trim()) {
        metrics.inbound(message.platform, "empty");
        return;
      }
    }
    if (!msg.text.trim() && !msg.attachments?.length) {
      metrics.inbound(message.platform, "empty");
      return;
    }

    const storedRoute: StoredRoute = { ...route };
    const command = msg.attachments?.length ? undefined : parseCommand(msg.text);
    if (command) {
      const entry = await store.add({ kind: "command", key, message: msg, route: storedRoute });
      metrics.inbound(message.platform, "command");
      trackCommand(entry);
      return;
    }

    const slot = scheduler.reserve(route.instanceId, route.sessionBase);
    if (!slot.ok) {
      log.warn({ ...ids, reason: slot.reason }, "queue full: message not taken");
      metrics.inbound(message.platform, "busy");
      if (mayNotify(chatKeyOf(msg), "busy")) {
        notify(adapter, targetOf(msg), "The agent is busy with earlier messages, so this one was not taken. Please send it again in a little while.");
      }
      return;
    }
    let entry: JournalEntry;
    try {
      entry = await store.add({ kind: "turn", key, message: msg, route: storedRoute });
    } catch (error) {
      slot.cancel();
      throw error;
    }
    metrics.inbound(message.platform, "accepted");
    slot.submit(entry.id);
  }

  // ---------------------------------------------------------------- delivery

  type Outcome = Parameters<RelayMetrics["turn"]>[1];

  /** Sends the recorded reply's remaining chunks, then forgets its entries. */
  async function deliver(leaderId: string, outcome: Outcome = "answered"): Promise<void> {
    const lead = store.get(leaderId);
    if (!lead?.reply) return;
    const { chunks, members, format } = lead.reply;
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
    for (let i = lead.sent; i < chunks.length; i++) {
      if (halted) throw new StoppingError();
      const sending = sendChunk(instanceId, adapter, target, chunks[i] ?? "", format).then(async (sent) => {
        if (sent === "sent") await store.recordSent(leaderId, i + 1);
        return sent;
      });
      sendsInProgress.add(sending);
      let sent: SendResult;
      try {
        sent = await sending;
      } finally {
        sendsInProgress.delete(sending);
      }
      if (sent === "halted") throw new StoppingError(); // stays journaled: the next start sends the rest
      if (sent === "failed") {
        outcome = "undeliverable";
        break; // the platform keeps refusing: give up on the rest rather than block the chat
      }
    }
    // Counted before the journal drains, so whoever waits for idle sees the turn in the metrics.
    metrics.turn(instanceId, outcome, Math.max(0, clock.now() - lead.acceptedAt) / 1000);
    await store.complete(members);
  }

  type SendResult = "sent" | "failed" | "halted";

  /** One chunk, retried with backoff while the platform refuses, up to `maxAttempts`. */
  async function sendChunk(instanceId: string, adapter: ChatAdapter, target: ChatTarget, text: string, format: StoredReply["format"]): Promise<SendResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        await adapter.send(target, text, { format });
        return "sent";
      } catch (error) {
        metrics.error("-", "send");
        if (halted) return "halted";
        if (attempt >= retry.maxAttempts) {
          log.error({ platform: target.platform, accountId: target.accountId, chatId: target.chatId, err: errorSummary(error) }, "could not deliver a reply: giving up");
          return "failed";
        }
        metrics.retry(instanceId, "send");
        log.warn({ platform: target.platform, attempt, err: errorSummary(error) }, "sending failed: retrying");
        await sleep(backoffDelay(attempt, retry.baseDelayMs, retry.maxDelayMs, random)).catch(() => undefined);
        if (halted) return "halted";
      }
    }
  }

  /** Ends a turn with the bridge's own words (or none), recorded like any reply. */
  async function finishWith(entries: JournalEntry[], text: string | undefined, adapter: ChatAdapter | undefined, outcome: Outcome): Promise<void> {
    const lead = entries[0];
    if (!lead) return;
    const ids = entries.map((e) => e.id);
    if (text === undefined || !adapter) {
      metrics.turn(lead.route.instanceId, outcome, Math.max(0, clock.now() - lead.acceptedAt) / 1000);
      await store.complete(ids);
      return;
    }
    await store.recordReply(lead.id, { chunks: splitReply(text, adapter.limits.maxMessageLength), members: ids, format: "plain" });
    await deliver(lead.id, outcome);
  }

  // ---------------------------------------------------------------- turns

  async function runTurn(turn: Turn<string>): Promise<void> {
    let entries = turn.items.map((id) => store.get(id)).filter((e): e is JournalEntry => !!e);
    const lead = entries[0];
    if (!lead) return;
    if (lead.reply) return deliver(lead.id); // answered before a restart: only delivery is left
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
        const when = new Date(expired[0]!.message.sentAt).toISOString().replace("T", " ").slice(0, 16);
        const n = expired.length === 1 ? "Your message" : `Your ${expired.length} messages`;
        await finishWith(expired, `${n} from ${when} UTC came in while the agent was unavailable and ${expired.length === 1 ? "is" : "are"} now too old to answer. Please send ${expired.length === 1 ? "it" : "them"} again if still needed.`, adapter, "expired");
        entries = entries.filter((e) => !expired.includes(e));
        if (!entries.length) return;
      }
    }

    const stopped = stoppedRoutes.get(route.ruleIndex);
    if (stopped !== undefined) return finishWith(entries, tellRouteStopped(route.ruleIndex, chatKey), adapter, "route_stopped");

    const target = targetOf(msg, entries[entries.length - 1]!.message.messageId);
    const typing = startTyping(adapter, target);
    let outcome: CallOutcome;
    const notes: string[] = [];
    try {
      const input = await buildInput(entries, route, notes);
      if (input === undefined) {
        outcome = { ok: false, reason: "nothing to send", notice: notes.join("\n") || undefined };
      } else {
        outcome = await callService(route, input, logCtx);
      }
    } finally {
      typing.stop();
    }

    if (!outcome.ok) {
      if (outcome.reason === "route_stopped") return finishWith(entries, tellRouteStopped(route.ruleIndex, chatKey), adapter, "route_stopped");
      log.warn({ ...logCtx, reason: outcome.reason }, "turn gave up");
      const notice = outcome.notice && mayNotify(chatKey) ? [...notes, outcome.notice].join("\n\n") : undefined;
      return finishWith(entries, notice, adapter, "failed");
    }

    if (outcome.contextReset) notes.unshift("(The earlier conversation could not be found on the service, so this starts a new one: the agent no longer sees what was said before.)");
    const body = outcome.text.trim() ? outcome.text : "(The agent answered without any text.)";
    const text = notes.length ? `${notes.join("\n\n")}\n\n${body}` : body;
    const chunks = splitReply(text, adapter.limits.maxMessageLength);

    // The chain moves on only if nobody started a new conversation meanwhile (/new during the turn).
    const sessionKey = sessionKeyOf(route);
    const current = store.session(sessionKey);
    const session =
      outcome.responseId && current.generation === outcome.generation
        ? { base: sessionKey, state: { generation: current.generation, lastResponseId: outcome.responseId, sessionId: outcome.sessionId } }
        : undefined;
    await store.recordReply(lead.id, { chunks, members: entries.map((e) => e.id), format: "markdown" }, session);
    log.debug({ ...logCtx, chunks: chunks.length, ms: clock.now() - started }, "turn answered");
    await deliver(lead.id);
  }

  function tellRouteStopped(ruleIndex: number, chatKey: string): string | undefined {
    const key = `${ruleIndex} ${chatKey}`;
    if (toldRouteStopped.has(key)) return undefined;
    toldRouteStopped.add(key);
    return "The agent service refused this bridge's access key, so messages here cannot be answered until the operator fixes the configuration. The operator has been told.";
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

  /** The turn's text, with uploaded attachments named; undefined when nothing is left to send. */
  async function buildInput(entries: JournalEntry[], route: StoredRoute, notes: string[]): Promise<string | undefined> {
    const texts = entries.map((e) => e.message.text).filter((t) => t.trim());
    const uploaded: string[] = [];
    let refused = false;
    for (const e of entries) {
      for (const a of e.message.attachments ?? []) {
        if (refused) break;
        const m = e.message;
        const remote = `inbox/${pathPart(m.platform)}/${pathPart(m.chatId)}/${m.sentAt}-${pathPart(a.fileName)}`;
        try {
          const data = await readFile(store.attachmentPath(a));
          await withRetries(route.instanceId, () =>
            client.uploadFile({ instance_id: route.instanceId, path: remote, data, fileName: a.fileName, ...(a.mimeType ? { contentType: a.mimeType } : {}) }),
          );
          uploaded.push(remote);
        } catch (error) {
          if (error instanceof StoppingError) throw error;
          if (error instanceof ServiceError && (error.status === 403 || error.status === 401)) {
            refused = true;
            notes.push("(Attachments are off for this agent: the bridge's key may not write files, so only your text was passed on.)");
            log.warn({ instanceId: route.instanceId, status: error.status }, "file upload refused: attachments are off for this route");
          } else {
            notes.push(`(The file ${a.fileName} could not be passed on.)`);
            log.warn({ instanceId: route.instanceId, err: errorSummary(error) }, "file upload failed");
          }
        }
      }
    }
    let input = texts.join("\n");
    if (uploaded.length) input += `${input ? "\n\n" : ""}Attached files (in the workspace):\n${uploaded.map((p) => `- ${p}`).join("\n")}`;
    return input.trim() ? input : undefined;
  }

  /**
   * Runs `op`, retrying network errors and 5xx with backoff up to
   * `maxAttempts`, and waiting out 409 (instance not running) up to
   * `instanceWaitMs`. Other errors, and the last one, are thrown.
   */
  async function withRetries<R>(instanceId: string, op: () => Promise<R>): Promise<R> {
    let attempt = 0;
    let waits = 0;
    let waitDeadline: number | undefined;
    for (;;) {
      if (halted) throw new StoppingError();
      attempt++;
      try {
        return await op();
      } catch (error) {
        if (!(error instanceof ServiceError)) throw error;
        if (error.status === 409) {
          waitDeadline ??= clock.now() + retry.instanceWaitMs;
          metrics.retry(instanceId, "not_running");
          const state = await waitForInstance(instanceId, waitDeadline, ++waits);
          if (state === "failed") throw error;
          attempt--; // waiting for the instance is bounded by time, not attempts
          continue;
        }
        if (!error.retryable || attempt >= retry.maxAttempts) throw error;
        metrics.retry(instanceId, error.status === 0 ? "network" : "server");
        log.debug({ instanceId, status: error.status, attempt }, "service call failed: retrying");
        await sleep(backoffDelay(attempt, retry.baseDelayMs, retry.maxDelayMs, random));
      }
    }
  }

  /** Polls the instance until it runs, starting it when allowed. Shared by every turn of the instance. */
  function waitForInstance(instanceId: string, deadline: number, round: number): Promise<"running" | "retry" | "failed"> {
    let wait = instanceWaits.get(instanceId);
    if (!wait) {
      wait = pollInstance(instanceId, deadline, round).finally(() => instanceWaits.delete(instanceId));
      instanceWaits.set(instanceId, wait);
    }
    return wait.then((state) => (state === "retry" && clock.now() >= deadline ? "failed" : state));
  }

  /** `round`: how many times this turn has waited already, so the backoff keeps growing across polls. */
  async function pollInstance(instanceId: string, deadline: number, round: number): Promise<"running" | "retry" | "failed"> {
    for (let attempt = round; ; attempt++) {
      let status: string | undefined;
      try {
        status = (await client.getInstanceStatus({ instance_id: instanceId })).status;
      } catch (error) {
        if (error instanceof ServiceError && error.status === 404) return "failed";
        // A key without `read` cannot look: fall back to retrying the call itself.
      }
      if (status === "running") return "running";
      if (status === "error" || status === "terminated") {
        log.error({ instanceId, status }, "instance cannot run: giving up on its turns");
        return "failed";
      }
      if (status === "stopped" && config.service.autoStart && !startRefused.has(instanceId)) {
        try {
          await client.startInstance({ instance_id: instanceId });
          log.info({ instanceId }, "instance was stopped: started it");
        } catch (error) {
          if (error instanceof ServiceError && (error.status === 403 || error.status === 401)) {
            startRefused.add(instanceId);
            log.warn({ instanceId }, "instance is stopped and the key may not start it (needs configure): waiting for someone to start it");
          }
          // 409: someone else is starting it.
        }
      }
      // Out of time (this poll's deadline): each waiting turn then judges by its own.
      if (clock.now() >= deadline) return "retry";
      const delay = backoffDelay(attempt, Math.max(retry.baseDelayMs, 1), retry.maxDelayMs, random);
      await sleep(Math.min(delay, Math.max(0, deadline - clock.now())));
      if (status === undefined) return "retry";
    }
  }

  /**
   * The service session one attempt goes to. A request without
   * `previous_response_id` continues its session's running conversation, so
   * a first turn sent twice into one session (the first answer lost to a
   * timeout, a reset or a kill -9) would leave its input there twice. Each
   * first-turn attempt therefore opens a session of its own; the one that
   * answers is recorded, and later turns chain onto its response id (which
   * names the chain exactly, whatever else reached the session).
   */
  function serviceSessionFor(route: StoredRoute, state: SessionState): string {
    const base = sessionIdFor(route.sessionBase, state.generation);
    if (state.lastResponseId) return state.sessionId ?? base;
    return `${base}.a${hex(random, 4)}`;
  }

  async function callService(route: StoredRoute, input: string, logCtx: Record<string, unknown>): Promise<CallOutcome> {
    const sessionKey = sessionKeyOf(route);
    let contextReset = false;
    let generation = 0;
    let sessionId = "";
    for (;;) {
      try {
        const response = await withRetries(route.instanceId, () => {
          const state = store.session(sessionKey);
          generation = state.generation;
          sessionId = serviceSessionFor(route, state);
          const body: ResponseRequest = {
            model: route.model,
            input,
            ...(route.instructions !== undefined ? { instructions: route.instructions } : {}),
            ...(state.lastResponseId ? { previous_response_id: state.lastResponseId } : {}),
          };
          return client.createSessionResponse({ instance_id: route.instanceId, session_id: sessionId, body });
        });
        const responseId = responseIdOf(response);
        return { ok: true, text: replyTextOf(response), ...(responseId ? { responseId } : {}), sessionId, generation, contextReset };
      } catch (error) {
        if (error instanceof StoppingError) throw error;
        if (!(error instanceof ServiceError)) {
          metrics.error(String(route.ruleIndex), "internal");
          log.error({ ...logCtx, err: errorSummary(error) }, "turn failed unexpectedly");
          return { ok: false, reason: "internal error", notice: "Sorry, something went wrong in the bridge and your message could not be answered." };
        }
        if (error.status === 400 && error.code === "previous_response_not_found" && !contextReset) {
          // The service lost the chain: once, start a fresh one (new session id too) and say so.
          contextReset = true;
          metrics.retry(route.instanceId, "context_reset");
          log.warn(logCtx, "previous response not found: starting a fresh conversation");
          const current = store.session(sessionKey);
          await store.setSession(sessionKey, { generation: current.generation + 1 });
          continue;
        }
        // The service's own refusal of the key (not a gateway error passed through, which has an OpenAI-style body).
        if ((error.status === 401 || error.status === 403) && !isGatewayError(error)) {
          if (!stoppedRoutes.has(route.ruleIndex)) {
            const why = `the service answered ${error.status} for instance ${route.instanceId}`;
            stoppedRoutes.set(route.ruleIndex, why);
            metrics.error(String(route.ruleIndex), "auth");
            log.error({ route: route.ruleIndex, instanceId: route.instanceId, status: error.status }, "the service refused the API key: this route is stopped until the configuration is fixed and the daemon restarted");
          }
          return { ok: false, reason: "route_stopped" };
        }
        metrics.error(String(route.ruleIndex), error.status === 0 ? "network" : `http_${error.status}`);
        const what =
          error.status === 409
            ? "the agent's instance is not running"
            : error.status === 0
              ? "the agent service could not be reached"
              : error.status >= 500
                ? "the agent service kept failing"
                : `the agent service refused the message (HTTP ${error.status})`;
        return { ok: false, reason: `${error.status}: ${error.message}`, notice: `Sorry, your message could not be answered: ${what}. Please try again later.` };
      }
    }
  }

  // ---------------------------------------------------------------- commands

  /** Commands of one chat answer in the order they came (beside the turns, not behind them). */
  const commandChains = new Map<string, Promise<void>>();

  function trackCommand(entry: JournalEntry): void {
    const chat = chatKeyOf(entry.message);
    const before = commandChains.get(chat) ?? Promise.resolve();
    const p = before
      .then(() => runCommandEntry(entry))
      .catch((error: unknown) => {
        if (!(error instanceof StoppingError) && !(error instanceof Error && error.name === "JournalClosedError")) {
          log.error({ err: errorSummary(error) }, "command failed");
        }
      });
    commandChains.set(chat, p);
    commandsInFlight.add(p);
    void p.finally(() => {
      commandsInFlight.delete(p);
      if (commandChains.get(chat) === p) commandChains.delete(chat);
    });
  }

  async function runCommandEntry(entry: JournalEntry): Promise<void> {
    if (entry.reply) return deliver(entry.id);
    const parsed = parseCommand(entry.message.text);
    const adapter = deps.adapterFor(entry.message.platform, entry.message.accountId);
    if (!parsed || !adapter) return store.complete([entry.id]);
    const text = await commandReply(parsed.name, entry);
    await store.recordReply(entry.id, { chunks: splitReply(text, adapter.limits.maxMessageLength), members: [entry.id], format: "plain" });
    await deliver(entry.id);
  }

  async function commandReply(name: CommandName, entry: JournalEntry): Promise<string> {
    const m = entry.message;
    const route = entry.route;
    const sessionKey = sessionKeyOf(route);
    const state = store.session(sessionKey);
    try {
      return await runCommand(name, {
        platform: m.platform,
        accountId: m.accountId,
        chatId: m.chatId,
        chatType: m.chatType,
        userId: m.userId,
        ...(m.userAliases ? { userAliases: m.userAliases } : {}),
        ...(m.userName ? { userName: m.userName } : {}),
        instanceId: route.instanceId,
        sessionId: state.lastResponseId && state.sessionId ? state.sessionId : sessionIdFor(route.sessionBase, state.generation),
        chained: !!state.lastResponseId,
        async resetSession() {
          const next = store.session(sessionKey).generation + 1;
          await store.setSession(sessionKey, { generation: next });
          log.info({ platform: m.platform, chatId: m.chatId, instanceId: route.instanceId }, "conversation reset by the person");
          return sessionIdFor(route.sessionBase, next);
        },
        async instanceStatus() {
          try {
            return (await client.getInstanceStatus({ instance_id: route.instanceId })).status;
          } catch (error) {
            return error instanceof ServiceError ? `status unknown: ${error.status === 0 ? "service unreachable" : `HTTP ${error.status}`}` : "status unknown";
          }
        },
        queue: scheduler.depth(route.instanceId, route.sessionBase),
        ...(stoppedRoutes.has(route.ruleIndex) ? { routeStopped: stoppedRoutes.get(route.ruleIndex) } : {}),
      });
    } catch (error) {
      log.error({ err: errorSummary(error) }, "command failed");
      return "Sorry, that command failed. Please try again.";
    }
  }

  // ---------------------------------------------------------------- lifecycle

  return {
    accept,
    runTurn,
    resume() {
      for (const entry of store.pending()) {
        if (entry.leader && store.get(entry.leader)) continue; // answered with its leader
        if (entry.kind === "command") continue;
        const members = entry.reply ? entry.reply.members.filter((id) => store.get(id)) : [entry.id];
        if (!members.includes(entry.id)) members.unshift(entry.id);
        scheduler.enqueueTurn(entry.route.instanceId, entry.route.sessionBase, members);
      }
    },
    resumeCommands() {
      for (const entry of store.pending()) if (entry.kind === "command") trackCommand(entry);
    },
    beginStop() {
      stopping = true;
    },
    async haltDelivery() {
      halted = true;
      abort.abort();
      while (sendsInProgress.size) await Promise.allSettled([...sendsInProgress]);
    },
    async whenCommandsIdle() {
      while (commandsInFlight.size) await Promise.allSettled([...commandsInFlight]);
    },
    stoppedRoutes,
  };
}

/** A gateway error passed through by the service: `{"error": {...}}` rather than `{"detail": ...}`. */
function isGatewayError(error: ServiceError): boolean {
  const body = error.body;
  return typeof body === "object" && body !== null && "error" in body && !("detail" in body);
}

/** An error for a log line: class, status and message, never a request body or header. */
export function errorSummary(error: unknown): Record<string, unknown> {
  if (error instanceof ServiceError) return { type: error.name, status: error.status, message: error.message, ...(error.code ? { code: error.code } : {}) };
  if (error instanceof Error) return { type: error.name, message: error.message };
  return { message: String(error) };
}
