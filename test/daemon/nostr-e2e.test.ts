/**
 * The whole chain for Nostr: gift wraps from people's nostr-tools clients on a
 * fake relay, through the adapter the daemon builds from its config, the core
 * (access, the room's mention rule and group context, the journal, sessions),
 * the emulator over real HTTP, and the answers back as gift wraps: a NIP-17
 * room answered to every member, a voice note (kind 15, through a fake
 * Blossom server) answered from its transcript.
 */
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { hexToNpub } from "../../daemon/adapters/nostr/config.js";
import { fileKey } from "../../daemon/adapters/nostr/keys.js";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { transcriptionSchema } from "../../daemon/vocabulary/config-fields.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeBlossom, type FakeBlossom } from "../fakes/blossom.js";
import { createFakeRelay, createPerson, type FakeRelay, type Person } from "../fakes/nostr.js";
import { openServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";

let relay: FakeRelay;
let blossom: FakeBlossom;
let daemon: Daemon;
let alice: Person;
let bob: Person;
let stranger: Person;
let npub: string;

beforeAll(async () => {
  const service = await openServiceFixture("nostr-e2e-");
  relay = await createFakeRelay();
  blossom = await createFakeBlossom();
  const probe = service.configFor({ type: "nostr", relays: [relay.url] });
  // The key the daemon will load (made here first, so the people know whom to write to).
  const key = await fileKey(join(probe.dataDir, "nostr", "ns", "secret-key"));
  npub = hexToNpub(key.publicKey);
  alice = createPerson(key.publicKey);
  bob = createPerson(key.publicKey);
  stranger = createPerson(key.publicKey);
  const room = [alice.publicKey, bob.publicKey].sort().join(",");
  const gateway = service.emulator.emulator.gateway.url;
  const config = {
    ...service.configFor({
      type: "nostr",
      id: "ns",
      relays: [relay.url],
      access: { users: [hexToNpub(alice.publicKey), bob.publicKey], groups: { [room]: {} } },
    }),
    transcription: transcriptionSchema.parse({ kind: "openai", url: `${gateway}/v1`, maxBytes: 100_000, timeoutMs: 30_000 }),
  };
  daemon = createDaemon({ config, clock: createSteppableClock(), random: seededRandom(38) });
  await daemon.start();
  return async () => {
    await daemon.stop({ graceMs: 0 });
    for (const p of [alice, bob, stranger]) p.close();
    await blossom.close();
    await relay.close();
    await service.close();
  };
});

const texts = (p: Person) => p.rumors(relay.events()).map((m) => m.content);

it("answers a room when addressed, to every member with one message, with the room's talk as context; not a room of strangers", async () => {
  await bob.room("the deploy is on friday", [alice.publicKey], [relay.url]);
  await stranger.room(`nostr:${npub} let me in`, [alice.publicKey], [relay.url]);
  await alice.room(`nostr:${npub} when is the deploy?`, [bob.publicKey], [relay.url]);
  await waitUntil(() => texts(alice).some((t) => t.includes("when is the deploy?")), "the room's answer", 30_000);
  const [answer] = alice.rumors(relay.events());
  // The unaddressed message reached the agent as the room's context, and was not answered itself.
  expect(answer?.content).toContain("the deploy is on friday");
  expect(bob.rumors(relay.events()).map((m) => m.id)).toEqual([answer?.id]);
  expect(
    answer?.tags
      .filter((t) => t[0] === "p")
      .map((t) => t[1])
      .sort(),
  ).toEqual([alice.publicKey, bob.publicKey].sort());
  expect(texts(stranger)).toEqual([]);
});

it("answers a voice note (a NIP-17 kind 15 audio file) from its transcript", async () => {
  await alice.sendFile({ data: Buffer.from("remind me to water the plants"), mimeType: "audio/ogg" }, blossom, [relay.url]);
  // Downloaded, decrypted, transcribed, answered: allow a loaded machine its time.
  const reply = await waitUntil(() => texts(alice).find((t) => t.includes("water the plants")), "the answer to the voice note", 30_000);
  expect(reply).toContain("Transcript of the person's voice note");
});
