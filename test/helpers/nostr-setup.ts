/** The Nostr bot the adapter tests share: the real adapter on fake relays, its accepted messages collected, stopped when the test finishes. */
import pino from "pino";
import { onTestFinished } from "vitest";
import { nostrChannelSchema } from "../../daemon/adapters/nostr/config.js";
import { createNostrAdapter } from "../../daemon/adapters/nostr/index.js";
import { fileKey } from "../../daemon/adapters/nostr/keys.js";
import { nostrPlatform } from "../../daemon/adapters/nostr/platform.js";
import type { InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { systemClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { testSink } from "../fakes/sink.js";
import { logCollector } from "../daemon/adapters/harness/harness.js";

/** A bot "ns" on `relays` with durable state in `state` and its key in `dir`: a second call with the same is its next life. */
export async function startNostrBot(options: {
  relays: string[];
  dir: string;
  state: Map<string, unknown>;
  /** Channel settings besides the relays (access is open). */
  settings?: Record<string, unknown>;
  maxAttachmentBytes: number;
  /** The sink's own file-size limit, where the test sets one. */
  sinkMaxAttachmentBytes?: number;
  seed: string;
}) {
  const { dir, state } = options;
  const channel = nostrPlatform.finalize(nostrChannelSchema.parse({ type: "nostr", relays: options.relays, access: { mode: "open" }, ...options.settings }), {
    id: "ns",
    dataDir: dir,
  });
  if (!channel) throw new Error("not a nostr channel");
  const logs = logCollector();
  const adapter = createNostrAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, structuredClone(v)) },
      dataDir: dir,
      clock: systemClock,
      maxAttachmentBytes: options.maxAttachmentBytes,
    },
    { random: seededRandom(options.seed), backoffInitialMs: 10, backoffMaxMs: 50 },
  );
  const accepted: InboundMessage[] = [];
  const limit = options.sinkMaxAttachmentBytes;
  await adapter.start(testSink({ accept: (m) => void accepted.push(m), ...(limit !== undefined ? { maxAttachmentBytes: limit } : {}) }));
  onTestFinished(() => adapter.stop());
  return { adapter, accepted, logs, key: await fileKey(channel.keyFile), keyFile: channel.keyFile };
}
