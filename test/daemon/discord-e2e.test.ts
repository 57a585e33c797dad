/**
 * The whole chain for Discord: a message from the fake gateway goes through
 * the adapter the daemon builds from its config (real discord.js), the access
 * rules, journal, queue and relay to the emulator over real HTTP, and the
 * fake model's answer comes back through Discord's REST API (the fake's) to
 * the channel it came from.
 */
import { expect, it, onTestFinished } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { longText } from "../../emulator/gateway/index.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeDiscord, waitFor, type FakeDiscord, type FakeUser } from "../fakes/discord.js";
import { startServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { exerciseQueueModes } from "../helpers/queue-modes.js";
import { testHandle } from "../../daemon/test-handle.js";

const TOKEN = "MTA0NjY5.e2e-bot.token-value-that-must-stay-secret";
const GUILD = "800000000000000001";
const GENERAL = "800000000000000002";
const alice: FakeUser = { id: "700000000000000001", username: "alice" };
const stranger: FakeUser = { id: "700000000000000066", username: "stranger" };

async function bridge(
  groups: Record<string, object> = { [GENERAL]: {} },
): Promise<{ fake: FakeDiscord; daemon: Daemon; restart(): Promise<Daemon>; service: ServiceFixture }> {
  const service = await startServiceFixture("discord-e2e-");
  const fake = await createFakeDiscord({
    token: TOKEN,
    guilds: [{ id: GUILD, name: "Test Guild", channels: [{ id: GENERAL, name: "general" }] }],
  });
  onTestFinished(() => fake.close());

  // These tests are about the answer itself: group context (its own tests: discord-group.test.ts) stays out of the echo.
  const config = service.configFor({
    type: "discord",
    id: "dc",
    token: TOKEN,
    api: fake.apiBase,
    streaming: "off",
    groupContext: { enabled: false },
    access: { users: [alice.id], groups },
  });
  const daemon = createDaemon({ config, random: seededRandom(7) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const restart = async () => {
    const next = createDaemon({ config, random: seededRandom(8) });
    onTestFinished(() => next.stop({ graceMs: 0 }));
    await next.start();
    return next;
  };
  return { fake, daemon, restart, service };
}

const contents = (fake: FakeDiscord, channelId: string) => fake.sentMessages(channelId).map((m) => m.content);

it("answers a DM and a guild mention in the chat they came from, and nobody else", async () => {
  const { fake, daemon } = await bridge();
  expect(daemon.health().adapters).toEqual({ "discord:dc": "connected" });
  const dm = fake.dmChannelFor(alice);

  fake.dispatchDirectMessage(stranger, "let me in");
  fake.dispatchDirectMessage(alice, "hello agent");
  fake.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author: alice, content: "not for the bot" });
  const asked = fake.dispatchMessage({
    channelId: GENERAL,
    guildId: GUILD,
    author: alice,
    content: `<@${fake.bot.id}> in the guild`,
    mentions: [fake.bot],
  });

  await waitFor(() => contents(fake, dm).length === 1 && contents(fake, GENERAL).length === 1, "both replies");
  await daemon.whenIdle();
  expect(contents(fake, dm)).toEqual(["You said: hello agent"]);
  expect(contents(fake, GENERAL)).toEqual(["You said: in the guild"]);
  // The guild reply threads onto the question; the stranger got nothing.
  expect(fake.sentMessages(GENERAL)[0]?.replyTo).toBe(asked.id);
  expect(fake.sentMessages(fake.dmChannelFor(stranger))).toEqual([]);
});

it("delivers a 5,000-character answer as three messages in order", async () => {
  const { fake, daemon } = await bridge();
  const dm = fake.dmChannelFor(alice);
  fake.dispatchDirectMessage(alice, "!long 5000");
  await waitFor(() => contents(fake, dm).length >= 3, "three chunks");
  await daemon.whenIdle();
  const chunks = contents(fake, dm);
  expect(chunks).toHaveLength(3);
  for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(2000);
  // Chunking may close and reopen a code fence at a cut; apart from those markers
  // the words arrive exactly as the model wrote them, in order.
  const words = (text: string) => text.split(/\s+/).filter((w) => w && !w.startsWith("```"));
  expect(words(chunks.join("\n"))).toEqual(words(longText(5000)));
});

it("keeps answering after the gateway connection drops", async () => {
  const { fake, daemon } = await bridge();
  const dm = fake.dmChannelFor(alice);
  fake.dispatchDirectMessage(alice, "before the drop");
  await waitFor(() => contents(fake, dm).length === 1, "first reply");

  fake.dropConnection();
  await waitFor(() => fake.stats.resumes === 1 && fake.isLive(), "resume");
  fake.dispatchDirectMessage(alice, "after the drop");
  await waitFor(() => contents(fake, dm).length === 2, "second reply");
  await daemon.whenIdle();
  expect(contents(fake, dm)).toEqual(["You said: before the drop", "You said: after the drop"]);
  expect(daemon.health().adapters).toEqual({ "discord:dc": "connected" });
});

it("applies group settings keyed by the guild to its channels", async () => {
  const { fake } = await bridge({ [GUILD]: { users: [alice.id] } });
  fake.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author: alice, content: `<@${fake.bot.id}> via the guild entry`, mentions: [fake.bot] });
  await waitFor(() => contents(fake, GENERAL).length === 1);
  expect(contents(fake, GENERAL)).toEqual(["You said: via the guild entry"]);
});

it("journals a message received while the daemon stops (Discord never delivers it again) and answers it after the restart", async () => {
  const { fake, daemon, restart } = await bridge();
  const release = fake.holdAttachments();
  fake.dispatchDirectMessage(alice, "read this file", { attachments: [{ filename: "notes.txt", contentType: "text/plain", data: Buffer.from("hello") }] });
  // The adapter has the message in hand (downloading its file) when the daemon is told to stop.
  await waitFor(() => fake.attachmentRequests === 1 || undefined, "the attachment download");
  const stopping = daemon.stop({ graceMs: 0 });
  release();
  await stopping;
  const next = await restart();
  const dm = fake.dmChannelFor(alice);
  await waitFor(() => fake.sentMessages(dm).length >= 1 || undefined, "the answer after the restart");
  expect(contents(fake, dm)).toEqual([expect.stringMatching(/^You said: read this file\n\nAttached files \(in the workspace\):\n- inbox\/discord\//)]);
  await next.whenIdle();
});

it("queue modes: /queue collect answers what came meanwhile as one turn; /queue interrupt stops the answer for the newer message", async () => {
  const { fake, daemon, service } = await bridge();
  await exerciseQueueModes({
    service,
    send: (text) => void fake.dispatchDirectMessage(alice, text),
    replies: () => contents(fake, fake.dmChannelFor(alice)),
    queued: () => testHandle(daemon).scheduler?.depth().totalWaiting ?? 0,
  });
});
