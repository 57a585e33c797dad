/**
 * The relays: one nostr-tools `AbstractRelay` per URL over undici's WebSocket
 * (Node 20 has none of its own), each read and published to. The library's
 * own reconnect is off: it resubscribes with `since = last event + 1`, which
 * loses NIP-17 gift wraps (their `created_at` is randomised up to two days in
 * the past). Here a relay that drops comes back through the one reconnect loop and
 * resubscribes with `since` = when it was last caught up minus the lookback;
 * the repeats this brings are dropped by event id (index.ts) and by message id
 * in the journal. Relays that ask for NIP-42 authentication get it (`onauth`),
 * and a subscription or publish refused "auth-required:" is tried again once
 * authenticated.
 */
import type { Logger } from "pino";
import { WebSocket } from "undici";
import { AbstractRelay } from "nostr-tools/abstract-relay";
import type { EventTemplate, NostrEvent, VerifiedEvent } from "nostr-tools/pure";
import { finalizeEvent, verifyEvent } from "nostr-tools/pure";
import type { Clock } from "../../../shared/clock.js";
import type { Random } from "../../../shared/random.js";
import { type ReconnectLoop, type SessionContext, SessionEnded, startReconnectLoop } from "../../helpers/reconnect.js";
import type { AdapterStateStore, AdapterStatusEvent } from "../../vocabulary/adapter.js";

export interface RelayTuning {
  backoffInitialMs: number;
  backoffMaxMs: number;
}
export const defaultRelayTuning: RelayTuning = { backoffInitialMs: 1000, backoffMaxMs: 60_000 };

export interface RelaySetDeps {
  urls: readonly string[];
  publicKey: string;
  secretKey: Uint8Array;
  lookbackSeconds: number;
  state: AdapterStateStore;
  clock: Clock;
  random: Random;
  log: Logger;
  tuning: RelayTuning;
  report(event: AdapterStatusEvent): void;
  /** A verified event the bot's subscription brought, with the relay it came from. */
  onEvent(event: NostrEvent, relay: string): void;
}

/** A relay's answer to a publish that was not "accepted". */
export interface PublishRefusal {
  relay: string;
  reason: string;
}

export interface RelaySet {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Publishes to every relay; resolves with the relays that accepted it and the refusals. */
  publish(event: NostrEvent): Promise<{ accepted: string[]; refused: PublishRefusal[] }>;
}

const sinceKey = (url: string) => `caughtUp.${url}`;
const nowSeconds = (clock: Clock) => Math.floor(clock.now() / 1000);

export function createRelaySet(deps: RelaySetDeps): RelaySet {
  const sign = async (template: EventTemplate): Promise<VerifiedEvent> => finalizeEvent(template, deps.secretKey);
  const links = deps.urls.map((url) => relayLink(url, deps, sign));
  return {
    async start() {
      // Resolves once each relay connected or failed its first try (a dead relay must not hold the others up).
      await Promise.all(links.map((l) => l.start()));
    },
    async stop() {
      await Promise.all(links.map((l) => l.stop()));
    },
    async publish(event) {
      const results = await Promise.all(links.map((l) => l.publish(event)));
      const accepted = results.flatMap((r) => (r.ok ? [r.relay] : []));
      const refused = results.flatMap((r) => (r.ok ? [] : [{ relay: r.relay, reason: r.reason }]));
      return { accepted, refused };
    },
  };
}

/** What a subscription may do to the life of its connection. */
interface Life {
  /** The relay sent everything it stored (EOSE): the link is healthy. */
  healthy(): void;
  /** The subscription cannot go on: the connection is made again, after the backoff. */
  end(error: Error): void;
}

function relayLink(url: string, deps: RelaySetDeps, sign: (t: EventTemplate) => Promise<VerifiedEvent>) {
  const log = deps.log.child({ relay: url });
  let relay: AbstractRelay | undefined;
  const stopping = new AbortController();
  let loop: ReconnectLoop | undefined;

  function newRelay(): AbstractRelay {
    const r = new AbstractRelay(url, {
      verifyEvent,
      websocketImplementation: WebSocket as unknown as typeof globalThis.WebSocket,
      enableReconnect: false,
      // Every 29 s a request the relay must answer (undici's WebSocket has no ping): a silent relay is closed and reconnected.
      enablePing: true,
    });
    r.onauth = sign;
    r.onnotice = (notice) => log.debug({ notice: notice.slice(0, 200) }, "relay notice");
    return r;
  }

  /** One life of the connection (a session of the reconnect loop): resolves when it closes. */
  async function connectOnce(ctx: SessionContext): Promise<void> {
    const r = newRelay();
    relay = r;
    let end: (error: Error) => void = () => undefined;
    const closed = new Promise<void>((resolve, reject) => {
      r.onclose = () => resolve();
      end = reject;
    });
    const close = () => r.close();
    ctx.signal.addEventListener("abort", close, { once: true });
    try {
      await r.connect({ timeout: 10_000 });
      subscribe(r, { healthy: () => ctx.healthy(), end });
      ctx.connected(url);
      await closed;
    } finally {
      ctx.signal.removeEventListener("abort", close);
      if (r.connected) r.close();
    }
  }

  function subscribe(r: AbstractRelay, life: Life): void {
    const caughtUp = deps.state.get<number>(sinceKey(url)) ?? nowSeconds(deps.clock);
    const since = Math.max(0, caughtUp - deps.lookbackSeconds);
    const startedAt = nowSeconds(deps.clock);
    r.subscribe(
      [
        { kinds: [1059], "#p": [deps.publicKey], since },
        { kinds: [4], "#p": [deps.publicKey], since },
      ],
      {
        onevent: (event) => deps.onEvent(event, url),
        // Everything stored up to the subscription's start has come: the next life may look back from there.
        oneose: () => {
          life.healthy();
          void deps.state.set(sinceKey(url), startedAt).catch(() => {});
        },
        onclose: (reason) => {
          if (stopping.signal.aborted || !r.connected) return;
          void resubscribeAfter(r, reason, life);
        },
      },
    );
  }

  /**
   * The relay closed the subscription (CLOSED): authenticate and subscribe
   * again when asked to; otherwise (rate-limited, ...) the connection is made
   * again through the loop's backoff, which grows while no subscription gets
   * as far as EOSE.
   */
  async function resubscribeAfter(r: AbstractRelay, reason: string, life: Life): Promise<void> {
    log.info({ reason: reason.slice(0, 200) }, "relay closed the subscription");
    if (!reason.startsWith("auth-required:")) return life.end(new Error(`the relay closed the subscription: ${reason.slice(0, 200)}`));
    try {
      await r.auth(sign);
    } catch (error) {
      log.warn({ err: errorText(error) }, "relay authentication failed");
      return life.end(new Error(`relay authentication failed: ${errorText(error)}`));
    }
    if (!stopping.signal.aborted && r.connected && relay === r) subscribe(r, life);
  }

  return {
    relay: url,
    async start(): Promise<void> {
      loop = startReconnectLoop({
        session: connectOnce,
        // Every failure is worth another try; only EOSE proves the link healthy (a relay that refuses each subscription is backed off from).
        healthyAfterMs: Number.POSITIVE_INFINITY,
        classify: () => ({ reason: "closed", detail: url }),
        clock: deps.clock,
        random: deps.random,
        backoff: { baseMs: deps.tuning.backoffInitialMs, maxMs: deps.tuning.backoffMaxMs },
        signal: stopping.signal,
        onStatus: (status) => {
          if (status.state === "connected") deps.report({ state: "connected", detail: url });
          if (status.state !== "reconnecting") return;
          if (!(status.error instanceof SessionEnded)) log.debug({ err: errorText(status.error) }, "relay connection failed");
          deps.report({ state: "reconnecting", reason: "closed", detail: url });
        },
      });
      // Resolves once connected and subscribed, or after the first try failed.
      await loop.firstOutcome;
    },
    async stop(): Promise<void> {
      stopping.abort();
      relay?.close();
      await loop?.done;
    },
    async publish(event: NostrEvent): Promise<{ ok: true; relay: string } | { ok: false; relay: string; reason: string }> {
      const r = relay;
      if (!r?.connected) return { ok: false, relay: url, reason: "error: not connected" };
      try {
        await r.publish(event);
        return { ok: true, relay: url };
      } catch (error) {
        const reason = errorText(error);
        if (!reason.startsWith("auth-required:")) return { ok: false, relay: url, reason };
        try {
          await r.auth(sign);
          await r.publish(event);
          return { ok: true, relay: url };
        } catch (again) {
          return { ok: false, relay: url, reason: errorText(again) };
        }
      }
    },
  };
}

export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));
