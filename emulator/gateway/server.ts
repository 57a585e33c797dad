import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { hex } from "../../shared/random.js";
import { chainInputs, forget, record, responseOf, sessionHead } from "./conversation.js";
import { failError, parseDirective, replyText } from "./model.js";
import { invalid, parseResponsesRequest } from "./request.js";
import type { FakeGateway, GatewayError, GatewayOptions } from "./types.js";
import type { Clock } from "../../shared/clock.js";
import { completedResponse, deltaDueAt, errorBody, pacedDeltas, streamFrames, type Frame, type Turn } from "./wire.js";

/** Bodies carry a turn's text; 16 MiB is far above anything the emulator forwards (1 MiB). */
const BODY_LIMIT = 16 * 1024 * 1024;
/** Flush streamed frames in pieces of about this many characters. */
const STREAM_BATCH = 16 * 1024;

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

type Body = { ok: true; body: Buffer } | { ok: false; reason: "too_large" | "aborted" };

function readBody(req: IncomingMessage): Promise<Body> {
  return new Promise((resolve) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > BODY_LIMIT) {
      resolve({ ok: false, reason: "too_large" });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: Body) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    req.on("data", (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > BODY_LIMIT) {
        req.pause();
        settle({ ok: false, reason: "too_large" });
      } else chunks.push(chunk);
    });
    req.on("end", () => settle({ ok: true, body: Buffer.concat(chunks, size) }));
    req.on("error", () => settle({ ok: false, reason: "aborted" }));
    req.on("close", () => settle({ ok: false, reason: "aborted" }));
  });
}

const gone = (res: ServerResponse): boolean => res.destroyed || res.writableEnded;

function sendJson(res: ServerResponse, status: number, body: string, close = false): void {
  if (gone(res)) return;
  const headers: Record<string, string | number> = {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  };
  // After a refused oversized body the rest of it is not worth reading.
  if (close) headers.connection = "close";
  res.writeHead(status, headers);
  res.end(body);
}

const sendError = (res: ServerResponse, error: GatewayError, close = false): void => sendJson(res, error.status, errorBody(error), close);

/** Resolves once the response can take more data, or is gone. */
function writable(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/** How a streamed answer is sent. */
interface StreamPlan {
  /** Paced (`!stream S`): deltas spread evenly over this many ms, each written at once. */
  paceMs?: number;
  /** Delta frames in the stream (for the pacing). */
  deltaCount: number;
  /** Fault: the connection is destroyed once this many deltas were sent (before the text is done, if it has fewer). */
  resetAfterDeltas?: number;
  /** Called just before `response.completed` is written, if the client is still there; awaited (the store makes the turn durable). */
  beforeCompleted(): Promise<void>;
}

export function createStreamSender(clock: Clock) {
  /** Waits `ms` on the clock, or less if the client goes away (which aborts the stream). */
  const waitUnlessGone = (res: ServerResponse, ms: number): Promise<void> => {
    if (ms <= 0 || gone(res)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        timer.cancel();
        res.off("close", done);
        resolve();
      };
      const timer = clock.setTimeout(done, ms);
      res.on("close", done);
    });
  };

  const write = async (res: ServerResponse, text: string): Promise<void> => {
    if (text && !res.write(text)) await writable(res);
  };

  /**
   * Cuts the connection in the middle of the body: what was written is
   * flushed first (a FIN after the data, so the client reliably sees those
   * events), then the socket closes without the body's end.
   */
  const cut = async (res: ServerResponse, text: string): Promise<void> => {
    await write(res, text);
    res.socket?.end();
  };

  return async function sendStream(res: ServerResponse, frames: Iterable<Frame>, plan: StreamPlan): Promise<void> {
    if (gone(res)) return;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
    });
    const start = clock.now();
    const paced = plan.paceMs !== undefined;
    let batch = "";
    let deltas = 0;
    for (const frame of frames) {
      const isDelta = frame.type === "response.output_text.delta";
      if (isDelta || frame.type === "response.output_text.done") {
        // The fault never lets the stream complete, even when it has fewer deltas.
        if (plan.resetAfterDeltas !== undefined && (!isDelta || deltas >= plan.resetAfterDeltas)) return cut(res, batch);
        if (paced) {
          // Written in time order: what is due now goes out before the wait.
          await write(res, batch);
          batch = "";
          const due = isDelta ? deltaDueAt(deltas, plan.deltaCount, plan.paceMs!) : plan.paceMs!;
          await waitUnlessGone(res, start + due - clock.now());
          if (gone(res)) return;
        }
        if (isDelta) deltas++;
      }
      if (frame.type === "response.completed") {
        if (gone(res)) return;
        await plan.beforeCompleted();
      }
      batch += frame.text;
      if (batch.length < STREAM_BATCH && !paced) continue;
      await write(res, batch);
      batch = "";
      if (gone(res)) return;
    }
    res.end(batch);
  };
}

const injectedError = (status: number): GatewayError => ({
  status: Number.isInteger(status) && status >= 100 && status <= 599 ? status : 500,
  type: status >= 400 && status < 500 ? "invalid_request_error" : "server_error",
  code: "injected_fault",
  param: null,
  message: `Injected gateway fault (status ${status}).`,
});

const notFound = (id: string): GatewayError => invalid("previous_response_not_found", "previous_response_id", `Previous response with id '${id}' not found.`);

export function createGateway(options: GatewayOptions): FakeGateway {
  const { clock, random } = options;
  let baseUrl: string | null = null;
  let closed = false;
  // Bumped by forgetInstance, so a turn that was waiting when its instance died stores nothing.
  const generations = new Map<string, number>();
  const sendStream = createStreamSender(clock);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const instanceId = instanceOfPath(req.method, req.url);
    if (instanceId === null || (options.serves && !options.serves(instanceId))) {
      sendError(res, invalid("not_found", null, `No route for ${req.method ?? "?"} ${req.url ?? ""}.`, 404));
      return;
    }

    const generation = generations.get(instanceId) ?? 0;
    const fault = options.faultFor?.(instanceId);
    if (fault?.latencyMs !== undefined && fault.latencyMs > 0) await clock.sleep(fault.latencyMs);
    // A reset after some deltas is applied while streaming, below.
    const resetAfterDeltas = fault?.error === "reset" ? fault.resetAfterDeltas : undefined;
    if (fault?.error === "reset" && resetAfterDeltas === undefined) {
      req.socket.destroy();
      return;
    }
    if (fault?.error === "timeout") {
      // Read and drop the body, never answer; close() destroys the socket.
      req.resume();
      return;
    }
    if (fault?.status !== undefined) {
      sendError(res, injectedError(fault.status));
      return;
    }

    const body = await readBody(req);
    if (!body.ok) {
      if (body.reason === "too_large") {
        sendError(res, invalid("request_too_large", null, `Request body exceeds ${BODY_LIMIT} bytes.`, 413), true);
      }
      return;
    }
    const parsed = parseResponsesRequest(body.body);
    if (!parsed.ok) return sendError(res, parsed.error);
    const request = parsed.value;
    if (resetAfterDeltas !== undefined && !request.stream) {
      // Nothing to cut part-way: a non-streamed answer is reset before it is made.
      req.socket.destroy();
      return;
    }
    const directive = parseDirective(request.userText);
    if (!directive.ok) return sendError(res, directive.error);

    await options.prepare?.(instanceId);
    const session = sessionOf(req);
    const explicitParent = request.previousResponseId;
    if (explicitParent !== null && !responseOf(options.state(), instanceId, explicitParent)) {
      return sendError(res, notFound(explicitParent));
    }
    if (directive.value.kind === "fail") return sendError(res, failError(directive.value.status));

    const wanted = directive.value;
    if (wanted.kind === "sleep") await clock.sleep(wanted.ms);
    // `!stream S` without `stream: true` is a slow answer, like `!sleep`.
    if (wanted.kind === "stream" && !request.stream) await clock.sleep(wanted.ms);

    // The parent is settled when the turn completes, so concurrent turns of one
    // session chain one after another instead of forking from the same head.
    // (A streamed turn names its parent in its first event, so it is settled when the stream starts.)
    const state = options.state();
    if (explicitParent !== null && !responseOf(state, instanceId, explicitParent)) {
      return sendError(res, notFound(explicitParent));
    }
    const parentId = explicitParent ?? sessionHead(state, instanceId, session);
    const text = replyText(wanted, request.userText, () => chainInputs(state, parentId));
    const turn: Turn = {
      id: `resp_${hex(random, 16)}`,
      messageId: `msg_${hex(random, 16)}`,
      createdAt: Math.floor(clock.now() / 1000),
      model: request.model,
      parentId,
      instructions: request.instructions,
      inputText: request.userText,
      text,
    };
    const store = async (): Promise<void> => {
      if (closed || (generations.get(instanceId) ?? 0) !== generation) return;
      const response = {
        id: turn.id,
        instance_id: instanceId,
        session,
        parent_id: parentId,
        input_text: request.userText,
        output_text: text,
        model: request.model,
        created_at: turn.createdAt,
      };
      record(state, response);
      // Answered once the store says the turn is kept.
      await options.onChange({ kind: "record", response });
      options.onTurn?.(response);
    };

    if (!request.stream) {
      await store();
      sendJson(res, 200, JSON.stringify(completedResponse(turn)));
      return;
    }
    // A streamed turn joins the conversation when it completes: a stream the
    // client closed (or a reset cut) before `response.completed` stores nothing.
    const deltas = wanted.kind === "stream" ? pacedDeltas(text, wanted.ms) : undefined;
    await sendStream(res, streamFrames(turn, deltas), {
      ...(wanted.kind === "stream" ? { paceMs: wanted.ms } : {}),
      deltaCount: deltas?.length ?? 0,
      ...(resetAfterDeltas !== undefined ? { resetAfterDeltas } : {}),
      beforeCompleted: store,
    });
  }

  const server = createServer({ keepAlive: true, noDelay: true }, (req, res) => {
    // A write after the client left must not become an unhandled 'error'.
    res.on("error", () => {});
    handle(req, res).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      sendError(res, { status: 500, type: "server_error", code: null, param: null, message: `Gateway error: ${message}` });
    });
  });
  // Longer than clients' idle pools, so a reused socket is not closed under a request.
  server.keepAliveTimeout = 30_000;

  const gateway: FakeGateway = {
    listen(port = 0, host = "127.0.0.1") {
      return new Promise<string>((resolve, reject) => {
        const onError = (error: Error) => reject(error);
        server.once("error", onError);
        server.listen(port, host, () => {
          server.off("error", onError);
          closed = false;
          const address = server.address() as AddressInfo;
          // A wildcard address is reached through loopback.
          const reachable = address.address === "0.0.0.0" ? "127.0.0.1" : address.address === "::" ? "::1" : address.address;
          baseUrl = `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${address.port}`;
          resolve(baseUrl);
        });
      });
    },
    get url(): string {
      if (baseUrl === null) throw new Error("The fake gateway is not listening.");
      return baseUrl;
    },
    urlFor(instanceId) {
      return `${gateway.url}/instances/${encodeURIComponent(instanceId)}`;
    },
    forgetInstance(instanceId) {
      generations.set(instanceId, (generations.get(instanceId) ?? 0) + 1);
      forget(options.state(), instanceId);
      // Always told: a store may hold conversations it has not read into memory.
      void options.onChange({ kind: "forget", instanceId });
    },
    close() {
      closed = true;
      baseUrl = null;
      if (!server.listening) return Promise.resolve();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  return gateway;
}
