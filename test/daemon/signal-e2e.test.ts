/**
 * The whole chain for Signal: events from the fake signal-cli daemon, through
 * the adapter the daemon builds from its config, the journal, queue and
 * relay, to the emulator over real HTTP, and the fake model's answers back
 * through signal-cli's `send` (streamed replies as Signal edits).
 */
import { beforeAll, expect, it } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { transcriptionSchema } from "../../daemon/vocabulary/config-fields.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeSignal, type FakeSignal, type SignalPerson } from "../fakes/signal.js";
import { adtsStream } from "../helpers/audio-containers.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";

const ACCOUNT = "+15550001111";
let fake: FakeSignal;
let service: ServiceFixture;
let daemon: Daemon;
let alice: SignalPerson;
let stranger: SignalPerson;
let group: string;

beforeAll(async () => {
  const fixture = await openServiceFixture("signal-e2e-");
  service = fixture;
  fake = await createFakeSignal({ account: ACCOUNT });
  alice = fake.person("Alice", "+15550002222");
  stranger = fake.person("Stranger", "+15550006666");
  group = fake.createGroup("Team", [alice]);
  const channelConfig = service.configFor({
    type: "signal",
    id: "sig",
    account: ACCOUNT,
    url: fake.url,
    // Edits are tested below with streaming on; the pace is Signal's own in production.
    minEditIntervalMs: 0,
    groupContext: { enabled: false },
    // A person's number, as an operator writes it, lets them in (their ACI is what messages bring).
    access: { users: [alice.number], groups: { [group]: {} } },
  });
  // Voice notes transcribed by the emulator's fake gateway (its speech-to-text endpoint).
  const gateway = service.emulator.emulator.gateway.url;
  const config = {
    ...channelConfig,
    transcription: transcriptionSchema.parse({ kind: "openai", url: `${gateway}/v1`, maxBytes: 100_000, maxSeconds: 120, timeoutMs: 30_000 }),
  };
  daemon = createDaemon({ config, clock: createSteppableClock(), random: seededRandom(7) });
  await daemon.start();
  return async () => {
    await daemon.stop({ graceMs: 0 });
    await fake.close();
    await fixture.close();
  };
});

const texts = (chat: string) => fake.sent(chat).map((m) => m.text);

it("answers a direct message by the person's number in the access list, and nobody else", async () => {
  fake.direct(stranger, "let me in");
  fake.direct(alice, "hello signal");
  await waitUntil(() => texts(alice.uuid).some((t) => t.includes("hello signal")), "the answer");
  expect(fake.sent(stranger.uuid)).toEqual([]);
});

it("a message delivered twice is answered once", async () => {
  const ts = fake.direct(alice, "only once");
  await waitUntil(() => texts(alice.uuid).some((t) => t.includes("only once")), "the answer");
  fake.deliverAgain(ts);
  fake.direct(alice, "next one");
  await waitUntil(() => texts(alice.uuid).some((t) => t.includes("next one")), "the next answer");
  expect(texts(alice.uuid).filter((t) => t.includes("only once"))).toHaveLength(1);
});

it("answers a group mention with a quote of the message, and leaves unaddressed talk alone", async () => {
  fake.group(group, alice, "just talking");
  const ts = fake.group(group, alice, "bot, say hi", { mention: true });
  const answer = await waitUntil(() => fake.sent(group).find((m) => m.text.includes("say hi")), "the group answer");
  expect(answer.quote).toEqual({ timestamp: ts, author: alice.uuid });
  expect(texts(group).some((t) => t.includes("just talking"))).toBe(false);
  // Streamed as Signal edits: never more than Signal shows.
  for (const m of fake.sent()) expect(m.refusedEdits).toBe(0);
});

it("answers a voice note from its transcript (Signal's audio attachment, kind audio)", async () => {
  fake.direct(alice, "", { files: [{ contentType: "audio/aac", data: Buffer.from("remind me to water the plants") }] });
  const reply = await waitUntil(() => texts(alice.uuid).find((t) => t.includes("water the plants")), "the answer to the voice note");
  expect(reply).toContain("Transcript of the person's voice note");
  const metrics = await daemon.metrics.text();
  expect(metrics).toMatch(/agent_bridge_transcriptions_total\{platform="signal",outcome="ok"\} 1/);
});

it("a voice note longer than maxSeconds is not transcribed: its length comes from the audio file (signal-cli reports none)", async () => {
  // Three minutes of AAC as Signal Android records it (ADTS, 44.1 kHz), small enough for maxBytes.
  fake.direct(alice, "", { files: [{ contentType: "audio/aac", data: adtsStream(Math.ceil((180 * 44_100) / 1024), 44_100, { payloadBytes: 2 }) }] });
  const reply = await waitUntil(() => texts(alice.uuid).find((t) => /could not be transcribed/.test(t)), "the answer to the long voice note");
  expect(reply).toMatch(/it is longer than the limit of 2 minutes/);
});
