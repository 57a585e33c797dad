/**
 * Nostr through nostr-tools 2, wired from its parts: the bot's key (keys.ts,
 * generated on first start), the relays (connection.ts: each read and
 * published to, NIP-42 authentication, reconnects with a lookback), events
 * counted once by id across relays, decrypted here (NIP-17 gift wraps with
 * NIP-44, or NIP-04), translated (inbound.ts) and handed to the core
 * (hand-over.ts); replies go out whole in the person's scheme (outbound.ts).
 */
import * as nip04 from "nostr-tools/nip04";
import * as nip17 from "nostr-tools/nip17";
import { getEventHash, type NostrEvent } from "nostr-tools/pure";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import { hexToNpub, type NostrChannelConfig } from "./config.js";
import { createRelaySet, defaultRelayTuning, errorText, type RelaySet, type RelayTuning } from "./connection.js";
import type { DirectMessageView } from "./inbound.js";
import { NostrHandOver } from "./hand-over.js";
import { type BotKey, fileKey, recordKey } from "./keys.js";
import { createNostrOutbound, measureNostr, NOSTR_LIMITS } from "./outbound.js";

export { measureNostr, NOSTR_LIMITS, RATE_LIMIT_WAIT_MS } from "./outbound.js";

export interface NostrAdapterOptions extends Partial<RelayTuning> {
  random?: Random;
}

/** A verified event of the bot's subscription, decrypted; undefined when it is not a readable message for the bot. */
export function openEvent(event: NostrEvent, key: BotKey): DirectMessageView | undefined {
  if (event.kind === 1059) {
    const rumor = nip17.unwrapEvent(event, key.secretKey);
    const recipients = rumor.tags.flatMap((t) => (t[0] === "p" && typeof t[1] === "string" ? [t[1]] : []));
    // The rumor's id as computed from its content, not as it claims.
    const id = getEventHash(rumor);
    return { protocol: "nip17", id, kind: rumor.kind, sender: rumor.pubkey, recipients, content: rumor.content, createdAt: rumor.created_at };
  }
  if (event.kind === 4) {
    const recipients = event.tags.flatMap((t) => (t[0] === "p" && typeof t[1] === "string" ? [t[1]] : []));
    const content = nip04.decrypt(key.secretKey, event.pubkey, event.content);
    return { protocol: "nip04", id: event.id, kind: 4, sender: event.pubkey, recipients, content, createdAt: event.created_at };
  }
  return undefined;
}

export function createNostrAdapter(config: NostrChannelConfig, deps: AdapterDeps, options: NostrAdapterOptions = {}): ChatAdapter {
  const accountId = config.id;
  const log = deps.logger.child({ adapter: "nostr", accountId });
  const { random = cryptoRandom, ...tuningOverrides } = options;
  const tuning: RelayTuning = {
    backoffInitialMs: tuningOverrides.backoffInitialMs ?? defaultRelayTuning.backoffInitialMs,
    backoffMaxMs: tuningOverrides.backoffMaxMs ?? defaultRelayTuning.backoffMaxMs,
  };
  let key: BotKey | undefined;
  let relays: RelaySet | undefined;
  let handOver: NostrHandOver | undefined;
  let stopped = false;
  const redact = (text: string) => (key ? redactSecrets(text, [key.secretHex]) : text);
  /** Event ids already seen from some relay: one event, many relays. */
  const seen = new BoundedMap<string, true>(50_000);

  const loadKey = (): Promise<BotKey> => (deps.credentials ? recordKey(deps.credentials) : fileKey(config.keyFile));

  const notStarted = () => new Error("the Nostr adapter has not started");

  return {
    platform: "nostr",
    accountId,
    limits: NOSTR_LIMITS,
    // Relays send again what they hold, but only on a new subscription: a message the core defers is not brought back on its own.
    redelivers: false,
    measure: measureNostr,

    async start(sink) {
      stopped = false;
      const k = await loadKey();
      key = k;
      const h = new NostrHandOver({ accountId, self: k.publicKey, state: deps.state, clock: deps.clock, log, lookbackSeconds: config.lookbackSeconds });
      handOver = h;
      h.open(sink);
      // The public key is no secret: people need it to write to the bot.
      sink.status({ state: "starting", detail: `as ${hexToNpub(k.publicKey)}` });
      log.info({ npub: hexToNpub(k.publicKey) }, "nostr bot key");
      relays = createRelaySet({
        urls: config.relays,
        publicKey: k.publicKey,
        secretKey: k.secretKey,
        lookbackSeconds: config.lookbackSeconds,
        state: deps.state,
        clock: deps.clock,
        random,
        log,
        tuning,
        // Each relay's news names the bot, so the console's status shows whom people write to.
        report: (event) => h.status({ ...event, detail: `${event.detail ?? ""} as ${hexToNpub(k.publicKey)}`.trim() }),
        onEvent: (event) => {
          if (stopped || seen.has(event.id)) return;
          seen.set(event.id, true);
          let view: DirectMessageView | undefined;
          try {
            view = openEvent(event, k);
          } catch (error) {
            log.debug({ eventId: event.id, err: redact(errorText(error)) }, "nostr event not readable");
            return;
          }
          if (view) h.take(view);
        },
      });
      await relays.start();
    },

    async stop() {
      if (stopped) return;
      stopped = true;
      handOver?.close();
      await relays?.stop();
      await handOver?.idle();
    },

    async send(target, text) {
      if (!key || !relays || !handOver) throw notStarted();
      const h = handOver;
      return createNostrOutbound({ relays, secretKey: key.secretKey, clock: deps.clock, protocolOf: (p) => h.protocolOf(p) }).send(target, text);
    },
    // Nostr has no typing indicator for direct messages.
    sendTyping: async () => {},
  };
}
