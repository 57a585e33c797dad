/**
 * Voice notes end to end on Telegram's fake: the note is downloaded, journaled,
 * transcribed by the emulator's fake gateway (its documented speech-to-text
 * endpoint: a text file is heard as its text) and answered from the
 * transcript, the audio still in the instance's inbox. A failed or slow
 * transcription still passes the audio on, with one line saying why.
 */
import { afterEach, expect, it } from "vitest";
import { createDaemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";

const TOKEN = "987654321:ZZZyyyXXXwwwVVVuuuTTTsssRRRqqqPPPoo";
const alice = { id: 5001, username: "alice" };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function bridge(transcription: Record<string, unknown> = {}) {
  const service = await startServiceFixture(cleanups, "voice-notes-");
  const fake = await createFakeTelegram({ token: TOKEN });
  cleanups.push(() => fake.close());
  const gateway = service.emulator.emulator.gateway.url;
  const config = {
    ...service.configFor({
      type: "telegram",
      id: "tg",
      token: TOKEN,
      apiRoot: fake.url,
      streaming: "off",
      setCommands: false,
      access: { users: [String(alice.id)] },
    }),
    transcription: {
      kind: "openai",
      url: `${gateway}/v1`,
      model: "whisper-1",
      maxBytes: 1000,
      maxSeconds: 120,
      maxChars: 8000,
      timeoutMs: 30_000,
      ...transcription,
    },
  } as never;
  const clock = createSteppableClock();
  const daemon = createDaemon({ config, clock, random: seededRandom(5) });
  cleanups.push(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const replies = () => fake.sentMessages(alice.id).map((m) => m.text);
  return { fake, clock, daemon, replies };
}

it("answers a voice note from its transcript, marked as one, with the audio in the inbox", async () => {
  const { fake, replies, daemon } = await bridge();
  fake.voice(alice, Buffer.from("remind me to water the plants"), 3);
  const [reply] = await waitUntil(() => replies().length === 1 && replies(), "the answer");
  expect(reply).toContain(`Transcript of the person's voice note "voice-`);
  expect(reply).toContain("remind me to water the plants");
  expect(reply).toMatch(/inbox\/telegram\/5001\/\d+-voice-\d+\.ogg/);
  const metrics = await daemon.metrics.text();
  expect(metrics).toMatch(/agent_bridge_transcriptions_total\{platform="telegram",outcome="ok"\} 1/);
});

it("passes the audio on alone, with one line saying why, when the endpoint fails", async () => {
  const { fake, replies } = await bridge();
  fake.voice(alice, Buffer.from("!fail 503"), 3);
  const [reply] = await waitUntil(() => replies().length === 1 && replies(), "the answer");
  const [first, ...rest] = reply!.split("\n\n");
  expect(first).toMatch(
    /^\(Your voice note "voice-\d+\.ogg" could not be transcribed \(the transcription service failed\), so the agent got the audio only\.\)$/,
  );
  expect(rest.join("\n\n")).not.toContain("Transcript of");
  expect(rest.join("\n\n")).toMatch(/inbox\/telegram\/5001\/\d+-voice-\d+\.ogg/);
});

it("gives up on a slow transcription after timeoutMs and passes the audio on", async () => {
  const { fake, replies, clock } = await bridge();
  fake.voice(alice, Buffer.from("!sleep 3600000\nnever heard"), 3);
  await waitUntil(() => clock.delays().includes(30_000), "the transcription's timeout to be set");
  clock.advance(30_000);
  const [reply] = await waitUntil(() => replies().length === 1 && replies(), "the answer");
  expect(reply).toMatch(/could not be transcribed \(it took longer than 30 seconds\)/);
  expect(reply).not.toContain("never heard");
});

it("does not send a note over the limits to the endpoint, and says which limit", async () => {
  const { fake, replies } = await bridge();
  fake.voice(alice, Buffer.from("a long ramble"), 121);
  fake.voice(alice, Buffer.alloc(1001, "a"), 3);
  const said = await waitUntil(() => replies().length === 2 && replies(), "both answers");
  expect(said[0]).toMatch(/could not be transcribed \(it is longer than the limit of 2 minutes\)/);
  expect(said[1]).toMatch(/could not be transcribed \(it is larger than the limit of 1000 bytes\)/);
});
