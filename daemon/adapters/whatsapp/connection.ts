/**
 * The connection lifecycle: start, reconnect, stop. Its rules:
 *  - exactly one socket alive: every new socket is made by `#openSocket`,
 *    which first unsubscribes from and ends the previous one, and events of a
 *    socket that is no longer current are ignored;
 *  - each socket is a session of the daemon's one reconnect loop
 *    (daemon/helpers/reconnect.ts); its close is handled as disconnect.ts
 *    decides (logged out, restart now, fail, or reconnect after the loop's
 *    jittered, growing delay on the clock);
 *  - `start` resolves at the first outcome (open, QR shown, or a failed first
 *    attempt that is being retried), so an outage never holds up the daemon.
 */
import type { Writable } from "node:stream";
import type { BaileysEventMap, proto } from "@whiskeysockets/baileys";
import type { Logger } from "pino";
import qrcodeTerminal from "qrcode-terminal";
import type { Clock } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import type { AdapterStatusEvent } from "../../vocabulary/adapter.js";
import type { BackoffPolicy } from "../../../shared/backoff.js";
import { type ReconnectStatus, type ReconnectVerdict, type SessionContext, startReconnectLoop } from "../../helpers/reconnect.js";
import type { AuthHome, AuthStore } from "./auth.js";
import { type CloseAction, closeAction } from "./disconnect.js";
import { describeError, WhatsAppAdapterError } from "./errors.js";
import { OpenWaiters } from "./open-waiters.js";
import type { SelfJids } from "./inbound.js";
import type { SocketFactory, WAMessage, WAMessageKey, WhatsAppSocket } from "./socket.js";

/** Reconnect delays: the daemon's one backoff, from 0.5-1 s after the first failure up to 30-60 s. */
export const RECONNECT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

export interface ConnectionDeps {
  /** The channel's id, for messages to people. */
  accountId: string;
  /** Where the link lives (the auth folder, or the state backend's records); cleared on logout. */
  auth: AuthHome;
  /** Draw the QR code on `qrOutput` (else only report "pairing"). */
  printQr: boolean;
  /** Where QR codes and re-link requests are drawn. */
  qrOutput: Writable;
  /** Makes each socket (Baileys' `makeWASocket`, or a test fake). */
  factory: SocketFactory;
  /** Reconnect delays and send waits run on it. */
  clock: Clock;
  /** Jitter for reconnect delays. */
  random: Random;
  /** Reconnect delays (see `RECONNECT_BACKOFF`). */
  backoff: BackoffPolicy;
  /** How long `waitForOpen` waits for a dropped connection to come back, ms. */
  sendWaitMs: number;
  /** The channel's logger. */
  log: Logger;
  /** The logger handed to Baileys (warn and above: its debug output can carry keys). */
  baileysLog: Logger;
  /** Connection news for the core ("starting", "connected", "reconnecting", ...). */
  status(event: AdapterStatusEvent): void;
  /** Baileys asks for a message it sent when the peer requests a retry. */
  sentMessage(key: WAMessageKey): proto.IMessage | undefined;
  /** Live messages from the current socket. */
  onMessages(socket: WhatsAppSocket, messages: WAMessage[]): void;
  /** A socket opened (before waiting sends are released): the place to replay what was refused. */
  onOpen(socket: WhatsAppSocket): void;
}

type Phase = "idle" | "running" | "stopped" | "logged_out" | "failed";

/** One socket and its subscription; `open` once Baileys said "open". */
interface Current {
  socket: WhatsAppSocket;
  unsubscribe: () => void;
  open: boolean;
  /** The reconnect loop's session this socket is. */
  ctx: SessionContext;
  /** Ends the session: the socket closed, as disconnect.ts reads it. */
  closed(error: SocketClosed): void;
}

/** A socket's close, with what disconnect.ts says it means. */
class SocketClosed extends Error {
  override readonly name = "SocketClosed";
  constructor(readonly action: CloseAction) {
    super(action.kind === "retry" ? action.reason : action.kind === "fail" ? action.detail : action.kind);
  }
}

/** What a close means to the loop: a logout or a refusal ends it, a restart goes at once, anything else backs off. */
function closeVerdict(error: unknown): ReconnectVerdict {
  if (!(error instanceof SocketClosed)) return { detail: "socket could not be created" };
  const { action } = error;
  switch (action.kind) {
    case "logged_out":
      return { fatal: true, detail: "logged out" };
    case "fail":
      return { fatal: true, detail: action.detail };
    case "restart":
      // Sent right after pairing: the new credentials need a fresh connection, now.
      return { atOnce: true, detail: "restart required after linking" };
    case "retry":
      return { detail: action.reason };
  }
}

export class WhatsAppConnection {
  readonly #deps: ConnectionDeps;
  /** "running" only between `start` and `stop` (or a logout / failure); every handler checks it before acting. */
  #phase: Phase = "idle";
  /** The link's keys; loaded once, dropped on logout (the folder is cleared then). */
  #auth: AuthStore | undefined;
  /** The one live socket; events from any other are ignored. */
  #current: Current | undefined;
  /** Aborted by stop, a logout or a failure: ends the reconnect loop of this run. */
  #run = new AbortController();
  /** Settles `start`'s promise at the first outcome; undefined once settled. */
  #settleStart: ((err?: Error) => void) | undefined;
  #starting: Promise<void> | undefined;
  /** The last stop's work (hand-over drained, creds flushed); a new start waits for it. */
  #stopping: Promise<void> | undefined;
  /** Sends waiting for an open socket: released on open, refused on stop, failure, logout or their timeout. */
  readonly #openWaiters: OpenWaiters<WhatsAppSocket>;

  constructor(deps: ConnectionDeps) {
    this.#deps = deps;
    this.#openWaiters = new OpenWaiters(deps.clock, deps.sendWaitMs);
  }

  /** Connects; `prepare` runs once the previous stop finished, before the first socket. Idempotent while running. */
  start(prepare: () => void): Promise<void> {
    if (this.#phase === "running" && this.#starting) return this.#starting;
    this.#starting = this.#begin(prepare);
    return this.#starting;
  }

  /** Disconnects without logging out, then runs `drain` (the hand-over) and flushes the creds. Idempotent. */
  stop(drain: () => Promise<void>): Promise<void> {
    if (this.#phase !== "running") return this.#stopping ?? Promise.resolve();
    this.#phase = "stopped";
    this.#halt();
    this.#settleStart?.();
    this.#stopping = (async () => {
      // Let messages already taken from the socket reach the journal.
      await drain();
      await this.#auth?.flush();
      this.#status({ state: "stopped" });
    })();
    return this.#stopping;
  }

  /** While not running: drops the link (creds flushed first, then the auth home cleared), so the next start shows a QR code. */
  async forgetLink(): Promise<void> {
    if (this.#phase === "running") throw new WhatsAppAdapterError({ reason: "failed", message: "stop the channel before forgetting its link" });
    if (this.#stopping) await this.#stopping;
    const store = this.#auth;
    this.#auth = undefined;
    await store?.flush();
    await this.#deps.auth.clear();
  }

  /** The socket if it is open now. */
  openSocket(): WhatsAppSocket | undefined {
    return this.#current?.open ? this.#current.socket : undefined;
  }

  /** The open socket, waiting up to `sendWaitMs` for one while running; rejects with a `WhatsAppAdapterError`. */
  waitForOpen(): Promise<WhatsAppSocket> {
    const open = this.openSocket();
    if (open) return Promise.resolve(open);
    if (this.#phase !== "running") return Promise.reject(this.#errorForPhase());
    return this.#openWaiters.wait(() => this.#errorForPhase());
  }

  /** The bot's own JIDs as far as known (socket first, then the stored creds). */
  selfJids(): SelfJids {
    const user = this.#current?.socket.user;
    const me = this.#auth?.state.creds.me;
    return [user?.id, user?.lid, me?.id, me?.lid].filter((id): id is string => Boolean(id));
  }

  async #begin(prepare: () => void): Promise<void> {
    if (this.#stopping) await this.#stopping;
    this.#phase = "running";
    this.#run = new AbortController();
    this.#stopping = undefined;
    prepare();
    const started = new Promise<void>((resolve, reject) => {
      this.#settleStart = (err) => {
        this.#settleStart = undefined;
        if (err) reject(err);
        else resolve();
      };
    });
    this.#status({ state: "starting" });
    try {
      this.#auth ??= await this.#deps.auth.open();
    } catch (err) {
      this.#fail(`cannot open the auth folder: ${describeError(err)}`);
      this.#auth = undefined;
      return started;
    }
    if (this.#phase === "running") this.#keepConnected(); // else stopped while the auth state loaded
    return started;
  }

  /** The reconnect loop of this run: each session is one socket. */
  #keepConnected(): void {
    const { clock, random, backoff } = this.#deps;
    startReconnectLoop({
      session: (ctx) => this.#openSocket(ctx),
      classify: closeVerdict,
      clock,
      random,
      backoff,
      signal: this.#run.signal,
      onStatus: (status) => this.#onLoopStatus(status),
    });
  }

  #onLoopStatus(status: ReconnectStatus): void {
    switch (status.state) {
      case "connected":
        this.#status({ state: "connected" });
        return;
      case "reconnecting":
        if (this.#phase !== "running") return;
        this.#status({
          state: "reconnecting",
          detail: status.delayMs === 0 ? status.detail : `${status.detail}; retrying in ${Math.ceil(status.delayMs / 1000)} s`,
        });
        // start() does not hang on an outage: reconnecting goes on in the background.
        this.#settleStart?.();
        return;
      case "failed":
        if (status.error instanceof SocketClosed && status.error.action.kind === "logged_out") {
          this.#onLoggedOut().catch((err: unknown) => this.#deps.log.error({ err: describeError(err) }, "handling the WhatsApp logout failed"));
        } else this.#fail(status.detail);
        return;
      case "stopped":
        return;
    }
  }

  /** The only place a socket is made: one session of the loop, settled when the socket closes (or at stop). */
  #openSocket(ctx: SessionContext): Promise<void> {
    this.#teardown();
    const auth = this.#auth;
    if (this.#phase !== "running" || !auth) return Promise.resolve();
    let socket: WhatsAppSocket;
    try {
      socket = this.#deps.factory({
        auth: auth.state,
        logger: this.#deps.baileysLog,
        printQRInTerminal: false,
        // Stay "offline" so the owner's phone keeps its notifications.
        markOnlineOnConnect: false,
        syncFullHistory: false,
        getMessage: async (key) => this.#deps.sentMessage(key),
      });
    } catch (err) {
      this.#deps.log.error({ err: describeError(err) }, "creating the WhatsApp socket failed");
      return Promise.reject(err);
    }
    return new Promise<void>((resolve, reject) => {
      // Stop, a logout or a failure tears the socket down itself (#halt).
      const stopped = () => resolve();
      ctx.signal.addEventListener("abort", stopped, { once: true });
      const closed = (error: SocketClosed) => {
        ctx.signal.removeEventListener("abort", stopped);
        reject(error);
      };
      const current: Current = { socket, unsubscribe: () => undefined, open: false, ctx, closed };
      this.#current = current;
      current.unsubscribe = socket.ev.process((events) => {
        try {
          this.#onEvents(current, events);
        } catch (err) {
          this.#deps.log.error({ err: describeError(err) }, "handling WhatsApp events failed");
        }
      });
    });
  }

  #onEvents(current: Current, events: Partial<BaileysEventMap>): void {
    if (this.#current !== current) return; // a replaced socket's late events
    if (events["creds.update"]) {
      this.#auth?.saveCreds().catch((err: unknown) => this.#deps.log.error({ err: describeError(err) }, "saving WhatsApp credentials failed"));
    }
    // Connection news first: an "open" replays refused messages ahead of new ones.
    const update = events["connection.update"];
    if (update) this.#onConnectionUpdate(current, update);
    const upsert = events["messages.upsert"];
    if (upsert) {
      // Only "notify" is live traffic; "append" is history or our own sends.
      if (upsert.type === "notify") this.#deps.onMessages(current.socket, upsert.messages);
      else this.#deps.log.debug({ type: upsert.type, count: upsert.messages.length }, "ignored non-live messages");
    }
    const history = events["messaging-history.set"];
    if (history) this.#deps.log.debug({ count: history.messages.length }, "ignored history sync");
  }

  #onConnectionUpdate(current: Current, update: Partial<BaileysEventMap["connection.update"]>): void {
    if (update.qr) this.#onQr(update.qr);
    if (update.connection === "open") this.#onOpen(current);
    if (update.connection === "close") this.#onClose(current, update.lastDisconnect?.error);
  }

  #onQr(qr: string): void {
    const { printQr } = this.#deps;
    if (printQr) drawQr(this.#deps.qrOutput, this.#deps.accountId, qr);
    this.#status({
      state: "pairing",
      detail: printQr ? "scan the QR code with WhatsApp > Linked devices" : "waiting for a link (printQr is off; the operator's console shows the QR code)",
      linkCode: qr,
    });
    this.#settleStart?.();
  }

  #onOpen(current: Current): void {
    current.open = true;
    current.ctx.connected();
    this.#deps.onOpen(current.socket);
    this.#settleStart?.();
    this.#openWaiters.resolveAll(current.socket);
  }

  #onClose(current: Current, error: unknown): void {
    this.#teardown();
    if (this.#phase !== "running") return;
    current.closed(new SocketClosed(closeAction(error)));
  }

  #fail(detail: string): void {
    this.#phase = "failed";
    this.#halt();
    this.#deps.log.error({ detail }, "WhatsApp channel failed");
    this.#status({ state: "failed", detail });
    this.#settleStart?.(new WhatsAppAdapterError({ reason: "failed", message: detail }));
  }

  async #onLoggedOut(): Promise<void> {
    this.#phase = "logged_out";
    this.#halt();
    const store = this.#auth;
    this.#auth = undefined;
    // A creds write still in flight would put a file back after the clear.
    await store?.flush();
    try {
      await this.#deps.auth.clear();
    } catch (err) {
      this.#deps.log.error({ err: describeError(err) }, "clearing the WhatsApp auth folder failed");
    }
    const ask = `WhatsApp channel "${this.#deps.accountId}" was logged out (unlinked on the phone). Its link was cleared; restart the daemon (or this channel) to show a new QR code and link it again.`;
    this.#deps.log.warn(ask);
    this.#deps.qrOutput.write(`\n${ask}\n`);
    this.#status({ state: "logged_out", detail: "link cleared; restart to link again by QR code" });
    this.#settleStart?.();
  }

  /** No more sockets this run: the pending reconnect, the socket and the waiting sends all go. */
  #halt(): void {
    this.#run.abort();
    this.#teardown();
    this.#openWaiters.rejectAll(this.#errorForPhase());
  }

  /** Unsubscribes from and ends the current socket. Never logs out. */
  #teardown(): void {
    const old = this.#current;
    this.#current = undefined;
    if (!old) return;
    old.unsubscribe();
    try {
      void Promise.resolve(old.socket.end(undefined)).catch(() => undefined);
    } catch (err) {
      this.#deps.log.debug({ err: describeError(err) }, "ending old socket threw");
    }
  }

  #errorForPhase(): WhatsAppAdapterError {
    const { accountId } = this.#deps;
    switch (this.#phase) {
      case "logged_out":
        return new WhatsAppAdapterError({ reason: "logged_out", message: `WhatsApp channel ${accountId} is logged out; link it again` });
      case "failed":
        return new WhatsAppAdapterError({ reason: "failed", message: `WhatsApp channel ${accountId} has failed` });
      case "running":
        return new WhatsAppAdapterError({ reason: "not_connected", message: `WhatsApp channel ${accountId} is not connected` });
      default:
        return new WhatsAppAdapterError({ reason: "stopped", message: `WhatsApp channel ${accountId} is stopped` });
    }
  }

  #status(event: AdapterStatusEvent): void {
    this.#deps.status(event);
  }
}

/** The QR carries pairing secrets: it goes to the terminal only, never to the log. */
function drawQr(output: Writable, accountId: string, qr: string): void {
  qrcodeTerminal.generate(qr, { small: true }, (art) => {
    output.write(`\nWhatsApp "${accountId}": scan with WhatsApp > Linked devices > Link a device\n${art}\n`);
  });
}
