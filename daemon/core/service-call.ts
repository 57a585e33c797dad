/**
 * The service call of a turn: attachments uploaded, the Responses request with
 * session continuity, retries of network errors and 5xx, waiting for (and
 * starting) a stopped instance, a fresh chain when the service lost the old
 * one, and routes stopped when the service refuses the key.
 *
 * Exactly once in the conversation: a later turn names its chain by
 * `previous_response_id`, so a retried attempt forks from the same parent and
 * the lost attempt is never part of the visible chain. A first turn has no
 * parent to name; each of its attempts opens a service session of its own
 * (see `serviceSessionFor`). The model may still run twice for one input (the
 * API has no idempotency key); the conversation holds the input once.
 *
 * Cancellation: a turn's /stop closes its request, streamed or not (the
 * service sees the client leave), and ends its waits; the daemon's halt ends
 * every wait, instance poll and upload with a `StoppingError`.
 */
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import { ServiceError, type ServiceClient } from "../../shared/client/index.js";
import { hex, type Random } from "../../shared/random.js";
import type { ResponseObject, ResponseRequest } from "../../shared/schemas/responses.js";
import type { DaemonConfig } from "../config/schema.js";
import type { JournalEntry, SessionState, StoredAttachment, StoredRoute } from "../vocabulary/records.js";
import type { Store } from "../vocabulary/store.js";
import { noticeText, type FailureKind } from "./notices.js";
import { errorSummary, StoppingError, type RelayMetrics } from "./relay-types.js";
import { replyTextOf, responseIdOf } from "./reply.js";
import { createBackoff, type BackoffPolicy } from "../../shared/backoff.js";
import { retry } from "../helpers/retry.js";
import { sessionIdFor } from "./routing.js";
import { pathComponent } from "../../shared/util/names.js";
import { sessionKeyOf } from "../vocabulary/keys.js";
import { numberedMessages } from "./queue-mode.js";
import { functionCallsOf, type FunctionCall, type FunctionToolDeclaration } from "./questions/tools.js";
import type { InputItem } from "./questions/questions.js";

export type CallOutcome =
  | {
      ok: true;
      text: string;
      responseId?: string;
      sessionId: string;
      generation: number;
      contextReset: boolean;
      /** The answer's `function_call` items (core/questions/): each needs an output before the chain goes on. */
      calls: FunctionCall[];
    }
  /** `requestId`: the `x-request-id` of the service's last answer, to find its own log line. */
  | { ok: false; reason: string; failure: FailureKind; requestId?: string };

export interface ServiceCallDeps {
  config: DaemonConfig;
  store: Store;
  client: ServiceClient;
  clock: Clock;
  random: Random;
  logger: Logger;
  metrics: RelayMetrics;
  /** Aborted when the daemon halts: waits end at once. */
  signal: AbortSignal;
}

/** How a turn's call reads the answer. */
export interface CallOptions {
  /**
   * Streams the answer (`stream: true`) and calls this with the whole text so
   * far after each delta. A retried attempt starts its text from nothing again:
   * the caller shows only text that extends what it has shown.
   */
  onText?(textSoFar: string): void;
  /** Aborts the turn (/stop): the stream closes, waits end, and `call` throws `signal.reason`. */
  signal?: AbortSignal;
  /** The bridge's tools offered in this call (core/questions/); none: no `tools` sent. */
  tools?: FunctionToolDeclaration[];
}

export interface ServiceCalls {
  /** The turn's input: its texts, each with its `extra` text (its voice notes' transcripts) after it (numbered when `numbered`: a collected turn), then the files it passed on; undefined when nothing is left to send. */
  buildInput(
    entries: JournalEntry[],
    route: StoredRoute,
    notes: string[],
    extra?: ReadonlyMap<string, string>,
    options?: { numbered?: boolean },
  ): Promise<string | undefined>;
  call(route: StoredRoute, input: string | InputItem[], logCtx: Record<string, unknown>, options?: CallOptions): Promise<CallOutcome>;
  /** The instance's status as the service reports it, or why it is unknown (for /status). */
  instanceStatus(instanceId: string): Promise<string>;
  /** Routes the service refused (401/403), by rule index. */
  readonly stoppedRoutes: ReadonlyMap<number, string>;
  /** Forgets the stopped routes (a reloaded config may have fixed them, and its rule indexes may differ). */
  resumeRoutes(): void;
}

export function createServiceCalls(deps: ServiceCallDeps): ServiceCalls {
  return new ServiceCaller(deps);
}

type InstanceState = "running" | "retry" | "failed";

/** The `ServiceCalls`: what the turns' calls share (stopped routes, instance waits, the halt). */
export class ServiceCaller implements ServiceCalls {
  readonly #deps: ServiceCallDeps;
  /** `config.retry`'s backoff, with a base of at least 1 ms. */
  readonly #backoff: BackoffPolicy;
  /** Aborts with a `StoppingError` when the daemon halts: every wait, poll and upload then ends with it. */
  readonly #halted: AbortSignal;
  /** Instances whose start the key may not do (bounded by the instances routed to); never shrinks. */
  readonly #startRefused = new Set<string>();
  /** The one poll per instance that turns waiting for it share; removed when it settles. */
  readonly #instanceWaits = new Map<string, Promise<InstanceState>>();
  /** Routes the service refused (401/403), by rule index, with why; a route stays until the daemon restarts. */
  readonly stoppedRoutes = new Map<number, string>();

  constructor(deps: ServiceCallDeps) {
    this.#deps = deps;
    const policy = deps.config.retry;
    this.#backoff = { baseMs: Math.max(policy.baseDelayMs, 1), maxMs: policy.maxDelayMs };
    this.#halted = stoppingSignal(deps.signal);
  }

  async buildInput(
    entries: JournalEntry[],
    route: StoredRoute,
    notes: string[],
    extra?: ReadonlyMap<string, string>,
    options: { numbered?: boolean } = {},
  ): Promise<string | undefined> {
    const texts = entries.map((e) => [e.message.text, extra?.get(e.id) ?? ""].filter((t) => t.trim()).join("\n\n")).filter((t) => t.trim());
    const uploaded: string[] = [];
    let refused = false;
    for (const e of entries) {
      for (const a of e.message.attachments ?? []) {
        if (refused) break;
        const outcome = await this.#upload(route, e.message, a, notes);
        if (outcome === "refused") refused = true;
        else if (outcome !== "failed") uploaded.push(outcome);
      }
    }
    let input = options.numbered && texts.length > 1 ? numberedMessages(texts) : texts.join("\n");
    if (uploaded.length) input += `${input ? "\n\n" : ""}Attached files (in the workspace):\n${uploaded.map((p) => `- ${p}`).join("\n")}`;
    return input.trim() ? input : undefined;
  }

  async call(route: StoredRoute, input: string | InputItem[], logCtx: Record<string, unknown>, options: CallOptions = {}): Promise<CallOutcome> {
    const { store, metrics, logger: log } = this.#deps;
    const turn = options.signal;
    const sessionKey = sessionKeyOf(route);
    let contextReset = false;
    for (;;) {
      const attempt = { generation: 0, sessionId: "" };
      try {
        const response = await this.#withRetries(route.instanceId, () => this.#attempt(route, input, options, attempt), turn);
        const responseId = responseIdOf(response);
        const { generation, sessionId } = attempt;
        const calls = functionCallsOf(response);
        return { ok: true, text: replyTextOf(response), ...(responseId ? { responseId } : {}), sessionId, generation, contextReset, calls };
      } catch (error) {
        if (error instanceof StoppingError) throw error;
        if (turn?.aborted) throw turn.reason;
        if (error instanceof ServiceError && error.status === 400 && error.code === "previous_response_not_found" && !contextReset) {
          // The service lost the chain: once, start a fresh one (new session id too) and say so.
          contextReset = true;
          metrics.retry(route.instanceId, "context_reset");
          log.warn(logCtx, "previous response not found: starting a fresh conversation");
          const current = store.session(sessionKey);
          await store.setSession(sessionKey, { generation: current.generation + 1 });
          continue;
        }
        return this.#givenUpOn(error, route, logCtx);
      }
    }
  }

  resumeRoutes(): void {
    this.stoppedRoutes.clear();
  }

  async instanceStatus(instanceId: string): Promise<string> {
    try {
      return (await this.#deps.client.getInstanceStatus({ instance_id: instanceId, signal: this.#halted })).status;
    } catch (error) {
      if (!(error instanceof ServiceError)) return "status unknown";
      return `status unknown: ${error.status === undefined ? "service unreachable" : `HTTP ${error.status}`}`;
    }
  }

  /** One try of a turn's request; `attempt` hears the session it went to. */
  #attempt(route: StoredRoute, input: string | InputItem[], options: CallOptions, attempt: { generation: number; sessionId: string }): Promise<ResponseObject> {
    const { store, client } = this.#deps;
    const turn = options.signal;
    const state = store.session(sessionKeyOf(route));
    attempt.generation = state.generation;
    attempt.sessionId = this.#serviceSessionFor(route, state);
    const body: ResponseRequest = {
      model: route.model,
      input,
      ...(route.instructions !== undefined ? { instructions: route.instructions } : {}),
      ...(state.lastResponseId ? { previous_response_id: state.lastResponseId } : {}),
      ...(options.tools?.length ? { tools: options.tools } : {}),
    };
    const args = { instance_id: route.instanceId, session_id: attempt.sessionId, body };
    if (options.onText) return this.#streamed(args, options.onText, turn);
    // The turn's /stop closes the request: the service sees the client leave.
    return client.createSessionResponse({ ...args, ...(turn ? { signal: turn } : {}) });
  }

  /** What a call that failed for good answers: the route stopped, the instance missing, or a failure the person is told. */
  #givenUpOn(error: unknown, route: StoredRoute, logCtx: Record<string, unknown>): CallOutcome {
    const { metrics, logger: log } = this.#deps;
    if (!(error instanceof ServiceError)) {
      metrics.error(String(route.ruleIndex), "internal");
      log.error({ ...logCtx, err: errorSummary(error) }, "turn failed unexpectedly");
      return { ok: false, reason: "internal error", failure: { kind: "failed", what: noticeText.internal } };
    }
    // The service's own refusal of the key (not a gateway error passed through).
    if (error.kind === "service" && (error.status === 401 || error.status === 403)) {
      if (!this.stoppedRoutes.has(route.ruleIndex)) {
        const why = `the service answered ${error.status} for instance ${route.instanceId}`;
        this.stoppedRoutes.set(route.ruleIndex, why);
        metrics.error(String(route.ruleIndex), "auth");
        log.error(
          { route: route.ruleIndex, instanceId: route.instanceId, status: error.status, requestId: error.requestId },
          "the service refused the API key: this route is stopped until the configuration is fixed and the daemon restarted",
        );
      }
      return { ok: false, reason: "route_stopped", failure: { kind: "route_stopped" } };
    }
    // The routed instance does not exist: the configuration is wrong, waiting will not help.
    if (error.kind === "service" && error.status === 404) {
      metrics.error(String(route.ruleIndex), "instance_missing");
      log.error(
        { route: route.ruleIndex, instanceId: route.instanceId, requestId: error.requestId },
        "the routed instance does not exist: fix the route's instance id",
      );
      return { ok: false, reason: "instance_missing", failure: { kind: "instance_missing" } };
    }
    metrics.error(String(route.ruleIndex), gotNoAnswer(error) ? "network" : error.status === undefined ? "stream" : `http_${error.status}`);
    return {
      ok: false,
      reason: `${error.status ?? error.kind}: ${error.message}`,
      failure: { kind: "failed", what: givenUp(error) },
      ...(error.requestId !== undefined ? { requestId: error.requestId } : {}),
    };
  }

  /** Uploads one attachment into the instance's workspace: its path there, or why not (a note for the person is added). */
  async #upload(route: StoredRoute, m: JournalEntry["message"], a: StoredAttachment, notes: string[]): Promise<string | "refused" | "failed"> {
    const { store, client, logger: log } = this.#deps;
    const remote = `inbox/${pathComponent(m.platform)}/${pathComponent(m.chatId)}/${m.sentAt}-${pathComponent(a.fileName)}`;
    try {
      const data = await store.readAttachment(a);
      await this.#withRetries(route.instanceId, () =>
        client.uploadFile({
          instance_id: route.instanceId,
          path: remote,
          data,
          fileName: a.fileName,
          ...(a.mimeType ? { contentType: a.mimeType } : {}),
          signal: this.#halted,
        }),
      );
      return remote;
    } catch (error) {
      if (error instanceof StoppingError) throw error;
      if (error instanceof ServiceError && error.kind === "service" && (error.status === 403 || error.status === 401)) {
        notes.push(noticeText.uploadRefused);
        log.warn({ instanceId: route.instanceId, status: error.status }, "file upload refused: attachments are off for this route");
        return "refused";
      }
      notes.push(noticeText.uploadFailed(a.fileName));
      log.warn({ instanceId: route.instanceId, err: errorSummary(error) }, "file upload failed");
      return "failed";
    }
  }

  /**
   * Runs `op` on `retry()`: network errors, broken streams and 5xx are tried
   * again with backoff up to `maxAttempts`; a 409 (instance not running) waits
   * for the instance, up to `instanceWaitMs`, without using up a try. Other
   * errors, and the last one, are thrown; a missing instance is thrown as the
   * service's 404 for it.
   */
  #withRetries<R>(instanceId: string, op: () => Promise<R>, turn?: AbortSignal): Promise<R> {
    const { clock, random, metrics, logger: log } = this.#deps;
    const notRunning = this.#instanceWaiter(instanceId);
    // A turn's calls end on its /stop (with the stop's reason, checked first) or on the halt.
    const end = turn ? eitherSignal(turn, this.#halted) : undefined;
    const calls = retry(op, {
      clock,
      random,
      maxAttempts: this.#deps.config.retry.maxAttempts,
      backoff: this.#backoff,
      signal: end?.signal ?? this.#halted,
      classify(error) {
        if (!(error instanceof ServiceError) || turn?.aborted) return { retry: false };
        if (error.kind === "service" && error.status === 409) return { retry: true, counts: false, wait: () => notRunning(error) };
        return error.retryable ? { retry: true } : { retry: false };
      },
      onRetry(error, attempt) {
        const failed = error instanceof ServiceError ? error : undefined;
        metrics.retry(instanceId, failed && gotNoAnswer(failed) ? "network" : "server");
        log.debug({ instanceId, kind: failed?.kind, status: failed?.status, requestId: failed?.requestId, attempt }, "service call failed: retrying");
      },
    });
    return end ? calls.finally(end.dispose) : calls;
  }

  /** One call's waits for a not-running instance: the deadline starts at the first 409; resolves to try again, throws to give up. */
  #instanceWaiter(instanceId: string): (refusal: ServiceError) => Promise<void> {
    const waits = { deadline: undefined as number | undefined, rounds: 0 };
    return async (refusal) => {
      waits.deadline ??= this.#deps.clock.now() + this.#deps.config.retry.instanceWaitMs;
      this.#deps.metrics.retry(instanceId, "not_running");
      if ((await this.#waitForInstance(instanceId, waits.deadline, ++waits.rounds)) === "failed") throw refusal;
    };
  }

  /**
   * Polls the instance until it runs, starting it when allowed. Shared by every
   * turn of the instance; rejects with the service's 404 when the instance does
   * not exist.
   */
  #waitForInstance(instanceId: string, deadline: number, round: number): Promise<InstanceState> {
    let w = this.#instanceWaits.get(instanceId);
    if (!w) {
      w = this.#pollInstance(instanceId, deadline, round).finally(() => this.#instanceWaits.delete(instanceId));
      this.#instanceWaits.set(instanceId, w);
    }
    return w.then((state) => (state === "retry" && this.#deps.clock.now() >= deadline ? "failed" : state));
  }

  /** `round`: how many times this turn has waited already, so the backoff keeps growing across polls. */
  async #pollInstance(instanceId: string, deadline: number, round: number): Promise<InstanceState> {
    const { client, clock, random, config, logger: log } = this.#deps;
    const halted = this.#halted;
    for (let attempt = round; ; attempt++) {
      let status: string | undefined;
      try {
        status = (await client.getInstanceStatus({ instance_id: instanceId, signal: halted })).status;
      } catch (error) {
        if (halted.aborted) throw halted.reason;
        if (error instanceof ServiceError && error.kind === "service" && error.status === 404) throw error;
        // A key without `read` cannot look: fall back to retrying the call itself.
      }
      if (status === "running") return "running";
      if (status === "error" || status === "terminated") {
        log.error({ instanceId, status }, "instance cannot run: giving up on its turns");
        return "failed";
      }
      if (status === "stopped" && config.service.autoStart && !this.#startRefused.has(instanceId)) await this.#startInstance(instanceId);
      // Out of time (this poll's deadline): each waiting turn then judges by its own.
      if (clock.now() >= deadline) return "retry";
      await clock.sleep(Math.min(createBackoff(this.#backoff, random).delayFor(attempt), Math.max(0, deadline - clock.now())), halted);
      if (status === undefined) return "retry";
    }
  }

  async #startInstance(instanceId: string): Promise<void> {
    const { client, logger: log } = this.#deps;
    try {
      await client.startInstance({ instance_id: instanceId, signal: this.#halted });
      log.info({ instanceId }, "instance was stopped: started it");
    } catch (error) {
      if (this.#halted.aborted) throw this.#halted.reason;
      if (error instanceof ServiceError && error.kind === "service" && (error.status === 403 || error.status === 401)) {
        this.#startRefused.add(instanceId);
        log.warn({ instanceId }, "instance is stopped and the key may not start it (needs configure): waiting for someone to start it");
      }
      // 409: someone else is starting it.
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
  #serviceSessionFor(route: StoredRoute, state: SessionState): string {
    const base = sessionIdFor(route.sessionBase, state.generation);
    if (state.lastResponseId) return state.sessionId ?? base;
    // Time as well as randomness: a restarted daemon with the same seed (tests) must not land in a lost attempt's session.
    return `${base}.a${this.#deps.clock.now().toString(36)}${hex(this.#deps.random, 4)}`;
  }

  /** One attempt, streamed: the text so far goes to `onText`; the completed response is the answer. */
  async #streamed(
    args: { instance_id: string; session_id: string; body: ResponseRequest },
    onText: (text: string) => void,
    turn?: AbortSignal,
  ): Promise<ResponseObject> {
    let text = "";
    for await (const event of this.#deps.client.streamSessionResponse({ ...args, ...(turn ? { signal: turn } : {}) })) {
      if (event.type === "response.output_text.delta") {
        text += event.delta;
        onText(text);
      } else if (event.type === "response.completed") return event.response;
    }
    // The client throws on a body that ends early; this is only a guard.
    throw new ServiceError({ kind: "stream", message: "The answer stream ended before the response was completed." });
  }
}

/** No answer came back: the connection failed, or a stream broke or ended early (a stream that reported an error did answer). */
const gotNoAnswer = (error: ServiceError): boolean => error.kind === "network" || (error.kind === "stream" && error.code === undefined);

/** What the person is told when a turn's call gave up on this error. */
function givenUp(error: ServiceError): string {
  if (error.status === 409) return "the agent's instance is not running";
  if (gotNoAnswer(error)) return "the agent service could not be reached";
  if (error.status === undefined || error.status >= 500) return "the agent service kept failing";
  return `the agent service refused the message (HTTP ${error.status})`;
}

/**
 * Aborted when `first` or `second` aborts, with the reason of the one that aborted first
 * (`first` when both already have), as `AbortSignal.any([first, second])`; `dispose` unhooks it
 * once it is no longer needed. `AbortSignal.any` made a composite signal with weak references
 * and a finalization entry for every turn, a measurable share of the relay's CPU (and of its
 * garbage collection); two listeners removed at the turn's end cost less.
 */
export function eitherSignal(first: AbortSignal, second: AbortSignal): { signal: AbortSignal; dispose(): void } {
  const either = new AbortController();
  const fromFirst = () => either.abort(first.reason);
  const fromSecond = () => either.abort(second.reason);
  const dispose = () => {
    first.removeEventListener("abort", fromFirst);
    second.removeEventListener("abort", fromSecond);
  };
  if (first.aborted) fromFirst();
  else if (second.aborted) fromSecond();
  else {
    first.addEventListener("abort", fromFirst, { once: true });
    second.addEventListener("abort", fromSecond, { once: true });
  }
  return { signal: either.signal, dispose };
}

/** A signal that aborts with a `StoppingError` once `daemonHalt` aborts. */
function stoppingSignal(daemonHalt: AbortSignal): AbortSignal {
  const stopping = new AbortController();
  // Every call in flight listens to it (hundreds at once under load, each removed when its call
  // ends): not a leak, so no MaxListenersExceededWarning past Node's default of 10.
  setMaxListeners(0, stopping.signal);
  if (daemonHalt.aborted) stopping.abort(new StoppingError());
  else daemonHalt.addEventListener("abort", () => stopping.abort(new StoppingError()), { once: true });
  return stopping.signal;
}
