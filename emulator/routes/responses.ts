/**
 * Messaging: both responses routes proxy to the instance's gateway over real
 * HTTP through one keep-alive pool. Gateway 4xx pass through unchanged; a
 * gateway that cannot be reached, answers 5xx or breaks the exchange is a 502.
 * `stream: true` is relayed as server-sent events, frame by frame.
 */
import type { ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { request } from "undici";
import type { EmulatorEnv } from "../env.js";
import { ApiError, badGateway, conflict } from "../errors.js";
import { sessionHeader } from "../gateway/session-key.js";
import { HANDLED, type Ctx, type Handlers } from "../http/router.js";
import type { Routes } from "../../shared/api.js";

type ResponseHandlers = Pick<Handlers, "createResponse" | "createSessionResponse">;

const MAX_SESSION_ID = 256;

/** Gateway headers a caller relies on: when to retry a 429, and which model-script rule answered. */
const RELAYED_HEADERS = ["retry-after", "retry-after-ms", "x-emulator-model-rule"];

function relayHeaders(upstream: Dispatcher.ResponseData, res: ServerResponse): void {
  for (const name of RELAYED_HEADERS) {
    const value = upstream.headers[name];
    if (typeof value === "string") res.setHeader(name, value);
  }
}

export function responseHandlers(env: EmulatorEnv): ResponseHandlers {
  async function relay(ctx: Ctx<Routes["createResponse"]>, sessionKey: string): Promise<typeof HANDLED> {
    const { instance, body, res } = ctx;
    // The sandbox journal's `session` (the default session is `main`).
    res.locals.session = sessionKey;
    if (instance.status !== "running") throw conflict(`Instance is not running (status: ${instance.status}).`);
    // A client that leaves aborts the gateway call, so a stream it closes stops upstream too.
    const leaving = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) leaving.abort();
    };
    res.on("close", onClose);
    let upstream: Dispatcher.ResponseData;
    try {
      // Inside the try: a gateway that is not listening has no address at all.
      const url = `${env.gatewayUrlOf(instance)}/v1/responses`;
      upstream = await request(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: body.stream ? "text/event-stream" : "application/json",
          "x-session-key": sessionHeader(sessionKey),
        },
        body: JSON.stringify(body),
        dispatcher: env.gatewayDispatcher,
        headersTimeout: env.settings.gatewayTimeoutMs,
        bodyTimeout: env.settings.gatewayTimeoutMs,
        signal: leaving.signal,
      });
    } catch (error) {
      res.off("close", onClose);
      throw badGateway(`The instance gateway could not be reached: ${describe(error)}.`);
    }
    if (leaving.signal.aborted) {
      upstream.body.destroy();
      return HANDLED;
    }
    const status = upstream.statusCode;
    if (status < 500) relayHeaders(upstream, res);
    if (status >= 500) {
      await upstream.body.dump().catch(() => {});
      throw badGateway(`The instance gateway answered HTTP ${status}.`);
    }
    if (status >= 400) {
      const text = await readAll(upstream);
      res
        .status(status)
        .type(String(upstream.headers["content-type"] ?? "application/json"))
        .send(text);
      return HANDLED;
    }
    const type = String(upstream.headers["content-type"] ?? "");
    if (type.startsWith("text/event-stream")) {
      res.status(200);
      res.setHeader("content-type", "text/event-stream; charset=utf-8");
      res.setHeader("cache-control", "no-cache");
      res.flushHeaders();
      try {
        // Each piece is written as it arrives: nothing in between buffers a stream.
        for await (const chunk of upstream.body) {
          if (!res.write(chunk)) await drained(res);
          if (leaving.signal.aborted) break;
        }
        if (leaving.signal.aborted) upstream.body.destroy();
        else res.end();
      } catch {
        // The gateway broke mid-stream: the status is already sent, so cut the stream.
        res.destroy();
      }
      return HANDLED;
    }
    const text = await readAll(upstream);
    try {
      JSON.parse(text);
    } catch {
      throw badGateway("The instance gateway sent a response that is not JSON.");
    }
    res.status(200).type("application/json").send(text);
    return HANDLED;
  }

  return {
    createResponse: (ctx) => relay(ctx, "main"),
    createSessionResponse(ctx) {
      const session = ctx.params.session_id;
      if (session.length > MAX_SESSION_ID) {
        throw new ApiError(422, [{ loc: ["path", "session_id"], msg: `Too long: at most ${MAX_SESSION_ID} characters`, type: "too_big" }]);
      }
      return relay(ctx as unknown as Ctx<Routes["createResponse"]>, session);
    },
  };
}

/** Resolves when the client can take more, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}

async function readAll(upstream: Dispatcher.ResponseData): Promise<string> {
  try {
    return await upstream.body.text();
  } catch (error) {
    throw badGateway(`The instance gateway broke the exchange: ${describe(error)}.`);
  }
}

function describe(error: unknown): string {
  if (error && typeof error === "object") {
    const code = "code" in error ? String(error.code) : "";
    if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") return "timed out";
    if (code) return code;
  }
  return error instanceof Error ? error.message : "unknown error";
}
