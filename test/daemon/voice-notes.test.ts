/**
 * Voice notes end to end on each platform's fake (Telegram, Discord, WhatsApp, Slack): the note is downloaded, journaled,
 * transcribed by the emulator's fake gateway (its documented speech-to-text
 * endpoint: a text file is heard as its text) and answered from the
 * transcript, the audio still in the instance's inbox. A failed or slow
 * transcription still passes the audio on, with one line saying why.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { expect, it, onTestFinished } from "vitest";
import { createWhatsAppAdapter } from "../../daemon/adapters/whatsapp/index.js";
import { transcriptionSchema } from "../../daemon/vocabulary/config-fields.js";
import type { DaemonConfig } from "../../daemon/config/schema.js";
import { createDaemon } from "../../daemon/daemon.js";
import { systemClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeBaileys, createFakeMedia, pnJid, voiceNoteFrom } from "../fakes/baileys-socket.js";
import { createFakeDiscord } from "../fakes/discord.js";
import { createFakeSlack } from "../fakes/slack.js";
import { createFakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };

/** The config with transcription by the emulator's fake gateway (its speech-to-text endpoint). */
const transcribedBy = (gateway: string, config: DaemonConfig, over: Record<string, unknown> = {}): DaemonConfig => ({
  ...config,
  transcription: transcriptionSchema.parse({ kind: "openai", url: `${gateway}/v1`, maxBytes: 1000, maxSeconds: 120, timeoutMs: 30_000, ...over }),
});

async function bridge(transcription: Record<string, unknown> = {}) {
  const service = await startServiceFixture("voice-notes-");
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  const gateway = service.emulator.emulator.gateway.url;
  const config = transcribedBy(
    gateway,
    service.configFor({
      type: "telegram",
      id: "tg",
      token: TELEGRAM_BOT_TOKEN,
      apiRoot: fake.url,
      streaming: "off",
      setCommands: false,
      access: { users: [String(alice.id)] },
    }),
    transcription,
  );
  const clock = createSteppableClock();
  const daemon = createDaemon({ config, clock, random: seededRandom(5) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
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

it("answers a Discord voice message from its transcript", async () => {
  const service = await startServiceFixture("voice-discord-");
  const TOKEN_DC = "MTA0NjY5.voice-bot.token-value-that-must-stay-secret";
  const bob = { id: "300000000000000002", username: "bob" };
  const fake = await createFakeDiscord({ token: TOKEN_DC, guilds: [] });
  onTestFinished(() => fake.close());
  const config = transcribedBy(
    service.emulator.emulator.gateway.url,
    service.configFor({ type: "discord", id: "dc", token: TOKEN_DC, api: fake.apiBase, streaming: "off", access: { users: [bob.id] } }),
  );
  const daemon = createDaemon({ config, random: seededRandom(7) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  fake.dispatchDirectMessage(bob, "", {
    attachments: [{ filename: "voice-message.ogg", contentType: "audio/ogg", data: Buffer.from("ship the release on friday"), durationSecs: 2.5 }],
  });
  const dm = fake.dmChannelFor(bob);
  const [reply] = await waitUntil(() => fake.sentMessages(dm).length === 1 && fake.sentMessages(dm).map((m) => m.content), "the answer");
  expect(reply).toContain(`Transcript of the person's voice note "voice-message.ogg"`);
  expect(reply).toContain("ship the release on friday");
  expect(reply).toMatch(/inbox\/discord\/\d+\/\d+-voice-message\.ogg/);
});

it("answers a WhatsApp voice note from its transcript", async () => {
  const ANA = "4915111111111";
  const service = await startServiceFixture("voice-wa-");
  const config = transcribedBy(
    service.emulator.emulator.gateway.url,
    service.configFor({ type: "whatsapp", id: "wa", ackReaction: { scope: "off" }, access: { users: [`+${ANA}`] } }),
  );
  const channel = config.channels[0];
  if (channel?.type !== "whatsapp") throw new Error("expected a whatsapp channel");
  const logger = pino({ level: "silent" });
  const fake = createFakeBaileys();
  const media = createFakeMedia(1024);
  const adapter = createWhatsAppAdapter(
    channel,
    {
      logger,
      state: { get: () => undefined, set: async () => undefined },
      dataDir: service.dataDir,
      clock: systemClock,
      maxAttachmentBytes: config.attachments.maxBytes,
    },
    { socketFactory: fake.factory, qrOutput: new Writable({ write: (_c, _e, cb) => cb() }), random: seededRandom(3), mediaDownloader: media.downloader },
  );
  const daemon = createDaemon({ config, adapters: [adapter], logger, random: seededRandom(4) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  const started = daemon.start();
  await waitUntil(() => fake.sockets.length === 1, "the socket");
  const socket = fake.latest();
  socket.open();
  await started;
  const note = Buffer.from("buy oat milk on the way home");
  socket.receive([media.put(voiceNoteFrom(ANA, note, 3), note)]);
  const reply = await waitUntil(() => socket.sent.find((s) => s.jid === pnJid(ANA))?.content.text, "the answer");
  expect(reply).toContain(`Transcript of the person's voice note "audio-`);
  expect(reply).toContain("buy oat milk on the way home");
  expect(reply).toMatch(/inbox\/whatsapp\/[^/]+\/\d+-audio-[^ ]+\.ogg/);
});

it("answers a Slack audio clip from its transcript, and holds its length (duration_ms) to maxSeconds", async () => {
  const service = await startServiceFixture("voice-slack-");
  const BOT = "xoxb-5555-6666-voiceBotTokenSecret";
  const APP = "xapp-1-A0VOICE001-7777-voiceAppToken";
  const carol = "U0CAROL001";
  const DM = "D0CAROL001";
  const fake = await createFakeSlack({ botToken: BOT, appToken: APP, signingSecret: "voiceSigningSecret0123456789abcd", mode: "socket", postBurst: 50 });
  onTestFinished(() => fake.close());
  const config = transcribedBy(
    service.emulator.emulator.gateway.url,
    service.configFor({
      type: "slack",
      id: "sl",
      botToken: BOT,
      appToken: APP,
      mode: "socket",
      api: fake.apiBase,
      streaming: "off",
      ackReaction: { scope: "off" },
      access: { users: [carol] },
    }),
  );
  const daemon = createDaemon({ config, random: seededRandom(7) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  // A clip recorded in Slack comes in a container whose mimetype need not say audio: Slack marks it slack_audio.
  fake.say({
    user: carol,
    channel: DM,
    text: "",
    files: [{ name: "audio_message.mp4", mimetype: "video/mp4", data: Buffer.from("ship the release on friday"), clipMs: 2500 }],
  });
  const [reply] = await waitUntil(() => fake.messages(DM).length === 1 && fake.messages(DM).map((m) => m.text), "the answer");
  expect(reply).toContain(`Transcript of the person's voice note "audio_message.mp4"`);
  expect(reply).toContain("ship the release on friday");
  fake.say({
    user: carol,
    channel: DM,
    text: "",
    files: [{ name: "ramble.webm", mimetype: "audio/webm", data: Buffer.from("a long ramble"), clipMs: 121_000 }],
  });
  const said = await waitUntil(() => fake.messages(DM).length === 2 && fake.messages(DM).map((m) => m.text), "the second answer");
  expect(said[1]).toMatch(/could not be transcribed \(it is longer than the limit of 2 minutes\)/);
});
