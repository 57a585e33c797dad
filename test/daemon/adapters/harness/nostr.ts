/** Nostr for the shared suite: the real adapter (nostr-tools) against two fake relays, one demanding NIP-42 authentication; the person is a nostr-tools client. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { nostrChannelSchema } from "../../../../daemon/adapters/nostr/config.js";
import { createNostrAdapter } from "../../../../daemon/adapters/nostr/index.js";
import { fileKey } from "../../../../daemon/adapters/nostr/keys.js";
import { nostrPlatform } from "../../../../daemon/adapters/nostr/platform.js";
import { systemClock } from "../../../../shared/clock.js";
import { seededRandom } from "../../../../shared/random.js";
import { createFakeRelay, createPerson } from "../../../fakes/nostr.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

export const features: readonly Feature[] = [];

export const harness: HarnessFactory = async () => {
  const open = await createFakeRelay();
  const authed = await createFakeRelay({ auth: true });
  const relays = [open.url, authed.url];
  const dir = mkdtempSync(join(tmpdir(), "nostr-contract-"));
  const channel = nostrPlatform.finalize(nostrChannelSchema.parse({ type: "nostr", relays, access: { mode: "open" } }), { id: "ns", dataDir: dir });
  if (!channel) throw new Error("not a nostr channel");
  // The key the adapter will load (generated here first, so the person knows whom to write to).
  const key = await fileKey(channel.keyFile);
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = createNostrAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: dir,
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { random: seededRandom("contract"), backoffInitialMs: 20 },
  );
  const alice = createPerson(key.publicKey);
  /** What the person's client shows of the bot's messages: each event once, whichever relay holds it. */
  const shownTo = (chatId: string) => {
    const byId = new Map([...open.events(), ...authed.events()].map((e) => [e.id, e]));
    return chatId === alice.publicKey ? alice.read([...byId.values()]).map((m) => m.text) : [];
  };
  return {
    adapter,
    // The generated secret key must never reach a log.
    secrets: [key.secretHex, ...(nostrPlatform.secrets(channel) ?? [])],
    logs: logs.text,
    direct: async (text) => void (await alice.dm17(text, relays)),
    shown: shownTo,
    files: () => [],
    close: async () => {
      alice.close();
      await open.close();
      await authed.close();
    },
  };
};
