/**
 * Nostr through nostr-tools 2, wired from its parts: the bot's key (keys.ts,
 * generated on first start), the relays (connection.ts: each read and
 * published to, NIP-42 authentication, reconnects with a lookback), events
 * counted once by id across relays, decrypted here (NIP-17 gift wraps with
 * NIP-44, or NIP-04), translated (inbound.ts: direct chats and NIP-17
 * rooms, kind 15 files) and handed to the core (hand-over.ts, files.ts);
 * replies go out whole in the person's scheme, to every member of a room
 * (outbound.ts), files through a Blossom server (blossom.ts) where one is
 * configured.
 */
import * as nip04 from "nostr-tools/nip04";
import * as nip17 from "nostr-tools/nip17";
import { getEventHash, type NostrEvent } from "nostr-tools/pure";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import { hexToNpub, type NostrChannelConfig } from "./config.js";
import { createBlossomUploader } from "./blossom.js";
import { createRelaySet, defaultRelayTuning, errorText, type RelaySet, type RelayTuning } from "./connection.js";
import { nostrFiles } from "./files.js";
import type { DirectMessageView } from "./inbound.js";
import { NostrHandOver } from "./hand-over.js";
import { type BotKey, fileKey, recordKey } from "./keys.js";
import { createNostrOutbound, measureNostr, NOSTR_FILE_LIMITS, NOSTR_LIMITS } from "./outbound.js";

export { measureNostr, NOSTR_FILE_LIMITS, NOSTR_LIMITS, RATE_LIMIT_WAIT_MS } from "./outbound.js";

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
    return { protocol: "nip17", id, kind: rumor.kind, sender: rumor.pubkey, recipients, content: rumor.content, createdAt: rumor.created_at, tags: rumor.tags };
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
  /** Ids of the bot's own messages (sent now, or its copies coming back from the relays): a reply to one addresses it in a room. */
  const ownMessages = new BoundedMap<string, true>(10_000);
  let outbound: ReturnType<typeof createNostrOutbound> | undefined;
  let stopping = new AbortController();

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
      stopping = new AbortController();
      const k = await loadKey();
      key = k;
      const h = new NostrHandOver({
        accountId,
        self: k.publicKey,
        state: deps.state,
        clock: deps.clock,
        log,
        lookbackSeconds: config.lookbackSeconds,
        addressing: { npub: hexToNpub(k.publicKey), names: config.names, sentByBot: (id) => ownMessages.has(id) },
        files: nostrFiles({ log, signal: stopping.signal }),
      });
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
          if (!view) return;
          // The bot's own copy of what it sent (NIP-17): remembered, never handed over.
          if (view.sender === k.publicKey) return void ownMessages.set(view.id, true);
          h.take(view);
        },
      });
      outbound = createNostrOutbound({
        relays,
        secretKey: k.secretKey,
        publicKey: k.publicKey,
        clock: deps.clock,
        protocolOf: (p) => h.protocolOf(p),
        sent: (id) => ownMessages.set(id, true),
        blossom: blossomFor(config, k, deps.clock),
      });
      await relays.start();
    },

    async stop() {
      if (stopped) return;
      stopped = true;
      handOver?.close();
      stopping.abort();
      await relays?.stop();
      await handOver?.idle();
    },

    async send(target, text) {
      if (!outbound) throw notStarted();
      return outbound.send(target, text);
    },
    // Files need somewhere to put them: a Blossom server.
    ...(config.blossomServers.length > 0
      ? {
          files: {
            limits: NOSTR_FILE_LIMITS,
            send: async (target, file) => {
              if (!outbound) throw notStarted();
              return outbound.sendFile(target, file);
            },
          },
        }
      : {}),
    // Nostr has no typing indicator for direct messages.
    sendTyping: async () => {},
  };
}

function blossomFor(config: NostrChannelConfig, key: BotKey, clock: AdapterDeps["clock"]) {
  return config.blossomServers.length > 0 ? createBlossomUploader({ servers: config.blossomServers, secretKey: key.secretKey, clock }) : undefined;
}
