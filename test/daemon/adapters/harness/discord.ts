/** Discord for the shared suite: discord.js's real client against the fake REST API and gateway. */
import pino from "pino";
import { discordChannelSchema } from "../../../../daemon/adapters/discord/config.js";
import { createDiscordAdapter } from "../../../../daemon/adapters/discord/index.js";
import { discordPlatform } from "../../../../daemon/adapters/discord/platform.js";
import { systemClock } from "../../../../shared/clock.js";
import { seededRandom } from "../../../../shared/random.js";
import { createFakeDiscord, type FakeUser } from "../../../fakes/discord.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

const TOKEN = "MTA0NjY5.contract-bot.token-value-that-must-stay-secret";
const GUILD = "800000000000000001";
const GENERAL = "800000000000000002";
const THREAD = "800000000000000004";
const alice: FakeUser = { id: "700000000000000001", username: "alice" };

export const features: readonly Feature[] = ["group", "thread", "edits", "files", "reactions", "buttons"];

export const harness: HarnessFactory = async () => {
  const fake = await createFakeDiscord({
    token: TOKEN,
    guilds: [{ id: GUILD, name: "Guild", channels: [{ id: GENERAL, name: "general" }], threads: [{ id: THREAD, name: "a thread", parentId: GENERAL }] }],
  });
  const channel = { ...discordChannelSchema.parse({ type: "discord", token: TOKEN, api: fake.apiBase, access: { mode: "open" } }), id: "dc" };
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = createDiscordAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { identifyThrottler: { waitForIdentify: async () => undefined }, random: seededRandom("contract"), backoffInitialMs: 20 },
  );
  return {
    adapter,
    secrets: discordPlatform.secrets(channel) ?? [],
    logs: logs.text,
    direct: (text) => void fake.dispatchDirectMessage(alice, text),
    group: (text) =>
      void fake.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author: alice, content: `<@${fake.bot.id}> ${text}`, mentions: [fake.bot] }),
    // A thread is a channel of its own under the group's channel.
    thread: {
      say: (text) =>
        void fake.dispatchMessage({ channelId: THREAD, guildId: GUILD, author: alice, content: `<@${fake.bot.id}> ${text}`, mentions: [fake.bot] }),
      shown: () => fake.shownMessages(THREAD).map((m) => m.content),
    },
    shown: (chatId) => fake.shownMessages(chatId).map((m) => m.content),
    files: (chatId) => fake.sentMessages(chatId).flatMap((m) => (m.files ?? []).map((f) => f.name)),
    reactions: (_chatId, messageId) => fake.reactionsOn(messageId),
    buttons: (_chatId, messageId) => fake.buttonsOn(messageId),
    tap: (_chatId, messageId, index) => void fake.tapButton({ messageId, user: alice, index }),
    close: () => fake.close(),
  };
};
