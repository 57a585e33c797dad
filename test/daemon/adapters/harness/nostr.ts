/**
 * Nostr for the shared suite: the real adapter (nostr-tools) against two fake relays, one demanding
 * NIP-42 authentication, and a fake Blossom server for files; the people are nostr-tools clients, and
 * a group is a NIP-17 room of the bot, Alice and Bob.
 */
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
import { createFakeBlossom } from "../../../fakes/blossom.js";
import { createFakeRelay, createPerson } from "../../../fakes/nostr.js";
import { hexToNpub } from "../../../../daemon/adapters/nostr/config.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

export const features: readonly Feature[] = ["group", "files"];

export const harness: HarnessFactory = async () => {
  const open = await createFakeRelay();
  const authed = await createFakeRelay({ auth: true });
  const relays = [open.url, authed.url];
  const blossom = await createFakeBlossom();
  const dir = mkdtempSync(join(tmpdir(), "nostr-contract-"));
  const channel = nostrPlatform.finalize(nostrChannelSchema.parse({ type: "nostr", relays, access: { mode: "open" }, blossomServers: [blossom.url] }), {
    id: "ns",
    dataDir: dir,
  });
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
  const bob = createPerson(key.publicKey);
  const room = [alice.publicKey, bob.publicKey].sort().join(",");
  /** What Alice's client shows of the bot's messages in a chat (her direct chat, or the room): each message once, whichever relays hold it. */
  const rumorsIn = (chatId: string) => {
    const byId = new Map([...open.events(), ...authed.events()].map((e) => [e.id, e]));
    const members = (tags: string[][]) =>
      tags
        .filter((t) => t[0] === "p")
        .map((t) => t[1])
        .sort()
        .join(",");
    return chatId === alice.publicKey || chatId === room ? alice.rumors([...byId.values()]).filter((m) => members(m.tags) === chatId) : [];
  };
  return {
    adapter,
    // The generated secret key must never reach a log.
    secrets: [key.secretHex, ...(nostrPlatform.secrets(channel) ?? [])],
    logs: logs.text,
    direct: async (text) => void (await alice.dm17(text, relays)),
    group: async (text) => void (await alice.room(`nostr:${hexToNpub(key.publicKey)} ${text}`, [bob.publicKey], relays)),
    shown: (chatId) => rumorsIn(chatId).flatMap((m) => (m.kind === 14 ? [m.content] : [])),
    files: (chatId) => rumorsIn(chatId).flatMap((m) => (m.kind === 15 ? m.tags.filter((t) => t[0] === "name").map((t) => t[1] ?? "") : [])),
    close: async () => {
      alice.close();
      bob.close();
      await blossom.close();
      await open.close();
      await authed.close();
    },
  };
};
