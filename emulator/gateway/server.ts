/**
 * The fake gateway's server: routes `POST /instances/:id/v1/responses`, applies
 * injected faults, and answers each turn in five named steps (see `handle`);
 * `/v1/audio/transcriptions` is its speech-to-text endpoint (transcription.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { hex } from "../../shared/random.js";
import { chainInputs, forget, record, responseOf, sessionHead } from "./conversation.js";
import { fileBytes, FILE_DIR } from "./media.js";
import { type Directive, parseDirective, replyText } from "./model.js";
import { type Plan, planTurn } from "./plan.js";
import { itemText, recordOf, type Reply, replyText as textOf } from "./reply.js";
import { invalid, parseResponsesRequest, type ResponsesRequest } from "./request.js";
import type { NewId } from "./script/answer.js";
import { BODY_LIMIT, gone, readBody, sendError, sendJson } from "./http.js";
import { createStreamSender } from "./stream-sender.js";
import type { GatewayError } from "./reply.js";
import type { FakeGateway, GatewayOptions, GatewayState, StoredResponse } from "./types.js";
import { finalResponse, pacedDeltas, streamFrames, type Turn } from "./wire.js";
import { withoutUndefined } from "../../shared/util/without-undefined.js";
import { handleTranscription, isTranscriptionRequest } from "./transcription.js";
import { LISTEN_BACKLOG } from "../../shared/listen.js";
import type { Duplex } from "node:stream";
import { duplexPair } from "./in-process.js";

/** Names the script rule that answered a turn (percent-encoded). */
export const RULE_HEADER = "x-emulator-model-rule";

const ROUTE = /^\/instances\/([^/]+)\/v1\/responses$/;

function instanceOfPath(method: string | undefined, url: string | undefined): string | null {
  if (method !== "POST" || url === undefined) return null;
  const query = url.indexOf("?");
  const match = ROUTE.exec(query === -1 ? url : url.slice(0, query));
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]!) || null;
  } catch {
    return null;
  }
}

function sessionOf(req: IncomingMessage): string {
  const header = req.headers["x-session-key"];
  const value = Array.isArray(header) ? header[0] : header;
  return value ? value : "main";
}

const injectedError = (status: number): GatewayError => ({
  status: Number.isInteger(status) && status >= 100 && status <= 599 ? status : 500,
  type: status >= 400 && status < 500 ? "invalid_request_error" : "server_error",
  code: "injected_fault",
  param: null,
  message: `Injected gateway fault (status ${status}).`,
});

/** What a turn's stored record keeps: its texts, and its items when it was more than the echo. */
function storedOf(turn: Turn, instanceId: string, session: string): StoredResponse {
  const answer = recordOf(turn.reply);
  return {
    id: turn.id,
    instance_id: instanceId,
    session,
    parent_id: turn.parentId,
    input_text: turn.inputText,
    output_text: textOf(turn.reply.items),
    model: turn.model,
    created_at: turn.createdAt,
    ...(answer ? { answer } : {}),
  };
}

/** A request let through by its route and faults. */
interface Admitted {
  instanceId: string;
  /** The instance's generation when the request arrived: a turn of a deleted instance stores nothing. */
  generation: number;
  /** A reset fault that cuts a streamed answer after this many deltas. */
  resetAfterDeltas: number | undefined;
}

/** What answers a turn, and where it belongs. */
interface Planned {
  plan: Exclude<Plan, { kind: "error" }>;
  session: string;
  explicitParent: string | null;
}

/** A turn made, with where it is stored. */
interface StoredTurn {
  turn: Turn;
  instanceId: string;
  session: string;
  /** The state its parent was settled in (a reset or import meanwhile leaves it out of the new one). */
  state: GatewayState;
}

/** Sends the error and stops the turn (a step's `null`). */
const refuse = (res: ServerResponse, error: GatewayError): null => {
  sendError(res, error);
  return null;
};

const notFound = (id: string): GatewayError => invalid("previous_response_not_found", "previous_response_id", `Previous response with id '${id}' not found.`);

/**
 * OpenAI's rule for a chain: a response that called functions is continued
 * (`previous_response_id`) only with a `function_call_output` for each call;
 * the first call left without one, else undefined.
 */
function unansweredCall(parent: StoredResponse | undefined, request: ResponsesRequest): string | undefined {
  const answered = new Set(request.toolOutputs.map((o) => o.callId));
  for (const item of parent?.answer?.items ?? []) if (item.type === "function_call" && !answered.has(item.call_id)) return item.call_id;
  return undefined;
}

export function createGateway(options: GatewayOptions): FakeGateway {
  return new GatewayServer(options);
}

/** The fake gateway: an HTTP server answering turns, and what it keeps between them. */
class GatewayServer implements FakeGateway {
  readonly #options: GatewayOptions;
  readonly #clock: GatewayOptions["clock"];
  readonly #random: GatewayOptions["random"];
  /** The reachable base URL while listening; null before listen and after close. */
  #baseUrl: string | null = null;
  /** Set by close (unset by listen): a turn finishing meanwhile stores nothing. */
  #closed = false;
  /** Per instance, bumped by forgetInstance: a turn that was waiting when its instance died stores nothing. */
  readonly #generations = new Map<string, number>();
  /** Sends streamed answers on the gateway's clock. */
  readonly #sendStream: ReturnType<typeof createStreamSender>;
  /** The HTTP server; one per gateway, listening between listen() and close(). */
  readonly #server: Server;
  /** Its in-process connections (connectInProcess), destroyed by close() as its TCP ones are. */
  readonly #inProcess = new Set<Duplex>();
  /** Ids of output items, from the gateway's randomness (a seed repeats them). */
  readonly #newId: NewId = (prefix) => `${prefix}_${hex(this.#random, 16)}`;

  constructor(options: GatewayOptions) {
    this.#options = options;
    this.#clock = options.clock;
    this.#random = options.random;
    this.#sendStream = createStreamSender(options.clock);
    this.#server = createServer({ keepAlive: true, noDelay: true }, (req, res) => this.#onRequest(req, res));
    // Longer than clients' idle pools, so a reused socket is not closed under a request.
    this.#server.keepAliveTimeout = 30_000;
  }

  /** One request, from its route to its answer: each step answers the client itself when it stops the turn. */
  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const admitted = await this.#admit(req, res);
    if (!admitted) return;
    const request = await this.#readRequest(req, res, admitted);
    if (!request) return;
    const planned = await this.#plan(req, res, admitted.instanceId, request);
    if (!planned) return;
    await this.#waitBeforeAnswer(planned.plan, request);
    const turn = await this.#makeTurn(res, admitted.instanceId, request, planned);
    if (!turn) return;
    await this.#deliver(res, turn, request, planned.plan, admitted);
  }

  /** Step 1: the route and the injected fault, applied before the request is read. */
  async #admit(req: IncomingMessage, res: ServerResponse): Promise<Admitted | null> {
    const instanceId = instanceOfPath(req.method, req.url);
    if (instanceId === null || (this.#options.serves && !this.#options.serves(instanceId))) {
      sendError(res, invalid("not_found", null, `No route for ${req.method ?? "?"} ${req.url ?? ""}.`, 404));
      return null;
    }
    const generation = this.#generations.get(instanceId) ?? 0;
    const fault = this.#options.faultFor?.(instanceId);
    if (fault?.latencyMs !== undefined && fault.latencyMs > 0) await this.#clock.sleep(fault.latencyMs);
    // A reset after some deltas is applied while streaming (deliver).
    const resetAfterDeltas = fault?.error === "reset" ? fault.resetAfterDeltas : undefined;
    if (fault?.error === "reset" && resetAfterDeltas === undefined) {
      req.socket.destroy();
      return null;
    }
    if (fault?.error === "timeout") {
      // Read and drop the body, never answer; close() destroys the socket.
      req.resume();
      return null;
    }
    if (fault?.status !== undefined) {
      sendError(res, injectedError(fault.status));
      return null;
    }
    return { instanceId, generation, resetAfterDeltas };
  }

  /** Step 2: the body, read and checked. */
  async #readRequest(req: IncomingMessage, res: ServerResponse, admitted: Admitted): Promise<ResponsesRequest | null> {
    const body = await readBody(req);
    if (!body.ok) {
      if (body.reason === "too_large") {
        sendError(res, invalid("request_too_large", null, `Request body exceeds ${BODY_LIMIT} bytes.`, 413), true);
      }
      return null;
    }
    const parsed = parseResponsesRequest(body.body);
    if (!parsed.ok) {
      sendError(res, parsed.error);
      return null;
    }
    if (admitted.resetAfterDeltas !== undefined && !parsed.value.stream) {
      // Nothing to cut part-way: a non-streamed answer is reset before it is made.
      req.socket.destroy();
      return null;
    }
    return parsed.value;
  }

  /** Step 3: which part of the model answers (a script rule, a directive, a default, the echo); a rule that fires is counted. */
  async #plan(req: IncomingMessage, res: ServerResponse, instanceId: string, request: ResponsesRequest): Promise<Planned | null> {
    const directive = parseDirective(request.userText);
    const rules =
      this.#options.scripts?.rulesFor({ instanceId, ...withoutUndefined({ sandboxId: this.#options.sandboxOf?.(instanceId) }) }, this.#clock.now()) ?? [];
    // Without a script, a bad directive is refused first, as it always was.
    if (!rules.length && !directive.ok) return refuse(res, directive.error);
    await this.#options.prepare?.(instanceId);
    const session = sessionOf(req);
    const explicitParent = request.previousResponseId;
    if (explicitParent !== null && !responseOf(this.#options.state(), instanceId, explicitParent)) return refuse(res, notFound(explicitParent));
    const unanswered = explicitParent === null ? undefined : unansweredCall(responseOf(this.#options.state(), instanceId, explicitParent), request);
    if (unanswered !== undefined) return refuse(res, invalid("missing_tool_output", "input", `No tool output found for function call ${unanswered}.`));
    const chosen = planTurn({
      request,
      directive,
      session,
      rules,
      turnNumber: () => chainInputs(this.#options.state(), explicitParent ?? sessionHead(this.#options.state(), instanceId, session)).length + 1,
      newId: this.#newId,
    });
    if (chosen.kind !== "echo" && chosen.rule) this.#options.scripts?.fired(chosen.rule, this.#clock.now());
    if (chosen.kind === "error") return refuse(res, chosen.error);
    return { plan: chosen, session, explicitParent };
  }

  /** Step 4 (after the waits): the turn, its parent settled and its reply made. */
  async #makeTurn(res: ServerResponse, instanceId: string, request: ResponsesRequest, planned: Planned): Promise<StoredTurn | null> {
    // The parent is settled when the turn completes, so concurrent turns of one
    // session chain one after another instead of forking from the same head.
    // (A streamed turn names its parent in its first event, so it is settled when the stream starts.)
    const state = this.#options.state();
    const { explicitParent, session } = planned;
    if (explicitParent !== null && !responseOf(state, instanceId, explicitParent)) return refuse(res, notFound(explicitParent));
    const parentId = explicitParent ?? sessionHead(state, instanceId, session);
    // Drawn before the echo's message id, in the order ids were always drawn (a seed repeats them).
    const id = `resp_${hex(this.#random, 16)}`;
    let reply: Reply;
    if (planned.plan.kind === "echo") {
      const made = await this.#echoReply(instanceId, planned.plan.directive, request, () => chainInputs(state, parentId));
      if (!made.ok) return refuse(res, made.error);
      reply = made.reply;
    } else reply = planned.plan.reply;
    const turn: Turn = {
      id,
      createdAt: Math.floor(this.#clock.now() / 1000),
      model: request.model,
      parentId,
      instructions: request.instructions,
      inputText: request.userText,
      reply,
    };
    return { turn, instanceId, session, state };
  }

  /** Stores a turn and makes it its session's head, unless the instance was deleted meanwhile or the answer failed. */
  async #store({ turn, instanceId, session, state }: StoredTurn, generation: number): Promise<void> {
    if (this.#closed || (this.#generations.get(instanceId) ?? 0) !== generation || turn.reply.status === "failed") return;
    const response = storedOf(turn, instanceId, session);
    record(state, response);
    // Answered once the store says the turn is kept.
    await this.#options.onChange({ kind: "record", response });
    this.#options.onTurn?.(response);
  }

  /** Step 5: the answer, whole or streamed; stored first, or (streamed) just before its last event. */
  async #deliver(res: ServerResponse, stored: StoredTurn, request: ResponsesRequest, chosen: Plan, admitted: Admitted): Promise<void> {
    const { turn } = stored;
    const { reply } = turn;
    // The rule that answered, for the request log (the body's `metadata` says it too).
    if (reply.rule !== undefined && !gone(res)) res.setHeader(RULE_HEADER, encodeURIComponent(reply.rule));
    if (!request.stream) {
      await this.#store(stored, admitted.generation);
      sendJson(res, 200, JSON.stringify(finalResponse(turn)));
      return;
    }
    // A streamed turn joins the conversation when it completes: a stream the
    // client closed (or a reset cut) before `response.completed` stores nothing.
    const paceMs = chosen.kind === "echo" ? (chosen.directive.kind === "stream" ? chosen.directive.ms : undefined) : reply.streamMs;
    const split = paceMs !== undefined ? (text: string) => pacedDeltas(text, paceMs) : undefined;
    const deltaCount = split ? reply.items.reduce((n, item) => n + split(itemText(item)).length, 0) : 0;
    await this.#sendStream(res, streamFrames(turn, split), {
      ...(paceMs !== undefined ? { paceMs } : {}),
      deltaCount,
      ...(admitted.resetAfterDeltas !== undefined ? { resetAfterDeltas: admitted.resetAfterDeltas } : {}),
      beforeCompleted: () => this.#store(stored, admitted.generation),
    });
  }

  /** The waits before an answer: a rule's latency, `!sleep`, and `!stream S` asked without streaming (a slow answer). */
  async #waitBeforeAnswer(plan: Plan, request: ResponsesRequest): Promise<void> {
    if (plan.kind === "reply" && plan.reply.latencyMs) await this.#clock.sleep(plan.reply.latencyMs);
    if (plan.kind !== "echo") return;
    const wanted = plan.directive;
    if (wanted.kind === "sleep") await this.#clock.sleep(wanted.ms);
    if (wanted.kind === "stream" && !request.stream) await this.#clock.sleep(wanted.ms);
  }

  /** The echo's or a directive's one text message; `!file` writes its file first. */
  async #echoReply(
    instanceId: string,
    directive: Directive,
    request: ResponsesRequest,
    earlierInputs: () => string[],
  ): Promise<{ ok: true; reply: Reply } | { ok: false; error: GatewayError }> {
    if (directive.kind === "file") {
      if (!this.#options.writeFile)
        return {
          ok: false,
          error: { ...invalid("not_supported", "input", "This gateway cannot write files: !file is not available.", 501), type: "server_error" },
        };
      await this.#options.writeFile(instanceId, `${FILE_DIR}/${directive.name}`, fileBytes(directive.fileKind, directive.name));
    }
    const text = replyText(directive, request.userText, earlierInputs);
    return { ok: true, reply: { items: [{ type: "message", id: this.#newId("msg"), text }], status: "completed", plain: true } };
  }

  /** Every request: answered in its instance's sandbox when it has one; an unexpected error is a 500 in the OpenAI shape. */
  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    // A write after the client left must not become an unhandled 'error'.
    res.on("error", () => {});
    if (isTranscriptionRequest(req.url)) {
      void handleTranscription(req, res, this.#clock).catch(() =>
        sendError(res, { status: 500, type: "server_error", code: null, param: null, message: "Gateway error." }),
      );
      return;
    }
    const answer = () =>
      this.#handle(req, res).catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        sendError(res, { status: 500, type: "server_error", code: null, param: null, message: `Gateway error: ${message}` });
      });
    // In its instance's sandbox, the turn's waits (!sleep, !stream, fault latencies) run on that sandbox's clock.
    const instanceId = instanceOfPath(req.method, req.url);
    const sandboxId = instanceId === null ? undefined : this.#options.sandboxOf?.(instanceId);
    if (sandboxId !== undefined && this.#options.inSandbox) this.#options.inSandbox(sandboxId, answer);
    else void answer();
  }

  listen(port = 0, host = "127.0.0.1"): Promise<string> {
    const server = this.#server;
    return new Promise<string>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      server.once("error", onError);
      // The API's accept queue (shared/listen.ts): a burst of first turns opens as many connections here.
      server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
        server.off("error", onError);
        this.#closed = false;
        const address = server.address() as AddressInfo;
        // A wildcard address is reached through loopback.
        const reachable = address.address === "0.0.0.0" ? "127.0.0.1" : address.address === "::" ? "::1" : address.address;
        this.#baseUrl = `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${address.port}`;
        resolve(this.#baseUrl);
      });
    });
  }

  get url(): string {
    if (this.#baseUrl === null) throw new Error("The fake gateway is not listening.");
    return this.#baseUrl;
  }

  urlFor(instanceId: string): string {
    return `${this.url}/instances/${encodeURIComponent(instanceId)}`;
  }

  connectInProcess(): Duplex | undefined {
    if (!this.#server.listening) return undefined;
    const [client, server] = duplexPair();
    this.#inProcess.add(server);
    server.once("close", () => this.#inProcess.delete(server));
    this.#server.emit("connection", server);
    return client;
  }

  forgetInstance(instanceId: string): void {
    this.#generations.set(instanceId, (this.#generations.get(instanceId) ?? 0) + 1);
    forget(this.#options.state(), instanceId);
    this.#options.scripts?.clear({ kind: "instance", instanceId });
    // Always told: a store may hold conversations it has not read into memory.
    void this.#options.onChange({ kind: "forget", instanceId });
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#baseUrl = null;
    const server = this.#server;
    for (const socket of this.#inProcess) socket.destroy();
    if (!server.listening) return Promise.resolve();
    return new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
