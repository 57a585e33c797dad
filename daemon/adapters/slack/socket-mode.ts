/**
 * Socket Mode (used by connection.ts), kept connected and never connected but deaf. Each connection
 * is one `@slack/socket-mode` client with its own reconnects off; this
 * supervisor decides when there is a new one:
 * - Slack's `disconnect` (refresh_requested, warning, ...) opens the next
 *   connection at once, beside the old one Slack is about to close; an
 *   envelope the old one could not acknowledge is sent again by Slack (its
 *   rule: unacknowledged envelopes come back), and the core's dedupe drops a
 *   second copy;
 * - a connection that closes by itself is replaced after a pause of the
 *   project's one reconnect loop (daemon/helpers/reconnect.ts), growing while
 *   attempts fail;
 * - the watchdog: a connection that is up while no envelope has come for
 *   `deafAfterMs`, after envelopes came before, is replaced (the field's most
 *   reported Slack failure: the socket is up, no events arrive). The sink hears
 *   "reconnecting" with reason "deaf", which /healthz and /metrics count
 *   (`agent_bridge_adapter_reconnects_total{reason="deaf"}`).
 * A refused app token (invalid_auth, not_allowed_token_type, ...) is "failed"
 * and not tried again.
 */
import type { Logger } from "pino";
import type { Logger as SlackLogger, SocketModeClient } from "@slack/socket-mode";
import { LogLevel, SocketModeClient as Client } from "@slack/socket-mode";
import type { Clock, Timer } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import type { AdapterStatusEvent } from "../../vocabulary/adapter.js";
import { type ReconnectLoop, type ReconnectStatus, type ReconnectVerdict, type SessionContext, startReconnectLoop } from "../../helpers/reconnect.js";
import type { EventVerdict } from "./events.js";

export interface SocketTuning {
  /** First pause before a new connection after one failed, ms. Default 1 000. */
  backoffInitialMs: number;
  /** Ceiling of any one pause, ms. Default 120 000. */
  backoffMaxMs: number;
  /** Longest a connection may take to say hello, ms. Default 30 000. */
  connectTimeoutMs: number;
}

export const defaultSocketTuning: SocketTuning = { backoffInitialMs: 1000, backoffMaxMs: 120_000, connectTimeoutMs: 30_000 };

/** apps.connections.open errors the same token would get again. */
const PERMANENT = new Set([
  "not_authed",
  "invalid_auth",
  "account_inactive",
  "token_revoked",
  "not_allowed_token_type",
  "team_disabled",
  "user_removed_from_team",
]);

export interface SocketDeps {
  appToken: string;
  /** Web API base ("https://slack.com/api"). */
  api: string;
  /** 0: no watchdog. */
  deafAfterMs: number;
  clock: Clock;
  random: Random;
  log: Logger;
  redact(text: string): string;
  report(event: AdapterStatusEvent): void;
  /** One `events_api` envelope's payload; resolves with whether to acknowledge it. */
  onEvent(payload: unknown, retry: { num: number; reason: string } | undefined): Promise<EventVerdict>;
  /** One `slash_commands` envelope's payload; acknowledged either way (Slack does not send a command again). */
  onCommand(payload: unknown): Promise<EventVerdict>;
  /** One `interactive` envelope's payload (a tap); acknowledged either way (Slack does not send it again). */
  onAction(payload: unknown): Promise<EventVerdict>;
  tuning: SocketTuning;
}

export interface SocketConnection {
  /** Resolves once connected, or once a first attempt failed in a way retrying may fix; rejects on a refused token. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createSocketConnection(deps: SocketDeps): SocketConnection {
  return new SocketSupervisor(deps);
}

/** Thrown for a token Slack refuses: retrying cannot help. */
export class SocketRefused extends Error {
  override readonly name = "SocketRefused";
}

/** Why a connection is being replaced at once, beside the old one (Slack's refresh, the watchdog). */
class Replaced extends Error {
  override readonly name = "Replaced";
  constructor(
    message: string,
    readonly reason: "refresh" | "deaf",
  ) {
    super(message);
  }
}

/** The socket closed by itself. */
class Closed extends Error {
  override readonly name = "Closed";
  constructor() {
    super("the socket mode connection closed");
  }
}

/** A refused token is fatal; a replacement goes at once; anything else waits the backoff. */
function socketVerdict(error: unknown): ReconnectVerdict {
  if (error instanceof SocketRefused) return { fatal: true };
  if (error instanceof Replaced) return { atOnce: true, reason: error.reason };
  if (error instanceof Closed) return { reason: "closed" };
  return {};
}

class SocketSupervisor implements SocketConnection {
  /** The app token, the clock, the backoff and where envelopes and news go (injected; never changes). */
  readonly #deps: SocketDeps;
  /** The connection whose closing means "connect again"; older ones (refreshed, replaced) may still be closing. */
  #current: SocketModeClient | null = null;
  /** Ends the current connection's session with why it ends; set while one is up. */
  #endSession: ((error: Error) => void) | null = null;
  /** Replaced connections still open: each goes once its successor is up (or at stop). */
  readonly #leaving = new Set<SocketModeClient>();
  /** Every client not yet disconnected, current or leaving: stop ends them all. */
  readonly #clients = new Set<SocketModeClient>();
  /** Set once, by stop. */
  #stopped = false;
  /** Aborted by stop: ends a backoff pause and the session at once. */
  readonly #stopSignal = new AbortController();
  /** True once an envelope came on the current connection since it was (re)opened: the watchdog only guards a link that carried traffic. */
  #sawTraffic = false;
  /** Fires after `deafAfterMs` without an envelope on the current connection; null while none is armed. */
  #watchdog: Timer | null = null;
  #loop: ReconnectLoop | null = null;

  constructor(deps: SocketDeps) {
    this.#deps = deps;
  }

  async start(): Promise<void> {
    this.#deps.report({ state: "starting" });
    const { clock, random, tuning } = this.#deps;
    const loop = startReconnectLoop({
      session: (ctx) => this.#session(ctx),
      classify: socketVerdict,
      describe: (error) => this.#text(error),
      clock,
      random,
      backoff: { baseMs: tuning.backoffInitialMs, maxMs: tuning.backoffMaxMs },
      signal: this.#stopSignal.signal,
      onStatus: (status) => this.#onStatus(status),
    });
    this.#loop = loop;
    // Whatever ends the loop, no replaced connection outlives it.
    void loop.done.then(() => this.#endLeaving());
    // Slack unreachable at boot: the loop keeps trying in the background; the daemon's other channels go on.
    if ((await loop.firstOutcome) !== "failed") return;
    const end = await loop.done;
    throw end.state === "failed" && end.error instanceof Error ? end.error : new SocketRefused("Slack refused the app token");
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopSignal.abort();
    this.#watchdog?.cancel();
    await Promise.allSettled([...this.#clients].map((c) => this.#end(c)));
    await this.#loop?.done;
    this.#deps.report({ state: "stopped" });
  }

  #onStatus(status: ReconnectStatus): void {
    switch (status.state) {
      case "connected":
        this.#deps.report({ state: "connected" });
        return;
      case "reconnecting": {
        const { reason, detail, delayMs } = status;
        // A replacement said why when it began (#replace); the backoff's tries say when the next comes.
        if (reason === "refresh" || reason === "deaf") return;
        this.#deps.report({ state: "reconnecting", detail: `${detail}; next attempt in ${delayMs} ms`, ...(reason ? { reason } : {}) });
        return;
      }
      case "failed":
        this.#deps.report({ state: "failed", detail: status.detail });
        return;
      case "stopped":
        return;
    }
  }

  /** One connection: opened, made current, and kept until it closes, is replaced, or stop. */
  async #session(ctx: SessionContext): Promise<void> {
    let stopped: () => void = () => undefined;
    const ended = new Promise<void>((resolve, reject) => {
      this.#endSession = reject;
      stopped = resolve;
    });
    ctx.signal.addEventListener("abort", stopped, { once: true });
    try {
      await this.#open();
      if (ctx.signal.aborted) return;
      ctx.connected();
      await ended;
    } finally {
      this.#endSession = null;
      ctx.signal.removeEventListener("abort", stopped);
    }
  }

  /** Opens a new connection and makes it the current one once Slack said hello. */
  async #open(): Promise<void> {
    const client = this.#build();
    this.#clients.add(client);
    try {
      await this.#withTimeout(client.start(), this.#deps.tuning.connectTimeoutMs);
    } catch (error) {
      void this.#end(client);
      throw this.#failureOf(error);
    }
    if (this.#stopped) return void this.#end(client);
    this.#current = client;
    this.#sawTraffic = false;
    this.#armWatchdog();
    // A replaced connection goes once its successor is up.
    this.#endLeaving();
  }

  #endLeaving(): void {
    for (const old of this.#leaving) void this.#end(old);
    this.#leaving.clear();
  }

  #build(): SocketModeClient {
    const client = new Client({
      appToken: this.#deps.appToken,
      // Reconnects are the supervisor's (with the project's backoff), not the library's.
      autoReconnectEnabled: false,
      logger: slackLogger(this.#deps.log, this.#deps.redact),
      clientOptions: { slackApiUrl: `${this.#deps.api}/`, retryConfig: { retries: 0 }, timeout: this.#deps.tuning.connectTimeoutMs },
    });
    client.on("slack_event", (args: { ack(): Promise<void>; type: string; body: unknown; retry_num?: number; retry_reason?: string }) => {
      if (args.type === "slash_commands") {
        this.#traffic(client);
        void this.#deps.onCommand(args.body).finally(() => args.ack().catch(() => undefined));
        return;
      }
      if (args.type === "interactive") {
        this.#traffic(client);
        void this.#deps.onAction(args.body).finally(() => args.ack().catch(() => undefined));
        return;
      }
      if (args.type !== "events_api") return void args.ack().catch(() => undefined);
      this.#traffic(client);
      const retry = args.retry_num ? { num: args.retry_num, reason: args.retry_reason ?? "" } : undefined;
      void this.#deps.onEvent(args.body, retry).then((verdict) => {
        // Unacknowledged, Slack sends the envelope again: what the core could not take is not lost.
        if (verdict === "ack")
          args.ack().catch((error: unknown) => this.#deps.log.debug({ err: this.#text(error) }, "slack ack not sent (connection closing)"));
      });
    });
    // Slack announces a close: open the next connection now, so no event waits for a dead one.
    client.on("ws_message", (data: unknown) => {
      const disconnect = disconnectReason(data);
      if (disconnect === undefined || client !== this.#current || this.#stopped) return;
      this.#deps.log.info({ reason: disconnect }, "slack asked for a new socket mode connection");
      const detail = `slack asked for a new connection (${disconnect})`;
      this.#deps.report({ state: "reconnecting", detail, reason: "refresh" });
      this.#replace(new Replaced(detail, "refresh"));
    });
    client.on("disconnected", () => {
      this.#clients.delete(client);
      this.#leaving.delete(client);
      if (client !== this.#current || this.#stopped) return;
      this.#current = null;
      this.#endSession?.(new Closed());
    });
    return client;
  }

  #traffic(client: SocketModeClient): void {
    if (client !== this.#current) return;
    this.#sawTraffic = true;
    this.#armWatchdog();
  }

  #armWatchdog(): void {
    this.#watchdog?.cancel();
    this.#watchdog = null;
    const after = this.#deps.deafAfterMs;
    if (after <= 0 || this.#stopped) return;
    this.#watchdog = this.#deps.clock.setTimeout(() => this.#onSilence(), after);
  }

  #onSilence(): void {
    this.#watchdog = null;
    if (this.#stopped || !this.#current || !this.#sawTraffic) return;
    const ms = this.#deps.deafAfterMs;
    const silence = ms < 10_000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
    const detail = `connected but deaf: no event for ${silence} after earlier traffic; opening a new connection`;
    this.#deps.log.warn({ deafAfterMs: this.#deps.deafAfterMs }, `slack socket mode ${detail}`);
    this.#deps.report({ state: "reconnecting", detail, reason: "deaf" });
    this.#replace(new Replaced(detail, "deaf"));
  }

  /** The current connection is replaced: a successor opens at once; the old one stays until it is up. */
  #replace(why: Replaced): void {
    this.#deps.log.debug({ reason: why.message }, "slack socket mode: replacing the connection");
    const old = this.#current;
    this.#current = null;
    if (old) this.#leaving.add(old);
    this.#endSession?.(why);
  }

  async #end(client: SocketModeClient): Promise<void> {
    this.#clients.delete(client);
    await client.disconnect().catch(() => undefined);
  }

  #withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.#deps.clock.setTimeout(() => reject(new Error(`no hello from Slack within ${ms} ms`)), ms);
      work.then(
        (v) => {
          timer.cancel();
          resolve(v);
        },
        (e: unknown) => {
          timer.cancel();
          reject(e);
        },
      );
    });
  }

  #failureOf(error: unknown): Error {
    const code = platformErrorCode(error);
    if (code && PERMANENT.has(code))
      return new SocketRefused(`Slack refused the app token (${code}): check the channel's appToken (xapp-..., scope connections:write)`);
    return new Error(this.#text(error));
  }

  #text(error: unknown): string {
    return this.#deps.redact(error instanceof Error ? error.message : String(error));
  }
}

function platformErrorCode(error: unknown): string | undefined {
  if (!error || typeof error !== "object" || !("data" in error)) return undefined;
  const data = error.data;
  return data && typeof data === "object" && "error" in data && typeof data.error === "string" ? data.error : undefined;
}

/** The reason of a `disconnect` frame, or undefined for any other frame. */
function disconnectReason(data: unknown): string | undefined {
  const text = typeof data === "string" ? data : data instanceof Uint8Array ? Buffer.from(data).toString("utf8") : undefined;
  if (!text?.includes('"disconnect"')) return undefined;
  try {
    const frame: unknown = JSON.parse(text);
    if (frame && typeof frame === "object" && "type" in frame && frame.type === "disconnect") {
      return "reason" in frame && typeof frame.reason === "string" ? frame.reason : "unknown";
    }
  } catch {
    // not JSON: not Slack's
  }
  return undefined;
}

/**
 * The SDK's logger interface over pino: warnings and errors only (its debug
 * lines carry whole payloads, people's messages among them), tokens removed.
 */
export function slackLogger(log: Logger, redact: (text: string) => string): SlackLogger {
  const line = (parts: unknown[]) => redact(parts.map((p) => (p instanceof Error ? p.message : String(p))).join(" "));
  return {
    debug: () => {},
    info: () => {},
    warn: (...parts: unknown[]) => log.warn({ sdk: "socket-mode" }, line(parts)),
    error: (...parts: unknown[]) => log.warn({ sdk: "socket-mode" }, line(parts)),
    setLevel: () => {},
    getLevel: () => LogLevel.WARN,
    setName: () => {},
  };
}
