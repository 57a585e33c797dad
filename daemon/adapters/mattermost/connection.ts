/**
 * Mattermost's WebSocket (GET /api/v4/websocket), the way its own web client
 * (@mattermost/client's WebSocketClient) speaks it; that class needs a global
 * WebSocket and CloseEvent, which Node 20 lacks, so the same protocol runs
 * here over undici's WebSocket, on the injected clock and the one reconnect loop:
 *
 * - after the socket opens, `authentication_challenge` with the token; the
 *   server answers `{status: "OK", seq_reply}`;
 * - events carry `seq`, counting from 0 on each server connection; the first
 *   of a new one is `hello` with its `connection_id`;
 * - a reconnect names `connection_id` and `sequence_number` (the next seq
 *   expected): the server replays what this connection missed from its queue
 *   and sends no hello; when it no longer has them it starts a new connection
 *   (a hello with another `connection_id`), and what was missed must be
 *   fetched (catch-up.ts);
 * - a seq out of order means an event was lost: reconnect, so the server replays;
 * - `ping` is answered `pong`; a ping unanswered for an interval means the
 *   socket is deaf.
 */
import type { Logger } from "pino";
import { WebSocket } from "undici";
import { z } from "zod";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import { type ReconnectLoop, type ReconnectVerdict, type SessionContext, startReconnectLoop } from "../../helpers/reconnect.js";
import type { AdapterStatusEvent } from "../../vocabulary/adapter.js";

const frameSchema = z.union([
  z.object({ seq_reply: z.number(), status: z.string().optional(), error: z.unknown().optional() }),
  z.object({ event: z.string(), seq: z.number(), data: z.record(z.string(), z.unknown()).default({}), broadcast: z.unknown().optional() }),
]);

export interface SocketEvent {
  event: string;
  data: Record<string, unknown>;
}

export interface ConnectionTuning {
  /** Ping interval; a ping unanswered by the next one closes the socket. Default 30 s (the web client's). */
  pingIntervalMs: number;
  backoffInitialMs: number;
  backoffMaxMs: number;
}

export const defaultConnectionTuning: ConnectionTuning = { pingIntervalMs: 30_000, backoffInitialMs: 1_000, backoffMaxMs: 60_000 };

export interface ConnectionDeps {
  baseUrl: string;
  token: string;
  clock: Clock;
  random: Random;
  log: Logger;
  tuning: ConnectionTuning;
  onEvent(event: SocketEvent): void;
  /** A new server connection began (a hello with a connection id not seen before): what it did not replay must be fetched. */
  onNewConnection(): void;
  report(event: AdapterStatusEvent): void;
}

export interface SocketConnection {
  /** Resolves once the first connection is authenticated; rejects when the token is refused. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export class TokenRefused extends Error {
  override readonly name = "TokenRefused";
}

/** A socket that closed; `deaf` when it was closed for an unanswered ping. */
class SocketClosed extends Error {
  override readonly name = "SocketClosed";
  constructor(readonly deaf: boolean) {
    super("socket closed");
  }
}

/** A refused token ends the channel; any close is made good by a new socket (resuming by seq). */
function closeVerdict(error: unknown): ReconnectVerdict {
  if (error instanceof TokenRefused) return { fatal: true, detail: "the WebSocket refused the token" };
  return { reason: error instanceof SocketClosed && error.deaf ? "deaf" : "closed", detail: "socket closed" };
}

export function createSocketConnection(deps: ConnectionDeps): SocketConnection {
  const { clock, log, tuning } = deps;
  const url = `${deps.baseUrl.replace(/^http/, "ws")}/api/v4/websocket`;
  let connectionId = "";
  let nextSeq = 0;
  let socket: WebSocket | null = null;
  let pingTimer: Timer | null = null;
  let stopping = new AbortController();
  let loop: ReconnectLoop | null = null;

  /** One socket, as a session of the reconnect loop: settles when it closes. */
  function open(ctx: SessionContext): Promise<void> {
    let settle: (error: Error) => void = () => undefined;
    const closed = new Promise<void>((_, reject) => {
      settle = reject;
    });
    const ws = new WebSocket(`${url}?connection_id=${encodeURIComponent(connectionId)}&sequence_number=${nextSeq}`);
    socket = ws;
    let replySeq = 1;
    const authSeq = replySeq++;
    let pingSeq = 0;
    let deaf = false;
    let refused = false;
    const send = (action: string, data: Record<string, unknown>, seq: number) => ws.send(JSON.stringify({ seq, action, data }));

    ws.addEventListener("open", () => send("authentication_challenge", { token: deps.token }, authSeq));
    ws.addEventListener("message", (message) => {
      if (typeof message.data !== "string") return;
      const parsed = parseFrame(message.data);
      if (!parsed) {
        log.warn("mattermost socket frame not understood");
        return;
      }
      if ("seq_reply" in parsed) {
        if (parsed.seq_reply === authSeq) {
          if (parsed.status !== "OK") {
            refused = true;
            ws.close();
            return;
          }
          ctx.connected();
          schedulePing();
        } else if (parsed.seq_reply === pingSeq) {
          pingSeq = 0;
        }
        return;
      }
      if (parsed.event === "hello") {
        const id = typeof parsed.data.connection_id === "string" ? parsed.data.connection_id : "";
        // A hello starts a server connection: its events count from its own seq.
        nextSeq = parsed.seq;
        if (id !== connectionId) {
          connectionId = id;
          deps.onNewConnection();
        }
      }
      if (parsed.seq !== nextSeq) {
        log.info({ expected: nextSeq, got: parsed.seq }, "mattermost socket missed an event: reconnecting for the replay");
        ws.close();
        return;
      }
      nextSeq = parsed.seq + 1;
      deps.onEvent({ event: parsed.event, data: parsed.data });
    });
    ws.addEventListener("close", () => {
      pingTimer?.cancel();
      ctx.signal.removeEventListener("abort", closeSocket);
      if (socket === ws) socket = null;
      settle(refused ? new TokenRefused("Mattermost refused the token on the WebSocket") : new SocketClosed(deaf));
    });
    ws.addEventListener("error", () => log.debug("mattermost socket error"));
    const closeSocket = () => ws.close();
    ctx.signal.addEventListener("abort", closeSocket, { once: true });

    function schedulePing(): void {
      pingTimer = clock.setTimeout(() => {
        if (socket !== ws) return;
        if (pingSeq !== 0) {
          deaf = true;
          ws.close();
          return;
        }
        pingSeq = replySeq++;
        send("ping", {}, pingSeq);
        schedulePing();
      }, tuning.pingIntervalMs);
    }
    return closed;
  }

  return {
    start() {
      stopping = new AbortController();
      deps.report({ state: "starting" });
      return new Promise<void>((resolve, reject) => {
        loop = startReconnectLoop({
          session: open,
          classify: closeVerdict,
          clock,
          random: deps.random,
          backoff: { baseMs: tuning.backoffInitialMs, maxMs: tuning.backoffMaxMs },
          signal: stopping.signal,
          onStatus: (status) => {
            if (status.state === "connected") {
              deps.report({ state: "connected" });
              resolve();
            } else if (status.state === "reconnecting") {
              deps.report({ state: "reconnecting", reason: status.reason ?? "closed", detail: `${status.detail}; again in ${status.delayMs} ms` });
            } else if (status.state === "failed") {
              deps.report({ state: "failed", detail: status.detail });
              reject(status.error);
            }
          },
        });
      });
    },
    async stop() {
      stopping.abort();
      await loop?.done;
    },
  };
}

function parseFrame(text: string): z.output<typeof frameSchema> | undefined {
  try {
    const parsed = frameSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
